# shellcheck shell=sh
# e1000_rs when its device stops answering, under traffic both ways, and the C e1000 on the other
# NIC of the hub through the same where it can: (a) Memory Space and Bus Master Enable cleared
# for seven seconds, (b) the driver's fail_mmio_read fault (every register read all ones). Nothing
# may panic or warn; after a rebind frames cross again.
# shellcheck disable=SC2046 # one argument per function
set -- $(pci_functions 0x8086:0x100e)
rs_pci=$1 c_pci=$2
echo e1000_rs >/sys/bus/pci/devices/$rs_pci/driver_override
echo e1000 >/sys/bus/pci/devices/$c_pci/driver_override
check load-c-e1000 insmod /modules/e1000.ko
check load insmod /modules/e1000_rs.ko
check rs-interface wait_for 10 iface_of $rs_pci
check c-interface wait_for 10 iface_of $c_pci

# bring_up PCI: the interface of the function at PCI up, without IPv6 (which would send frames of
# its own), with its carrier.
bring_up() {
    bring_up_if=$(iface_of "$1") &&
        echo 1 >/proc/sys/net/ipv6/conf/$bring_up_if/disable_ipv6 &&
        ip link set "$bring_up_if" up &&
        wait_for 30 grep -qx 1 /sys/class/net/$bring_up_if/carrier
}
# interfaces: rs_if, c_if and their addresses, after a bind.
interfaces() {
    rs_if=$(iface_of $rs_pci) c_if=$(iface_of $c_pci)
    rs_mac=$(cat /sys/class/net/$rs_if/address) c_mac=$(cat /sys/class/net/$c_if/address)
}
check rs-up bring_up $rs_pci
check c-up bring_up $c_pci
interfaces
diag "interrupts=$(grep -E 'e1000|eth[0-9]' /proc/interrupts | tr -s ' ' | tr '\n' '|')"

# stat_at_least IFACE NAME N: IFACE's counter NAME has reached N.
stat_at_least() { [ "$(net_stat "$1" "$2")" -ge "$3" ]; }
# frames_cross NAME: 20 frames from the C NIC to e1000_rs's and 20 back arrive, as each receiver
# counts them.
frames_cross() {
    rs_rx=$(net_stat $rs_if rx_packets) c_rx=$(net_stat $c_if rx_packets)
    check $1-frames-to-rs rawframes $c_if $rs_mac 0x88b5 1514 20
    check $1-frames-from-rs rawframes $rs_if $c_mac 0x88b5 1514 20
    check $1-rs-received wait_for 10 stat_at_least $rs_if rx_packets $((rs_rx + 20))
    check $1-c-received wait_for 10 stat_at_least $c_if rx_packets $((c_rx + 20))
}
frames_cross before

# Traffic both ways in the background: bursts of 50 frames each way, at most 400 rounds and each
# burst at most 5 s (a sender blocks while a stuck ring holds its socket's memory), until
# traffic_stop.
traffic_start() {
    rm -f /tmp/traffic-stop
    (
        round=0
        while [ $round -lt 400 ] && [ ! -e /tmp/traffic-stop ]; do
            timeout 5 rawframes $rs_if $c_mac 0x88b5 1514 50 >/dev/null 2>&1
            timeout 5 rawframes $c_if $rs_mac 0x88b5 1514 50 >/dev/null 2>&1
            round=$((round + 1))
        done
    ) &
    traffic_pid=$!
}
traffic_stop() { touch /tmp/traffic-stop && wait $traffic_pid; }
# received: what each interface has counted so far ("e1000_rs C"), to show traffic flowing.
received() { echo "$(net_stat $rs_if rx_packets) $(net_stat $c_if rx_packets)"; }
# received_since NAME BEFORE: a diagnostic of the frames counted since BEFORE (from received).
received_since() {
    set -- "$1" $2 $(received)
    diag "$1: e1000_rs received $(($4 - $2)), the C e1000 $(($5 - $3))"
}

# rebind PCI DRIVER: unbinds the function at PCI from DRIVER and binds it again, its interface up.
rebind() {
    echo "$1" >/sys/bus/pci/drivers/$2/unbind && echo "$1" >/sys/bus/pci/drivers/$2/bind &&
        wait_for 10 iface_of "$1" && bring_up "$1"
}

# log_count PATTERN: how many kernel log lines match PATTERN.
log_count() { dmesg | grep -cE "$1"; }

# (a) The PCI Command register (config offset 4) with Memory Space Enable (bit 1) and Bus Master
# Enable (bit 2) cleared for seven seconds, through the function's sysfs config file, then restored.
# QEMU reads 0 from the BAR meanwhile, drops the driver's register writes and does no DMA (so
# receives nothing). An interrupt the device raised stays asserted: every handler on the line
# then finds ICR 0 and disowns it, and the IRQ core disables the line ("irq N: nobody cared", a
# report without a WARNING, which the harness does not count as a failure: it is the device
# model's, whichever driver runs). Rebinding requests the line again, which enables it; the
# rings, whose tail writes were lost, start afresh.
# Seven seconds, past both drivers' 5 s transmit watchdog (the queue stops soon after the tail
# writes are lost), whose reset then meets a device that drops every register write: it never
# resets, and holds the rings' addresses until the command register is restored. e1000_rs, which
# rebuilds its rings in a reset, refuses to reset while EECD does not read back (freeing the
# rings there let the device write frames into an unrelated process's page tables once Bus
# Master was back); the C driver refills its rings in place.
command_register() { od -An -tu2 -j4 -N2 "/sys/bus/pci/devices/$1/config" | tr -d ' '; }
command_register_reads() { [ "$(command_register "$1")" = "$2" ]; }
# set_command_register PCI VALUE: writes the 16-bit register, little-endian, and sees it read
# back. e1000_rs clears and sets Bus Master Enable itself in a reset, which its transmit watchdog
# may start as Memory Space comes back: the value written reads back within seconds, or this says
# what the register reads.
set_command_register() {
    printf '%b' "$(printf '\\0%03o\\0%03o' $(($2 & 255)) $(($2 >> 8)))" |
        dd of="/sys/bus/pci/devices/$1/config" bs=2 seek=2 count=1 conv=notrunc 2>/dev/null ||
        { echo "writing $2 to the command register of $1 failed"; return 1; }
    wait_for 5 command_register_reads "$1" "$2" ||
        { echo "the command register of $1 reads $(command_register "$1"), not $2"; return 1; }
}
# off_for PCI SECONDS: Memory Space and Bus Master Enable off for SECONDS, then as they were;
# says for how long, in hundredths of a second.
off_for() {
    off_for_command=$(command_register "$1") off_for_start=$(uptime_cs)
    set_command_register "$1" $((off_for_command & ~6)) &&
        sleep "$2" &&
        set_command_register "$1" "$off_for_command" &&
        echo "off for $(($(uptime_cs) - off_for_start)) cs, restored at $(uptime_cs) cs"
}
# device_unanswering NAME PCI DRIVER: (a) for the function at PCI, bound to DRIVER.
device_unanswering() {
    log_before=$(dmesg | wc -l)
    counted=$(received)
    traffic_start
    sleep 1
    received_since "$1 traffic before" "$counted"
    check $1-memory-and-bus-master-off-and-restored off_for $2 7
    counted=$(received)
    sleep 1
    traffic_stop
    received_since "$1 traffic after" "$counted"
    # What the kernel and the driver said meanwhile, for the report.
    diag "$1: $(dmesg | tail -n +$((log_before + 1)) | grep -E 'nobody cared|Disabling IRQ|e1000|Tx Unit Hang|timed out' | sed 's/^\[[^]]*\] //' | sort | uniq -c | tr -s ' ' | tr '\n' '|')"
    check $1-rebind rebind $2 $3
    interfaces
    frames_cross $1-after
}
device_unanswering rs-command $rs_pci e1000_rs
device_unanswering c-command $c_pci e1000

# (b) Every register read of e1000_rs answering all ones (the read still reaches the device) under
# traffic, as a device gone from the bus reads: the statistics through ethtool -S, ip -s link and
# sysfs, a ring resize (refused: a reset would not reach the device), the interface taken down and
# up, remove, and a probe, which fails (the EEPROM's address reads all ones). The driver says so
# once, skips its statistics samples and disowns the interrupts; the statistics stay readable (a
# sum that added all ones overflowed, a panic with the kernel's Rust overflow checks).
fault=/sys/kernel/debug/e1000_rs/fail_mmio_read
check fault-attribute test -w $fault/probability
# fail_mmio_read PERCENT: the fault fires for PERCENT % of reads, without end and without a stack
# trace each time.
fail_mmio_read() {
    echo 0 >$fault/verbose && echo 1 >$fault/interval && echo -1 >$fault/times &&
        echo "$1" >$fault/probability
}
said_unanswering() { log_count "e1000_rs $rs_pci: .* does not answer"; }
# statistics_read: every way of reading e1000_rs's statistics, twice (the second sample adds to
# what the first left).
statistics_read() {
    for statistics_round in 1 2; do
        /bin/ethtool -S $rs_if >/dev/null && /bin/ip -s link show dev $rs_if >/dev/null &&
            cat /sys/class/net/$rs_if/statistics/* >/dev/null || return 1
    done
    echo "after $statistics_round rounds: rx_bytes $(net_stat $rs_if rx_bytes)," \
        "ethtool rx_bytes $(/bin/ethtool -S $rs_if | awk '$1 == "rx_bytes:" { print $2 }')"
}
said_before=$(said_unanswering)
counted=$(received)
traffic_start
sleep 1
received_since "fault traffic before" "$counted"
counted=$(received)
check faulting fail_mmio_read 100
check statistics-while-faulting statistics_read
sleep 1
check statistics-again-while-faulting statistics_read
received_since "fault traffic while faulting" "$counted"
check resize-refused-while-faulting sh -c "! /bin/ethtool -G $rs_if tx 128"
check down-while-faulting ip link set $rs_if down
check up-while-faulting ip link set $rs_if up
check statistics-after-up-while-faulting statistics_read
traffic_stop
check said-once test "$(said_unanswering)" = $((said_before + 1))
check unbind-while-faulting sh -c "echo $rs_pci >/sys/bus/pci/drivers/e1000_rs/unbind"
check released-while-faulting pci_released $rs_pci
check probe-refused-while-faulting sh -c "! echo $rs_pci >/sys/bus/pci/drivers/e1000_rs/bind"
check released-after-refused-probe pci_released $rs_pci
check fault-off fail_mmio_read 0
check bind-after-fault sh -c "echo $rs_pci >/sys/bus/pci/drivers/e1000_rs/bind"
check up-after-fault bring_up $rs_pci
interfaces
frames_cross fault-after
check statistics-after-fault statistics_read
check said-once-in-all test "$(said_unanswering)" = $((said_before + 1))

check unload rmmod e1000_rs
check released-at-unload pci_released $rs_pci
