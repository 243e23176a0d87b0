# shellcheck shell=sh
check load-e1000 insmod /modules/e1000.ko
up $PEER $PEER6
check peer-carrier-up carrier_up
check ping-dut wait_for 60 ping -c 1 -W 1 $DUT
# Before the DUT sends anything from its IPv6 address: the peer finds it by a neighbour
# solicitation to its solicited-node multicast group, which the DUT's receive filter must pass.
check ping6-dut ping -6 -c 1 -w 10 $DUT6
dd if=/dev/urandom of=/tmp/out bs=1M count=64 2>/dev/null
diag "peer_sent_sha=$(sha256sum </tmp/out | cut -d' ' -f1)"
check tcp-receive-64MiB sh -c 'timeout 300 netpipe recv 5001 | sha256sum | cut -d" " -f1 >/tmp/recv.sha'
diag "peer_received_sha=$(cat /tmp/recv.sha)"
check tcp-send-64MiB sh -c 'netpipe send $DUT 5002 </tmp/out'
rm -f /tmp/out

# Malformed frames, when the DUT asks.
timeout 300 netpipe recv 5003 >/dev/null
dut_mac=$(ip neigh show $DUT | awk '{print $5}')
[ -n "$dut_mac" ] || { ping -c 1 -W 1 $DUT >/dev/null; dut_mac=$(ip neigh show $DUT | awk '{print $5}'); }
diag "dut_mac=$dut_mac"
ip link set eth0 mtu 9000
carrier_up
check send-oversize rawframes eth0 $dut_mac 0x0800 3000 10
check send-garbage-ethertype rawframes eth0 $dut_mac 0x88b5 100 10
check send-runt-ipv4 rawframes eth0 $dut_mac 0x0800 14 10
check send-bad-udp-checksum rawframes eth0 $dut_mac udp-bad-checksum $PEER $DUT 10
ip link set eth0 mtu 1500
carrier_up
check tell-dut sh -c 'echo sent | netpipe send $DUT 5004'

# Frames for the receive filter, when the DUT asks: to another station's address (filtered,
# promiscuous, filtered again), to a multicast group the DUT joined, to one it did not, to a
# secondary unicast address of the DUT's (while another is there, after it left, after this one
# left), and to another station's address while the DUT has more secondary addresses than entries
# and after.
# frames_to GO_PORT SENT_PORT ADDRESS
frames_to() {
    timeout 300 netpipe recv "$1" >/dev/null
    check "send-frames-$1" rawframes eth0 "$3" 0x88b5 1514 20
    check "tell-dut-sent-$1" sh -c "echo sent | netpipe send $DUT $2"
}
frames_to 5005 5006 02:00:00:00:00:99
frames_to 5007 5008 02:00:00:00:00:99
frames_to 5015 5016 02:00:00:00:00:99
frames_to 5017 5018 33:33:00:00:00:01
frames_to 5019 5020 33:33:00:00:12:34
frames_to 5023 5024 02:00:00:00:00:42
frames_to 5025 5026 02:00:00:00:00:42
frames_to 5027 5028 02:00:00:00:00:42
frames_to 5029 5030 02:00:00:00:00:99
frames_to 5031 5032 02:00:00:00:00:99

# The DUT's copying variant, after its load/unload cycles.
check copy-tcp-receive-16MiB sh -c 'timeout 800 netpipe recv 5011 | sha256sum | cut -d" " -f1 >/tmp/recv.sha'
diag "peer_copy_received_sha=$(cat /tmp/recv.sha)"
dd if=/dev/urandom of=/tmp/out bs=1M count=16 2>/dev/null
diag "peer_copy_sent_sha=$(sha256sum </tmp/out | cut -d' ' -f1)"
check copy-tcp-send-16MiB sh -c 'netpipe send $DUT 5012 </tmp/out'

check dut-finished sh -c 'timeout 800 netpipe recv 5009 | grep -q done'
# The DUT's last transfer, cut short by the unplug.
timeout 60 netpipe recv 5021 >/dev/null
