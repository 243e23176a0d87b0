# shellcheck shell=sh
# The C e1000, the other end of each turn of e1000_rs and of the C e1000 on VM e1000_rs's NIC.
insmod /modules/e1000.ko
ip link set eth0 up && ip addr add 169.254.0.2/16 dev eth0
dd if=/dev/urandom of=/tmp/data bs=1M count=16 2>/dev/null
diag "16 MiB of random data to send back, sha256 $(sha256sum </tmp/data | cut -c1-16)..."
for turn in 1 2 3 4; do
    port=$((7000 + 2 * turn - 1))
    diag "peer received 16 MiB, sha256 $(timeout 120 netpipe recv $port 2>/dev/null | sha256sum | cut -c1-16)..."
    check "tcp-16MiB-back-$turn" sh -c "netpipe send 169.254.0.1 $((port + 1)) </tmp/data"
done
