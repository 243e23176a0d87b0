# shellcheck shell=sh
# The DUT: e1000_rs and the C e1000 on its two NICs, taking turns. After nics.sh (NIC_A, NIC_B,
# up). Exported by bench_e1000: ROUNDS, TURNS per round and driver, CHUNK_MIB and PINGS per turn,
# PAIRS (alternating pings per round), COUNT (true with instruction counting), VARIANTS (NAME:PARAMS
# of each e1000_rs configuration, commas for spaces in PARAMS).
dd if=/dev/urandom of=/tmp/data bs=1M count="$CHUNK_MIB" 2>/dev/null
insmod /modules/e1000.ko
# With instruction counting, `mark` records the count before and after each measurement.
marks=0
measure_mark() { if [ "$COUNT" = true ]; then mark; marks=$((marks + 1)); fi; }
# Transfers so far on each link, to find the peer's report of each.
sent_a=0 sent_b=0
# bind SLOTS NAME PARAMS: e1000_rs (with PARAMS, commas for spaces) on the first|second NIC, the
# C e1000 on the other, both up; for the control, the C e1000 on both. Like the C driver, e1000_rs
# stays loaded while its parameters stay the same: both are only unbound and probed again.
loaded=none
bind() {
    for a in $NIC_A $NIC_B; do
        [ -e /sys/bus/pci/devices/$a/driver ] && echo $a >/sys/bus/pci/devices/$a/driver/unbind
    done
    if [ $1 = first ]; then rs_nic=$NIC_A c_nic=$NIC_B; else rs_nic=$NIC_B c_nic=$NIC_A; fi
    echo e1000 >/sys/bus/pci/devices/$c_nic/driver_override
    if [ $2 = control ]; then
        echo e1000 >/sys/bus/pci/devices/$rs_nic/driver_override
        echo $rs_nic >/sys/bus/pci/drivers_probe
    else
        echo e1000_rs >/sys/bus/pci/devices/$rs_nic/driver_override
        if [ "$loaded" = "$3" ]; then
            echo $rs_nic >/sys/bus/pci/drivers_probe
        else
            [ -d /sys/module/e1000_rs ] && rmmod e1000_rs
            # shellcheck disable=SC2046 # one argument per module parameter
            insmod /modules/e1000_rs.ko $(echo "$3" | tr , ' ') || return 1
            loaded=$3
        fi
    fi
    echo $c_nic >/sys/bus/pci/drivers_probe
    wait_for 10 iface_of $NIC_A && wait_for 10 iface_of $NIC_B || return 1
    up $NIC_A 10.0.0.1 && up $NIC_B 10.0.1.1 || return 1
    wait_for 30 ping -c 1 -W 1 10.0.0.2 && wait_for 30 ping -c 1 -W 1 10.0.1.2
}
# measure KEY LINK: one turn on LINK (a|b): pings, a transfer to the peer, one back.
measure() {
    if [ $2 = a ]; then peer=10.0.0.2 port=6001 back=6002 n=$sent_a; sent_a=$((sent_a + 1))
    else peer=10.0.1.2 port=6003 back=6004 n=$sent_b; sent_b=$((sent_b + 1)); fi
    measure_mark
    rtt=$(ping -c "$PINGS" -i 0.01 $peer | sed -n 's|.*min/avg/max = [0-9.]*/\([0-9.]*\)/.*|\1|p')
    measure_mark
    diag "$1.rtt_ms=$rtt"
    diag "$1.ping_mark=$marks"
    diag "$1.transfer=$2.$n"
    measure_mark
    netpipe send $peer $port </tmp/data 2>/dev/null
    measure_mark
    diag "$1.tx_mark=$marks"
    measure_mark
    rx=$(netpipe recv $back 2>&1 >/dev/null)
    measure_mark
    diag "$1.rx=$rx"
    diag "$1.rx_mark=$marks"
}
# The last check fails when a round could not bring the NICs up.
all_up=true
round=0
while [ $round -lt "$ROUNDS" ]; do
    if [ $((round / 2 % 2)) = 0 ]; then slots=first; else slots=second; fi
    for variant in $VARIANTS; do
        name=${variant%%:*}
        bind $slots $name "${variant#*:}" || {
            diag "round$round.$name: the NICs did not come up"; all_up=false; break 2; }
        if [ $slots = first ]; then link_rs=a link_c=b; else link_rs=b link_c=a; fi
        # Both links at the same moments: requests alternate between the two peers.
        if [ "$COUNT" = false ]; then
            diag "round$round.$name.pair=$(pingpair 10.0.0.2 10.0.1.2 "$PAIRS" 10)"
            diag "round$round.$name.rs_link=$link_rs"
        fi
        turn=0
        while [ $turn -lt "$TURNS" ]; do
            # ABBA: who goes first alternates every turn, and every round.
            if [ $(((round + turn) % 2)) = 0 ]; then order="c $name"; else order="$name c"; fi
            for who in $order; do
                if [ $who = c ]; then link=$link_c; else link=$link_rs; fi
                measure "round$round.$name.$who.turn$turn" $link
            done
            turn=$((turn + 1))
        done
    done
    round=$((round + 1))
done
check benchmark-done $all_up
