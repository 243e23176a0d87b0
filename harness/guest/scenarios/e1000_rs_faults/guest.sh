# shellcheck shell=sh
# shellcheck disable=SC2046 # one argument per function
set -- $(pci_functions 0x8086:0x100e)
rs_pci=$1 c_pci=$2
echo e1000_rs >/sys/bus/pci/devices/$rs_pci/driver_override
echo e1000 >/sys/bus/pci/devices/$c_pci/driver_override
check load-c-e1000 insmod /modules/e1000.ko
check load insmod /modules/e1000_rs.ko
check interface wait_for 10 iface_of $rs_pci
check unbind sh -c "echo $rs_pci >/sys/bus/pci/drivers/e1000_rs/unbind"

# After each probe: bound with an interface, or unbound with none; released.
probe_sweep probe-fails-cleanly-at-each-allocation $FAULT_STEP e1000_rs $rs_pci iface_of

check bind sh -c "echo $rs_pci >/sys/bus/pci/drivers/e1000_rs/bind"
rs_if=$(iface_of $rs_pci)
up_flags=$(printf '0x%x' $(( $(cat /sys/class/net/$rs_if/flags) | 1 )))
# Through sysfs, so that the open runs in this shell's task (ip would be a process of its own).
open_rs() { echo $up_flags >/sys/class/net/$rs_if/flags; }
# After an open: up (then closed again) or down, as it said.
open_left() {
    up=$(( $(cat /sys/class/net/$rs_if/flags) & 1 ))
    if [ $1 = 0 ]; then [ $up = 1 ] && ip link set $rs_if down; else [ $up = 0 ]; fi
}
# Every allocation in turn, whatever FAULT_STEP says: the few whose failure fails the open (the
# rings' coherent memory, a receive buffer's page once the larger page it tried first failed) lie
# among hundreds, where a sample every FAULT_STEP-th can miss them all. The smallest rings keep the
# hundreds few: each receive descriptor's buffer is one more allocation from the same site.
check smallest-rings ethtool -G $rs_if rx 48 tx 48
fault_sweep open-fails-cleanly-at-each-allocation 1 open_rs open_left \
    "e1000_rs $rs_pci: cannot allocate the rings"
check default-rings ethtool -G $rs_if rx 256 tx 256

# Nothing lost: frames cross the hub both ways. Without IPv6 neither interface sends anything of
# its own, so the receive counters below count only the test's frames.
c_if=$(iface_of $c_pci)
for i in $rs_if $c_if; do echo 1 >/proc/sys/net/ipv6/conf/$i/disable_ipv6; done
check open ip link set $rs_if up
check c-open ip link set $c_if up
check carrier wait_for 30 grep -qx 1 /sys/class/net/$rs_if/carrier
check c-carrier wait_for 30 grep -qx 1 /sys/class/net/$c_if/carrier
# stat_at_least IFACE NAME N: IFACE's counter NAME has reached N.
stat_at_least() { [ "$(net_stat "$1" "$2")" -ge "$3" ]; }
rs_rx=$(net_stat $rs_if rx_packets) c_rx=$(net_stat $c_if rx_packets)
check frames-to-rs rawframes $c_if "$(cat /sys/class/net/$rs_if/address)" 0x88b5 1514 20
check frames-from-rs rawframes $rs_if "$(cat /sys/class/net/$c_if/address)" 0x88b5 1514 20
check rs-received wait_for 10 stat_at_least $rs_if rx_packets $((rs_rx + 20))
check c-received wait_for 10 stat_at_least $c_if rx_packets $((c_rx + 20))

# A frame the driver's own poll sends asks for no completion interrupt: the next poll frees it,
# and with nothing received after it, the driver's reap timer (10 ms) schedules that poll. The
# transmit counters count a frame once it is freed. A UDP datagram to a port without a listener
# draws an ICMP port unreachable, which the stack sends while the poll delivers the datagram; the
# C NIC's side has no address, so nothing answers it. (busybox's ip cannot add a neighbour.)
check rs-address ip addr add 10.9.0.1/24 dev $rs_if
check rs-neighbour arp -i $rs_if -s 10.9.0.2 "$(cat /sys/class/net/$c_if/address)"
rs_tx=$(net_stat $rs_if tx_packets) rs_rx=$(net_stat $rs_if rx_packets)
sleep 0.1
check nothing-left-to-free test "$(net_stat "$rs_if" tx_packets)" -eq $rs_tx
check udp-to-closed-port rawframes $c_if "$(cat /sys/class/net/$rs_if/address)" udp 10.9.0.2 10.9.0.1 1
check reply-freed-without-traffic wait_for 1 stat_at_least $rs_if tx_packets $((rs_tx + 1))
check nothing-else-received test "$(net_stat "$rs_if" rx_packets)" -eq $((rs_rx + 1))
ip addr flush dev $rs_if && ip neigh flush dev $rs_if

# Memory for receive buffers running out: every page allocation that cannot sleep fails (the
# driver's receive buffers in its NAPI poll; the sender's can sleep and go on; slab objects still
# come from existing slabs, where DMA-API debugging finds its own). Each frame is then delivered or
# dropped and counted, keeping its buffer on the ring, so that afterwards every frame arrives. IPv4
# frames with a bad header (1514 bytes) and UDP datagrams with a bad checksum (106 bytes: copied
# out in either configuration) are dropped by IP and UDP, which do not count them as the
# interface's drops.
rs_stat() { net_stat $rs_if $1; }
counted() { echo $(( $(rs_stat rx_packets) + $(rs_stat rx_dropped) )); }
counted_at_least() { [ "$(counted)" -ge "$1" ]; }
fail_atomic_page_allocations() {
    attr=/sys/kernel/debug/fail_page_alloc
    echo Y >$attr/ignore-gfp-wait && echo 0 >$attr/verbose && echo -1 >$attr/times &&
        echo $1 >$attr/probability
}
# burst RAWFRAMES_ARGS...: 100 frames from the C NIC to e1000_rs, then waits until e1000_rs has
# counted 100 more. Bursts stay below the ring's size, so that the device never runs out of
# descriptors: a frame it missed would show only in rx_missed_errors, which QEMU's model does not
# clear on read.
burst() {
    burst_before=$(counted)
    rawframes $c_if "$(cat /sys/class/net/$rs_if/address)" "$@" 100 &&
        wait_for 10 counted_at_least $((burst_before + 100))
}
# send_frames: 400 frames in four bursts, more than the ring holds
send_frames() {
    burst 0x0800 1514 && burst 0x0800 1514 && burst 0x0800 1514 &&
        burst udp-bad-checksum 10.9.0.2 10.9.0.1
}
# memory_runs_out NAME: the checks, named after the driver's configuration.
memory_runs_out() {
    rx0=$(rs_stat rx_packets) dropped0=$(rs_stat rx_dropped)
    check $1-atomic-page-allocations-failing fail_atomic_page_allocations 100
    check $1-frames-counted-while-failing send_frames
    fail_atomic_page_allocations 0
    diag "$1 while failing: delivered $(( $(rs_stat rx_packets) - rx0 )), dropped $(( $(rs_stat rx_dropped) - dropped0 ))"
    check $1-some-dropped test "$(rs_stat rx_dropped)" -gt $dropped0
    check $1-none-lost test "$(counted)" -eq $((rx0 + dropped0 + 400))
    rx0=$(rs_stat rx_packets) dropped0=$(rs_stat rx_dropped)
    check $1-frames-after send_frames
    check $1-all-delivered-after test "$(rs_stat rx_packets)" -eq $((rx0 + 400))
    check $1-none-dropped-after test "$(rs_stat rx_dropped)" -eq $dropped0
}
memory_runs_out mapped
# The same with frames copied out of coherent buffers (a fresh skb for every frame).
check reload-copying sh -c 'rmmod e1000_rs && insmod /modules/e1000_rs.ko rx_copy=1'
check copying-interface wait_for 10 iface_of $rs_pci
rs_if=$(iface_of $rs_pci)
echo 1 >/proc/sys/net/ipv6/conf/$rs_if/disable_ipv6
check copying-open ip link set $rs_if up
check copying-carrier wait_for 30 grep -qx 1 /sys/class/net/$rs_if/carrier
memory_runs_out copying

check unload rmmod e1000_rs
check released-at-unload pci_released $rs_pci
