# shellcheck shell=sh
# The peer runs the C e1000: the other end of every transfer, and what its driver answers to the
# same ethtool and ip commands.
check load-e1000 insmod /modules/e1000.ko
up $PEER $PEER6
check peer-carrier-up carrier_up
check ping-dut wait_for 60 ping -c 1 -W 1 $DUT
diag "link_settings=$(link_settings)"
diag "rings=$(oneline ethtool -g eth0)"
diag "stat_names=$(stat_names)"
ethtool_answers

timeout 300 netpipe recv 6001 >/dev/null
check send-broadcasts rawframes eth0 ff:ff:ff:ff:ff:ff 0x88b5 100 50
echo sent | netpipe send $DUT 6002
rx_broadcast=$(hw_stat rx_broadcast)
echo go | netpipe send $DUT 6003
check dut-broadcasts-sent sh -c 'timeout 120 netpipe recv 6004 | grep -q sent'
diag "peer_rx_broadcast_delta=$(($(hw_stat rx_broadcast) - rx_broadcast))"

dd if=/dev/urandom of=/tmp/out bs=1M count=4 2>/dev/null
diag "peer_sent_sha=$(sha256sum </tmp/out | cut -d' ' -f1)"
port=6100
for off in $FEATURE_STATES; do
    diag "peer_received_sha_$off=$(sha_of_received $port)"
    check "send-$off" netpipe send $DUT $((port + 1)) </tmp/out
    port=$((port + 2))
done

dd if=/dev/urandom of=/tmp/out bs=1M count=16 2>/dev/null
diag "peer_sent_sha_16=$(sha256sum </tmp/out | cut -d' ' -f1)"
(sha_of_received 6200 >/tmp/recv.sha) &
receiver=$!
sleep 1
check send-during-resize netpipe send $DUT 6201 </tmp/out
wait $receiver
diag "peer_received_sha_16=$(cat /tmp/recv.sha)"
# The same out-of-range ring sizes, for the host to compare.
ring_size_answers
check carrier-after-resize carrier_up

check mtu-9000 /bin/ip link set eth0 mtu 9000
check carrier-at-9000 carrier_up
echo go | netpipe send $DUT 6300
diag "peer_received_sha_jumbo=$(sha_of_received 6301)"
check send-jumbo netpipe send $DUT 6302 </tmp/out
timeout 300 netpipe recv 6303 >/dev/null
dut_mac=$(ip neigh show $DUT | awk '{print $5}')
check mtu-9200 /bin/ip link set eth0 mtu 9200
carrier_up
check send-oversize rawframes eth0 "$dut_mac" 0x88b5 9100 10
check mtu-9000-again /bin/ip link set eth0 mtu 9000
carrier_up
echo sent | netpipe send $DUT 6304
diag "peer_received_sha_mtu_changes=$(sha_of_received 6305)"
mtu_answers

# 802.1Q, with the DUT: VLAN 5 on both ends; frames of VLAN 5 and of VLAN 7 sent to the DUT.
check vlan-add /bin/ip link add link eth0 name eth0.5 type vlan id 5
check vlan-address /bin/ip addr add 169.254.5.2/24 dev eth0.5
check vlan-up /bin/ip link set eth0.5 up
check vlan7-add /bin/ip link add link eth0 name eth0.7 type vlan id 7
check vlan7-up /bin/ip link set eth0.7 up
echo go | netpipe send $DUT 6500
diag "vlan_features=$(ethtool -k eth0 | grep -E '^(rx|tx)-vlan-(offload|hw-insert)|^rx-vlan-filter' | tr -s ' \t' ' ' | tr '\n' '|')"
diag "peer_received_sha_vlan=$(sha_of_received 6501)"
check vlan-send netpipe send 169.254.5.1 6502 </tmp/out
# vlan_frames GO_PORT SENT_PORT INTERFACE [SIZE]: 20 frames (of 100 bytes) from INTERFACE to the
# DUT, when it asks.
vlan_frames() {
    timeout 300 netpipe recv "$1" >/dev/null
    check "frames-$1-$3" rawframes "$3" "$dut_mac" 0x88b5 "${4:-100}" 20
    check "frames-sent-$2-$3" sh -c "echo sent | netpipe send $DUT $2"
}
vlan_frames 6503 6504 eth0.5
vlan_frames 6505 6506 eth0.7
vlan_frames 6507 6508 eth0.7
# For the DUT's rx-all: frames longer than its MTU's (this end is at 9000), VLAN 7's and the long
# ones again with rx-all on, VLAN 7's with it off; then plain frames twice for rx-fcs.
vlan_frames 6509 6510 eth0 1600
vlan_frames 6511 6512 eth0.7
vlan_frames 6513 6514 eth0 1600
vlan_frames 6515 6516 eth0.7
vlan_frames 6517 6518 eth0
vlan_frames 6519 6520 eth0
check vlan-stripping-off ethtool -K eth0 rxvlan off
diag "vlan_features_off=$(ethtool -k eth0 | grep -E '^(rx|tx)-vlan-(offload|hw-insert)' | tr -s ' \t' ' ' | tr '\n' '|')"
check vlan-stripping-on ethtool -K eth0 rxvlan on
feature_answers

diag "peer_received_sha_resumed=$(sha_of_received 6600)"
diag "peer_received_sha_copying_jumbo=$(sha_of_received 6700)"
check send-copying-jumbo netpipe send $DUT 6701 </tmp/out
check dut-finished sh -c 'timeout 600 netpipe recv 6400 | grep -q finished'
