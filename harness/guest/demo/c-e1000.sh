# shellcheck shell=sh
# The C e1000, the other end of e1000_rs.
insmod /modules/e1000.ko
ip link set eth0 up && ip addr add 169.254.0.2/16 dev eth0
check ping-e1000_rs wait_for 60 ping -c 3 -W 2 169.254.0.1
diag "peer received, sha256 $(timeout 120 netpipe recv 7001 2>/dev/null | sha256sum | cut -c1-16)..."
dd if=/dev/urandom of=/tmp/data bs=1M count=16 2>/dev/null
diag "peer sent 16 MiB, sha256 $(sha256sum </tmp/data | cut -c1-16)..."
check tcp-16MiB-to-e1000_rs sh -c 'netpipe send 169.254.0.1 7002 </tmp/data'
