# shellcheck shell=sh
check load insmod /modules/e1000_rs.ko
check interface wait_for 10 test -d /sys/class/net/eth0
check driver-is-e1000_rs sh -c 'readlink /sys/class/net/eth0/device/driver | grep -q e1000_rs$'
diag "mac=$(cat /sys/class/net/eth0/address)"
up $DUT $DUT6
check carrier-up carrier_up
check ping-peer wait_for 60 ping -c 1 -W 1 $PEER
check ping-peer-20 ping -c 20 -i 0.05 -W 2 $PEER
# The benchmark's alternating pings (here both to the peer): every reply back.
check pingpair-peer sh -c 'pingpair $PEER $PEER 10 10 | grep -q " a_lost=0 b_lost=0$"'

# 64 MiB each way over TCP, checksummed on both sides.
dd if=/dev/urandom of=/tmp/out bs=1M count=64 2>/dev/null
diag "dut_sent_sha=$(sha256sum </tmp/out | cut -d' ' -f1)"
(timeout 300 netpipe recv 5002 | sha256sum | cut -d' ' -f1 >/tmp/recv.sha) &
listener=$!
tx_packets_before=$(stat tx_packets)
tx_bytes_before=$(stat tx_bytes)
check tcp-send-64MiB sh -c 'netpipe send $PEER 5001 </tmp/out'
diag "tx_packets_64MiB=$(( $(stat tx_packets) - tx_packets_before ))"
diag "tx_bytes_64MiB=$(( $(stat tx_bytes) - tx_bytes_before ))"
# `check` runs its command in a subshell, which cannot wait for this shell's job.
wait $listener
ktap_result $? tcp-receive-64MiB
diag "dut_received_sha=$(cat /tmp/recv.sha)"
rm -f /tmp/out
check ping6-peer ping -6 -c 3 -W 2 $PEER6

# Link down and up through QMP: the carrier follows, and traffic resumes.
request link-down
check carrier-follows-down wait_for 20 grep -qx 0 /sys/class/net/eth0/carrier
check no-traffic-while-down sh -c '! ping -c 1 -W 1 $PEER'
request link-up
check carrier-follows-up wait_for 20 grep -qx 1 /sys/class/net/eth0/carrier
check traffic-resumes wait_for 30 ping -c 1 -W 1 $PEER

# Malformed frames from the peer: dropped, counted, no crash.
length_before=$(stat rx_length_errors)
dropped_before=$(stat rx_dropped)
hdr_before=$(awk '/^Ip: [0-9]/ {print $5}' /proc/net/snmp)
udp_csum_errors() { awk '/^Udp:/ { if (!col) { for (i = 2; i <= NF; i++) if ($i == "InCsumErrors") col = i; next } print $col }' /proc/net/snmp; }
csum_before=$(udp_csum_errors)
echo go | netpipe send $PEER 5003
check malformed-sent sh -c 'timeout 120 netpipe recv 5004 | grep -q sent'
diag "rx_length_errors=$(( $(stat rx_length_errors) - length_before ))"
diag "rx_dropped=$(( $(stat rx_dropped) - dropped_before ))"
diag "ip_in_hdr_errors=$(( $(awk '/^Ip: [0-9]/ {print $5}' /proc/net/snmp) - hdr_before ))"
diag "udp_in_csum_errors=$(( $(udp_csum_errors) - csum_before ))"
check still-alive-after-malformed ping -c 3 -W 2 $PEER

# The receive filter. Each time, the peer sends 20 frames of 1514 bytes to one address.
# rx_bytes_during GO_PORT SENT_PORT: what eth0 received meanwhile, in bytes
rx_bytes_during() { counted_during rx_bytes "$1" "$2"; }
# Frames to another station's address (02:00:00:00:00:99) pass only in promiscuous mode.
diag "foreign_rx_bytes_filtered=$(rx_bytes_during 5005 5006)"
check promiscuous-on ip link set eth0 promisc on
diag "foreign_rx_bytes_promiscuous=$(rx_bytes_during 5007 5008)"
check promiscuous-off ip link set eth0 promisc off
diag "foreign_rx_bytes_filtered_again=$(rx_bytes_during 5015 5016)"
# Multicast frames pass the Multicast Table Array for the groups the DUT joined (IPv6 all-nodes,
# 33:33:00:00:00:01), not for others (33:33:00:00:12:34, another bit of the table).
diag "multicast_rx_bytes_joined=$(rx_bytes_during 5017 5018)"
diag "multicast_rx_bytes_not_joined=$(rx_bytes_during 5019 5020)"
# Secondary unicast addresses (packet sockets' memberships, as a macvlan or a bridge port adds
# them) take receive address entries: their frames pass without promiscuous mode, also after an
# earlier address leaves (the later one moves down an entry), and once dropped they are filtered
# again. More than the entries hold make the receiver pass every unicast frame, still without
# IFF_PROMISC. (`rawframes` reports each change once the stack has programmed the filter.)
# member NAME MAC [COUNT]: MAC (and the addresses after it) secondary addresses until leave NAME;
# /tmp/member.NAME says "member", then "left".
member() {
    rawframes eth0 "$2" unicast-member 300 "${3:-1}" >"/tmp/member.$1" 2>&1 &
    eval "member_$1=\$!"
}
leave() { eval "kill \$member_$1; wait \$member_$1"; }
not_promiscuous() { test $(($(cat /sys/class/net/eth0/flags) & 0x100)) = 0; }
member first 02:00:00:00:00:41
check secondary-address-added wait_for 10 grep -qx member /tmp/member.first
member second 02:00:00:00:00:42
check second-secondary-address-added wait_for 10 grep -qx member /tmp/member.second
check secondary-addresses-not-promiscuous not_promiscuous
diag "secondary_rx_bytes=$(rx_bytes_during 5023 5024)"
leave first
check first-secondary-address-removed grep -qx left /tmp/member.first
diag "secondary_rx_bytes_moved=$(rx_bytes_during 5025 5026)"
leave second
check secondary-address-removed grep -qx left /tmp/member.second
diag "secondary_rx_bytes_removed=$(rx_bytes_during 5027 5028)"
member many 02:00:00:00:00:50 15
check fifteen-secondary-addresses-added wait_for 10 grep -qx member /tmp/member.many
check fifteen-secondary-addresses-not-promiscuous not_promiscuous
diag "foreign_rx_bytes_all_unicast=$(rx_bytes_during 5029 5030)"
leave many
check fifteen-secondary-addresses-removed grep -qx left /tmp/member.many
diag "foreign_rx_bytes_all_unicast_off=$(rx_bytes_during 5031 5032)"

# A changed address is the one the receiver accepts, at once and after a close and an open. The
# peer learns it from the DUT's ARP request (a change or a close flushes the DUT's neighbours).
# (On the chip the close's reset reloads the EEPROM's address, which the open must overwrite; QEMU's
# model keeps the changed one, so here the second ping only shows that the open does no harm.)
check set-address ip link set eth0 address 02:00:00:00:00:01
check changed-address-ping wait_for 30 ping -c 1 -W 1 $PEER
check close-open sh -c 'ip link set eth0 down && ip link set eth0 up'
check reopened-carrier carrier_up
check reopened-changed-address-ping wait_for 30 ping -c 1 -W 1 $PEER

# Closed while traffic runs: every interrupt stays masked (the host reads IMS through QEMU's
# monitor), however the close met the poll and the transmit path. Open and idle, some are unmasked:
# the read sees the register.
request interrupts-unmasked
ping -i 0.01 -c 300 -W 1 $PEER >/dev/null 2>&1 &
pinger=$!
sleep 1
check close-under-traffic ip link set eth0 down
request interrupts-masked
wait $pinger
check open-after-close-under-traffic ip link set eth0 up
check carrier-after-close-under-traffic carrier_up
check ping-after-close-under-traffic wait_for 30 ping -c 1 -W 1 $PEER

# 100 load/unload cycles with traffic in between.
cycles=0
while [ $cycles -lt 100 ]; do
    rmmod e1000_rs || break
    insmod /modules/e1000_rs.ko || break
    wait_for 10 test -d /sys/class/net/eth0 || break
    up $DUT $DUT6 || break
    # A ping before the link is up is lost and waits out its second: the carrier first.
    wait_for 10 grep -qx 1 /sys/class/net/eth0/carrier || break
    wait_for 30 ping -c 1 -W 1 $PEER || break
    cycles=$((cycles + 1))
done
diag "cycles=$cycles"
check hundred-cycles test $cycles -eq 100

# The other buffer design carries the same bytes: both directions copying through coherent buffers
# (the defaults map socket buffers both ways).
check reload-copy-buffers sh -c 'rmmod e1000_rs && insmod /modules/e1000_rs.ko tx_copy=1 rx_copy=1'
check copy-interface wait_for 10 test -d /sys/class/net/eth0
up $DUT $DUT6
check copy-ping wait_for 30 ping -c 1 -W 1 $PEER
dd if=/dev/urandom of=/tmp/out bs=1M count=16 2>/dev/null
diag "copy_sent_sha=$(sha256sum </tmp/out | cut -d' ' -f1)"
(timeout 300 netpipe recv 5012 | sha256sum | cut -d' ' -f1 >/tmp/recv.sha) &
listener=$!
check copy-tcp-send-16MiB sh -c 'netpipe send $PEER 5011 </tmp/out'
wait $listener
ktap_result $? copy-tcp-receive-16MiB
diag "copy_received_sha=$(cat /tmp/recv.sha)"
rm -f /tmp/out
check tell-peer-done sh -c 'echo done | netpipe send $PEER 5009'
rs_pci=$(basename "$(readlink /sys/class/net/eth0/device)")
check unload rmmod e1000_rs
check released-at-unload pci_released $rs_pci

# The NIC unplugged (QMP device_del) while it sends: the driver unbinds with traffic in flight, the
# interface goes, and the module unloads. TCP would retry for minutes to a peer that no interface
# reaches any more, so the sender has a time limit.
check reload-for-unplug insmod /modules/e1000_rs.ko
check interface-for-unplug wait_for 10 test -d /sys/class/net/eth0
up $DUT $DUT6
check ping-before-unplug wait_for 30 ping -c 1 -W 1 $PEER
tx_before_unplug=$(stat tx_bytes)
(dd if=/dev/zero bs=1M count=100000 2>/dev/null | timeout 30 netpipe send $PEER 5021) &
sender=$!
check sending-before-unplug wait_for 30 sh -c \
    "test \$(cat /sys/class/net/eth0/statistics/tx_bytes) -gt $((tx_before_unplug + 4194304))"
request unplug
check nic-removed wait_for 60 sh -c "! test -e /sys/bus/pci/devices/$rs_pci"
check interface-removed wait_for 10 sh -c '! test -e /sys/class/net/eth0'
wait $sender
ktap_result $((! $?)) transfer-cut-short
check unload-after-unplug rmmod e1000_rs
