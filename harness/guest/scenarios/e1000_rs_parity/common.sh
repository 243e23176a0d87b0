# shellcheck shell=sh
# What both sides of the ethtool scenario share, after e1000_rs/common.sh.

# oneline COMMAND...: COMMAND's output on one line, runs of blanks squeezed, lines joined with |.
oneline() { "$@" 2>&1 | tr -s ' \t' ' ' | tr '\n' '|'; }

# answer COMMAND...: COMMAND's output on one line, as oneline, and its exit status (" rc=N").
answer() {
    answer_out=$("$@" 2>&1)
    answer_rc=$?
    printf '%s rc=%s' "$(printf '%s\n' "$answer_out" | tr -s ' \t' ' ' | tr '\n' '|')" "$answer_rc"
}

# hw_stat NAME: statistic NAME of ethtool -S eth0.
hw_stat() { ethtool -S eth0 | awk -v name="$1:" '$1 == name { print $2 }'; }

# stat_names: the names ethtool -S eth0 shows, space-separated.
stat_names() { ethtool -S eth0 | sed -n 's/^ *\([a-z0-9_]*\): .*/\1/p' | tr '\n' ' '; }

# link_settings: ethtool eth0 without what only the C driver reports (Wake-on, message level,
# MDI-X), on one line.
link_settings() {
    ethtool eth0 | grep -vE 'Wake-on|message level|drv probe link|MDI-X' | tr -s ' \t' ' ' | tr '\n' '|'
}

# sha_of_received PORT [SECONDS]: the sha256 of what arrives on PORT.
sha_of_received() { timeout "${2:-300}" netpipe recv "$1" | sha256sum | cut -d' ' -f1; }

# ring_size_answers: ring sizes out of range, rounded or refused, as the host compares them between
# the drivers; then the default sizes again.
ring_size_answers() {
    check resize-rounded ethtool -G eth0 rx 100 tx 10
    diag "rings_rounded=$(oneline ethtool -g eth0)"
    diag "rings_too_large=$(answer ethtool -G eth0 rx 5000)"
    diag "rings_after_refusal=$(oneline ethtool -g eth0)"
    check resize-default ethtool -G eth0 rx 256 tx 256
}

# mtu_answers: what ip says to MTUs beyond the bounds, as the host compares them between the drivers.
mtu_answers() {
    diag "mtu_too_large=$(answer /bin/ip link set eth0 mtu 20000)"
    diag "mtu_too_small=$(answer /bin/ip link set eth0 mtu 40)"
}

# feature_answers: what ethtool says to feature changes the hardware cannot make (insertion without
# stripping, the VLAN filter off), and the features after them, as the host compares them between
# the drivers.
feature_answers() {
    diag "txvlan_off=$(answer ethtool -K eth0 txvlan off)"
    diag "vlan_filter_off=$(answer ethtool -K eth0 rx-vlan-filter off)"
    diag "features_after_refusals=$(ethtool -k eth0 | grep -E '^(rx|tx)-vlan-(offload|filter)' | tr -s ' \t' ' ' | tr '\n' '|')"
}

# The offload states each transfer runs in: the feature ethtool -K turns off for it ("all" is every
# one on).
# shellcheck disable=SC2034 # read by dut.sh and peer.sh
FEATURE_STATES="all rx tx sg tso"
