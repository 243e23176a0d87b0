# shellcheck shell=sh
# e1000_rs, talking to the C e1000 of VM c-e1000 over a socket link.
insmod /modules/e1000_rs.ko
ip link set eth0 up && ip addr add 169.254.0.1/16 dev eth0
check link-up-e1000_rs wait_for 30 grep -qx 1 /sys/class/net/eth0/carrier
check ping-peer wait_for 60 ping -c 3 -W 2 169.254.0.2
dd if=/dev/urandom of=/tmp/data bs=1M count=16 2>/dev/null
diag "sent 16 MiB, sha256 $(sha256sum </tmp/data | cut -c1-16)..."
check tcp-16MiB-to-peer sh -c 'netpipe send 169.254.0.2 7001 </tmp/data'
diag "received, sha256 $(timeout 120 netpipe recv 7002 2>/dev/null | sha256sum | cut -c1-16)..."
ethtool -i eth0 | while IFS= read -r l; do diag "ethtool -i eth0: $l"; done
ethtool -S eth0 | head -n 9 | while IFS= read -r l; do diag "ethtool -S eth0: $l"; done
s=/sys/class/net/eth0/statistics
diag "e1000_rs counters: rx_packets $(cat $s/rx_packets) tx_packets $(cat $s/tx_packets) rx_errors $(cat $s/rx_errors)"
dmesg | grep 'e1000_rs' | while IFS= read -r l; do diag "kernel: $l"; done
check unload-e1000_rs rmmod e1000_rs
