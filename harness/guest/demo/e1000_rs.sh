# shellcheck shell=sh
# e1000_rs, talking to the C e1000 of VM c-e1000 over a socket link, taking turns with the C e1000
# on the same NIC (e1000_rs, C, C, e1000_rs), so that both drivers' throughput comes from the same
# boot and neither has only the first or only the last turn.
dd if=/dev/urandom of=/tmp/data bs=1M count=16 2>/dev/null
diag "16 MiB of random data to send, sha256 $(sha256sum </tmp/data | cut -c1-16)..."
# rate REPORT: netpipe's "bytes=N seconds=S" in MB/s.
rate() { echo "$1" | awk -F'[= ]' '$4 > 0 { printf "%.1f MB/s", $2 / $4 / 1e6 }'; }
# use MODULE: MODULE (e1000_rs or e1000) drives the NIC, its interface up with our address.
use() {
    for loaded in e1000_rs e1000; do
        [ -d "/sys/module/$loaded" ] && [ "$loaded" != "$1" ] && rmmod "$loaded"
    done
    [ -d "/sys/module/$1" ] || insmod "/modules/$1.ko" || return 1
    wait_for 10 iface_of "$nic" >/dev/null || return 1
    dev=$(iface_of "$nic") && ip link set "$dev" up && ip addr add 169.254.0.1/16 dev "$dev" &&
        wait_for 30 grep -qx 1 "/sys/class/net/$dev/carrier" && wait_for 60 ping -c 3 -W 2 169.254.0.2
}
# turn N LABEL: 16 MiB sent to the peer on port 7000 + 2N - 1 and 16 MiB received back on the
# next port, each timed by netpipe from its first byte to its last.
turn() {
    port=$((7000 + 2 * $1 - 1))
    check "tcp-16MiB-to-peer-$1" sh -c "netpipe send 169.254.0.2 $port </tmp/data 2>/tmp/tx"
    back=$(timeout 120 netpipe recv $((port + 1)) 2>/tmp/rx | sha256sum | cut -c1-16)
    diag "$2: sent at $(rate "$(cat /tmp/tx)"), received (sha256 $back...) at $(rate "$(cat /tmp/rx)")"
}
nic=$(pci_functions 0x8086:0x100e)
diag "throughput, one 16 MiB transfer each way per turn (scripts/bench-e1000.sh measures it properly):"
check use-e1000_rs use e1000_rs
turn 1 e1000_rs
dev=$(iface_of "$nic")
ethtool -i "$dev" | while IFS= read -r l; do diag "ethtool -i $dev: $l"; done
ethtool -S "$dev" | head -n 9 | while IFS= read -r l; do diag "ethtool -S $dev: $l"; done
s=/sys/class/net/$dev/statistics
diag "e1000_rs counters: rx_packets $(cat "$s/rx_packets") tx_packets $(cat "$s/tx_packets") rx_errors $(cat "$s/rx_errors")"
dmesg | grep 'e1000_rs' | while IFS= read -r l; do diag "kernel: $l"; done
check use-c-e1000 use e1000
turn 2 "C e1000"
turn 3 "C e1000"
check use-e1000_rs-again use e1000_rs
turn 4 e1000_rs
check unload-e1000_rs rmmod e1000_rs
