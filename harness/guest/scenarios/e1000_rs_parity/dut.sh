# shellcheck shell=sh
# The DUT runs e1000_rs; every check drives it with Debian's ethtool and iproute2 (/bin/ip), and the
# peer (the C e1000) answers and reports what its driver says to the same commands.
check load insmod /modules/e1000_rs.ko
check interface wait_for 10 test -d /sys/class/net/eth0
up $DUT $DUT6
check carrier-up carrier_up
check ping-peer wait_for 60 ping -c 1 -W 1 $PEER

# ethtool -i: the driver, the running kernel's release, the PCI function.
pci=$(basename "$(readlink /sys/class/net/eth0/device)")
ethtool -i eth0 >/tmp/drvinfo
check drvinfo-driver grep -qx 'driver: e1000_rs' /tmp/drvinfo
check drvinfo-version grep -qx "version: $(uname -r)" /tmp/drvinfo
check drvinfo-bus-info grep -qx "bus-info: $pci" /tmp/drvinfo
check drvinfo-statistics grep -qx 'supports-statistics: yes' /tmp/drvinfo

# ethtool DEV and -g, compared with the peer's C driver by the host.
diag "link_settings=$(link_settings)"
diag "rings=$(oneline ethtool -g eth0)"
diag "stat_names=$(stat_names)"

# The other ethtool answers, compared by the host; then what they do to e1000_rs.
ethtool_answers
# The message level gates the link messages: none at a restart without "link", one with it.
link_logs() { dmesg | grep -c "e1000_rs $pci: link up"; }
logged=$(link_logs)
check msglvl-without-link ethtool -s eth0 msglvl 0x3
check restart-unlogged ethtool -r eth0
check carrier-after-unlogged carrier_up
sleep 1
diag "link_messages_unlogged=$(($(link_logs) - logged))"
check msglvl-with-link ethtool -s eth0 msglvl 0x7
check restart-logged ethtool -r eth0
check link-message wait_for 30 sh -c "test \$(dmesg | grep -c 'e1000_rs $pci: link up') -gt $logged"
diag "link_messages_logged=$(($(link_logs) - logged))"
check ping-after-restarts wait_for 30 ping -c 1 -W 1 $PEER
# ethtool -p: LED Control alternates between the identification modes, then is as before.
bar=/sys/bus/pci/devices/$pci/resource0
ledctl=$(mmio "$bar" 0xe00)
(ethtool -p eth0 2 >/dev/null 2>&1) &
identify=$!
samples=""
for _ in 1 2 3 4 5 6 7 8; do
    sleep 0.1
    samples="$samples $(mmio "$bar" 0xe00)"
done
wait $identify
diag "ledctl_before=$ledctl"
# The modes seen, other than the configured one (a sample may come before the first change).
diag "ledctl_identifying=$(echo "$samples" | tr ' ' '\n' | grep . | grep -vx "$ledctl" | sort -u | tr '\n' ' ')"
diag "ledctl_after=$(mmio "$bar" 0xe00)"
# ethtool -A takes effect in CTRL's flow control enables (RFCE, TFCE): forced receive only, then
# negotiated none and both (which QEMU's partner resolves to receive only).
fc_bits() { echo $((($(mmio "$bar" 0x0) >> 27) & 3)); }
# The resolution follows the link's negotiation: each value is awaited (10 s), then reported.
check pause-forced-rx ethtool -A eth0 autoneg off rx on tx off
diag "fc_forced_rx=$(fc_bits)"
check pause-negotiated-none ethtool -A eth0 autoneg on rx off tx off
check carrier-after-negotiated-none carrier_up
wait_for 10 sh -c "test \$((\$(mmio $bar 0x0) >> 27 & 3)) = 0"
diag "fc_negotiated_none=$(fc_bits)"
check pause-negotiated-both ethtool -A eth0 autoneg on rx on tx on
check carrier-after-negotiated-both carrier_up
wait_for 10 sh -c "test \$((\$(mmio $bar 0x0) >> 27 & 3)) = 1"
diag "fc_negotiated_both=$(fc_bits)"
check ping-after-pause wait_for 30 ping -c 1 -W 1 $PEER
# ethtool -d shows what the registers hold: RDTR written through BAR0, then put back.
rdtr=$(mmio "$bar" 0x2820)
mmio "$bar" 0x2820 0x2a >/dev/null
diag "rdtr_dumped=$(regs_words 6 6)"
mmio "$bar" 0x2820 "$rdtr" >/dev/null

# ethtool -S against the wire: the peer sends 50 broadcast frames of 100 bytes, which the statistics
# registers count (with what else arrives meanwhile: an ARP request or two).
rx_broadcast=$(hw_stat rx_broadcast)
rx_packets=$(hw_stat rx_packets)
echo go | netpipe send $PEER 6001
check broadcasts-sent sh -c 'timeout 120 netpipe recv 6002 | grep -q sent'
diag "rx_broadcast_delta=$(($(hw_stat rx_broadcast) - rx_broadcast))"
diag "rx_packets_delta=$(($(hw_stat rx_packets) - rx_packets))"
# ... and the DUT sends 40, which its registers and the peer's C driver count.
timeout 120 netpipe recv 6003 >/dev/null
tx_broadcast=$(hw_stat tx_broadcast)
check send-broadcasts rawframes eth0 ff:ff:ff:ff:ff:ff 0x88b5 100 40
diag "tx_broadcast_delta=$(($(hw_stat tx_broadcast) - tx_broadcast))"
echo sent | netpipe send $PEER 6004
# Hardware and driver count the same frames: 20 pings' requests and replies, whatever else.
sent_hw=$(hw_stat tx_packets)
sent_driver=$(stat tx_packets)
check stats-ping ping -c 20 -i 0.05 -W 2 $PEER
diag "tx_packets_hw_delta=$(($(hw_stat tx_packets) - sent_hw))"
diag "tx_packets_driver_delta=$(($(stat tx_packets) - sent_driver))"

# ethtool -K: a transfer each way, checksummed, with each offload off in turn and with all on.
dd if=/dev/urandom of=/tmp/out bs=1M count=4 2>/dev/null
diag "dut_sent_sha=$(sha256sum </tmp/out | cut -d' ' -f1)"
port=6100
for off in $FEATURE_STATES; do
    [ "$off" = all ] || check "feature-$off-off" ethtool -K eth0 "$off" off
    state=$(ethtool -k eth0 | grep -E '^(rx-checksumming|tx-checksumming|scatter-gather|tcp-segmentation-offload):' | tr -s ' \t' ' ' | tr '\n' '|')
    diag "features_$off=$state"
    check "send-$off" netpipe send $PEER $port </tmp/out
    diag "dut_received_sha_$off=$(sha_of_received $((port + 1)))"
    [ "$off" = all ] || check "feature-$off-on" ethtool -K eth0 "$off" on
    port=$((port + 2))
done

# ethtool -r restarts the link, as the C driver's reset does, and traffic goes on.
check restart-autoneg ethtool -r eth0
check carrier-after-restart carrier_up
check ping-after-restart wait_for 30 ping -c 1 -W 1 $PEER

# ethtool -G while a transfer runs each way; the peer checks what arrived.
dd if=/dev/urandom of=/tmp/out bs=1M count=16 2>/dev/null
diag "dut_sent_sha_16=$(sha256sum </tmp/out | cut -d' ' -f1)"
(sha_of_received 6201 >/tmp/recv.sha) &
receiver=$!
(netpipe send $PEER 6200 </tmp/out; echo $? >/tmp/send.rc) &
sender=$!
sleep 1
check resize-rings-under-traffic ethtool -G eth0 rx 512 tx 128
sleep 1
check resize-rings-again ethtool -G eth0 rx 1024 tx 64
wait $sender
check resized-send-finished grep -qx 0 /tmp/send.rc
wait $receiver
diag "dut_received_sha_16=$(cat /tmp/recv.sha)"
diag "rings_resized=$(oneline ethtool -g eth0)"
# Out of range: rounded and raised as the C driver does, and refused above the most.
ring_size_answers
check ping-after-resize wait_for 30 ping -c 1 -W 1 $PEER

# MTU: jumbo frames each way at 9000, live changes under traffic, and what no MTU may be.
timeout 120 netpipe recv 6300 >/dev/null
check mtu-9000 /bin/ip link set eth0 mtu 9000
check ping-jumbo wait_for 30 ping -c 3 -s 8000 -W 2 $PEER
rx_packets=$(hw_stat rx_packets)
rx_bytes=$(hw_stat rx_bytes)
check send-jumbo netpipe send $PEER 6301 </tmp/out
diag "dut_received_sha_jumbo=$(sha_of_received 6302)"
diag "rx_bytes_per_packet_jumbo=$((($(hw_stat rx_bytes) - rx_bytes) / ($(hw_stat rx_packets) - rx_packets)))"
# Frames longer than the MTU's are dropped and counted, as at 1500.
length_errors=$(stat rx_length_errors)
echo go | netpipe send $PEER 6303
check oversize-sent sh -c 'timeout 120 netpipe recv 6304 | grep -q sent'
diag "rx_length_errors_jumbo=$(($(stat rx_length_errors) - length_errors))"
check ping-after-oversize ping -c 3 -W 2 $PEER
# The MTU changed back and forth while the DUT sends.
(netpipe send $PEER 6305 </tmp/out; echo $? >/tmp/send.rc) &
sender=$!
for mtu in 1500 9000 4000 1500; do
    sleep 1
    check "mtu-$mtu-under-traffic" /bin/ip link set eth0 mtu $mtu
done
wait $sender
check mtu-changes-send-finished grep -qx 0 /tmp/send.rc
# No MTU beyond the bounds; nothing changes.
mtu_answers
check mtu-unchanged grep -qx 1500 /sys/class/net/eth0/mtu
check ping-at-1500 wait_for 30 ping -c 1 -W 1 $PEER

# 802.1Q: VLAN 5 on both ends, tags inserted and stripped by the MAC. Frames of VLAN 5 reach the
# driver; frames of VLAN 7, which the DUT does not have, are dropped by the VLAN filter (VFTA).
timeout 120 netpipe recv 6500 >/dev/null
check vlan-add /bin/ip link add link eth0 name eth0.5 type vlan id 5
check vlan-address /bin/ip addr add 169.254.5.1/24 dev eth0.5
check vlan-up /bin/ip link set eth0.5 up
check vlan-ping wait_for 30 ping -c 3 -W 2 169.254.5.2
diag "vlan_features=$(ethtool -k eth0 | grep -E '^(rx|tx)-vlan-(offload|hw-insert)|^rx-vlan-filter' | tr -s ' \t' ' ' | tr '\n' '|')"
check vlan-send netpipe send 169.254.5.2 6501 </tmp/out
diag "dut_received_sha_vlan=$(sha_of_received 6502)"
# vlan_window GO_PORT SENT_PORT: the frames eth0.5 received, and those eth0 dropped for want of a
# VLAN interface or protocol, while the peer sent its 20.
dropped() { echo $(($(stat rx_dropped) + $(stat rx_nohandler))); }
vlan_window() {
    vlan_before=$(net_stat eth0.5 rx_packets)
    dropped_before=$(dropped)
    echo go | netpipe send "$PEER" "$1" &&
        timeout 120 netpipe recv "$2" | grep -q sent &&
        echo "vlan5=$(($(net_stat eth0.5 rx_packets) - vlan_before)) dropped=$(($(dropped) - dropped_before))"
}
diag "vlan5_window=$(vlan_window 6503 6504)"
diag "vlan7_window=$(vlan_window 6505 6506)"
# The control: promiscuous, the VLAN filter is off, and VLAN 7's frames reach the stack.
check vlan-promiscuous-on ip link set eth0 promisc on
diag "vlan7_promiscuous_window=$(vlan_window 6507 6508)"
check vlan-promiscuous-off ip link set eth0 promisc off
# ethtool -K rx-all: the MAC passes what it would drop (RCTL.SBP, the VLAN filter off): VLAN 7's
# frames, and frames longer than the MTU's (1600 bytes at 1500), reach the stack. QEMU's model
# never marks a frame damaged (it has no FCS from the wire): the bad-CRC case cannot be shown.
diag "long_window=$(vlan_window 6509 6510)"
check rx-all-on ethtool -K eth0 rx-all on
diag "vlan7_rx_all_window=$(vlan_window 6511 6512)"
diag "long_rx_all_window=$(vlan_window 6513 6514)"
check rx-all-off ethtool -K eth0 rx-all off
diag "vlan7_rx_all_off_window=$(vlan_window 6515 6516)"
# ethtool -K rx-fcs: the frames a packet socket sees keep their 4-byte FCS (RCTL.SECRC off).
# caught_lengths GO_PORT SENT_PORT: the lengths of the peer's frames eth0 hands a packet socket,
# as "count length" pairs.
peer_mac=$(ip neigh show $PEER | awk '{print $5}')
caught_lengths() {
    rawframes eth0 "$peer_mac" capture 0x88b5 20 30 >/tmp/caught &
    catcher=$!
    wait_for 5 grep -q capturing /tmp/caught
    echo go | netpipe send "$PEER" "$1" && timeout 120 netpipe recv "$2" | grep -q sent
    wait $catcher
    grep -v capturing /tmp/caught | sort | uniq -c | tr -s ' ' | tr '\n' ';'
}
diag "lengths_without_fcs=$(caught_lengths 6517 6518)"
check rx-fcs-on ethtool -K eth0 rx-fcs on
diag "lengths_with_fcs=$(caught_lengths 6519 6520)"
check rx-fcs-off ethtool -K eth0 rx-fcs off
check ping-after-rx-features ping -c 3 -W 2 $PEER
# Stripping off takes insertion with it (one bit, CTRL.VME), and VLAN 5 still works in software.
check vlan-stripping-off ethtool -K eth0 rxvlan off
diag "vlan_features_off=$(ethtool -k eth0 | grep -E '^(rx|tx)-vlan-(offload|hw-insert)' | tr -s ' \t' ' ' | tr '\n' '|')"
check vlan-ping-software-tags ping -c 3 -W 2 169.254.5.2
check vlan-stripping-on ethtool -K eth0 rxvlan on
check vlan-ping-again ping -c 3 -W 2 169.254.5.2
feature_answers
check vlan-delete /bin/ip link del eth0.5

# A transmitter that stops behind the driver's back (TCTL.EN cleared through the BAR) fills the
# ring; the stack's watchdog calls ndo_tx_timeout and the driver's reset brings it back.
tctl=$(mmio "$bar" 0x400)
ping -i 0.02 -c 1000 -W 1 $PEER >/dev/null 2>&1 &
pinger=$!
sleep 1
check stop-transmitter mmio "$bar" 0x400 $((tctl & ~2))
check tx-timeout-logged wait_for 30 sh -c 'dmesg | grep -q "transmit timed out"'
check reset-logged wait_for 30 sh -c 'dmesg | grep -q "resetting the adapter"'
transmitter_enabled() { test $(($(mmio "$bar" 0x400) & 2)) = 2; }
check transmitter-enabled-again wait_for 30 transmitter_enabled
check ping-after-reset wait_for 30 ping -c 1 -W 1 $PEER
kill $pinger 2>/dev/null
wait $pinger 2>/dev/null
diag "tx_timeout_count=$(hw_stat tx_timeout_count)"

# Suspend to idle, stopped by pm_test after the devices' callbacks: e1000_rs goes down and comes
# back up with its link, addresses and filters, and a transfer crosses.
carrier_changes=$(cat /sys/class/net/eth0/carrier_changes)
check pm-test-devices sh -c 'echo devices >/sys/power/pm_test'
check suspend-resume sh -c 'echo freeze >/sys/power/state'
check devices-were-suspended sh -c 'dmesg | grep -q "suspend debug: Waiting"'
# The driver's callbacks ran: the link went down with the interface, and up again once the PHY
# negotiated it (as the C driver's, after the reset).
check driver-suspended-and-resumed wait_for 10 sh -c "test \$((\$(cat /sys/class/net/eth0/carrier_changes) - $carrier_changes)) -ge 2"
check carrier-after-resume carrier_up
check ping-after-resume wait_for 30 ping -c 1 -W 1 $PEER
check ping6-after-resume wait_for 30 ping -6 -c 1 -W 1 $PEER6
check send-after-resume netpipe send $PEER 6600 </tmp/out

check unload rmmod e1000_rs
# Copying both ways, at MTU 9000: long frames copied out buffer after buffer. The module stays
# loaded and up for the shutdown callback at the VM's reboot (the host looks for it).
check reload-copying insmod /modules/e1000_rs.ko tx_copy=1 rx_copy=1
check reload-interface wait_for 10 test -d /sys/class/net/eth0
up $DUT $DUT6
check copying-mtu-9000 /bin/ip link set eth0 mtu 9000
check copying-carrier carrier_up
check copying-ping-jumbo wait_for 30 ping -c 3 -s 8000 -W 2 $PEER
check copying-send-jumbo netpipe send $PEER 6700 </tmp/out
diag "dut_received_sha_copying_jumbo=$(sha_of_received 6701)"
echo finished | netpipe send $PEER 6400

