# shellcheck shell=sh
export DUT=169.254.0.1 DUT6=fd00::1
export PEER=169.254.0.2 PEER6=fd00::2
# up IPV4 IPV6: the interface up with both addresses, the IPv6 one usable at once (no duplicate
# address detection; busybox ip has no nodad).
up() {
    echo 0 >/proc/sys/net/ipv6/conf/eth0/accept_dad &&
    ip link set eth0 up && ip addr add "$1/16" dev eth0 && ip -6 addr add "$2/64" dev eth0
}
# stat NAME: a counter of eth0
stat() { net_stat eth0 "$1"; }
# counted_during STAT GO_PORT SENT_PORT: how much eth0's counter STAT grew while the peer, told to go
# on GO_PORT, sent its frames and said so on SENT_PORT.
counted_during() {
    before=$(stat "$1")
    echo go | netpipe send "$PEER" "$2" &&
    timeout 120 netpipe recv "$3" | grep -q sent &&
    echo $(( $(stat "$1") - before ))
}
