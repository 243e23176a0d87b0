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

# link_settings: ethtool eth0 on one line, without the Wake-on, message level and MDI-X lines, which
# ethtool_answers compares once the C driver has read its PHY.
link_settings() {
    ethtool eth0 | grep -vE 'Wake-on|message level|drv probe link|MDI-X' | tr -s ' \t' ' ' | tr '\n' '|'
}

# regs_words FIRST LAST: words FIRST to LAST (from 0) of ethtool -d eth0's raw dump, in hex.
regs_words() {
    ethtool -d eth0 raw on | od -An -tx4 -v | tr -s ' \n' '  ' | cut -d' ' -f"$(($1 + 2))-$(($2 + 2))"
}

# ethtool_answers: what the driver answers to ethtool's other commands (message level, Wake-on-LAN,
# EEPROM, register dump, identification, flow control), as the host compares them between the
# drivers. The C
# driver reads its PHY's MDI-X state 2 s after the link comes up: the settings are read after that.
ethtool_answers() {
    sleep 3
    diag "settings_full=$(answer ethtool eth0)"
    diag "msglvl_set=$(answer ethtool -s eth0 msglvl 0x3)"
    diag "msglvl_shown=$(ethtool eth0 | grep -A1 'message level' | tr -s ' \t' ' ' | tr '\n' '|')"
    diag "msglvl_named=$(answer ethtool -s eth0 msglvl link off)"
    diag "msglvl_after_named=$(ethtool eth0 | grep 'message level' | tr -s ' \t' ' ')"
    check msglvl-default ethtool -s eth0 msglvl 0x7
    diag "wol_magic=$(answer ethtool -s eth0 wol g)"
    diag "wol_none=$(answer ethtool -s eth0 wol d)"
    diag "wol_phy=$(answer ethtool -s eth0 wol p)"
    diag "wol_shown=$(ethtool eth0 | grep Wake-on | tr -s ' \t' ' ' | tr '\n' '|')"
    # Each NIC's EEPROM holds its own Ethernet address (bytes 0-5) and checksum (the last word):
    # those are checked against the interface; the rest is compared.
    diag "eeprom=$(answer ethtool -e eth0 offset 6 length 120)"
    diag "eeprom_part=$(answer ethtool -e eth0 offset 7 length 9)"
    diag "eeprom_beyond=$(answer ethtool -e eth0 offset 128 length 4)"
    diag "eeprom_address=$(ethtool -e eth0 raw on | od -An -tx1 -N6 | tr -s ' \n' ':' | sed 's/^://; s/:$//')"
    diag "interface_address=$(cat /sys/class/net/eth0/address)"
    diag "eeprom_word_sum=$(ethtool -e eth0 raw on | od -An -tu2 -v | tr -s ' \n' '\n' | grep . |
        awk '{ sum = (sum + $1) % 65536 } END { printf "0x%04x", sum }')"
    # ethtool -E with the C driver's magic (vendor and device IDs): QEMU's model answers only the
    # Microwire read opcode, so the words read back unchanged after either driver's write.
    diag "eeprom_write=$(answer ethtool -E eth0 magic 0x100e8086 offset 0x10 value 0x5a)"
    diag "eeprom_write_words=$(printf 'abcd' | answer ethtool -E eth0 magic 0x100e8086 offset 0x21 length 4)"
    diag "eeprom_after_writes=$(answer ethtool -e eth0 offset 6 length 120)"
    diag "eeprom_write_bad_magic=$(answer ethtool -E eth0 magic 0x1234 offset 0x10 value 0x5a)"
    diag "eeprom_write_last=$(answer ethtool -E eth0 magic 0x100e8086 offset 127 value 0x5a)"
    diag "regs_size=$(ethtool -d eth0 raw on | wc -c)"
    # The PHY's part (type, specific status and control, error counts, 1000BASE-T status) and MANC.
    diag "regs_phy=$(regs_words 12 31)"
    diag "identify=$(answer ethtool -p eth0 1)"
    # Flow control: as negotiated with QEMU's partner, forced, and negotiated again.
    diag "pause=$(answer ethtool -a eth0)"
    diag "pause_forced_set=$(answer ethtool -A eth0 autoneg off rx on tx off)"
    diag "pause_forced=$(answer ethtool -a eth0)"
    diag "pause_none_set=$(answer ethtool -A eth0 autoneg on rx off tx off)"
    check carrier-after-pause-none carrier_up
    sleep 2
    diag "pause_none=$(answer ethtool -a eth0)"
    diag "pause_both_set=$(answer ethtool -A eth0 autoneg on rx on tx on)"
    check carrier-after-pause-both carrier_up
    sleep 2
    diag "pause_both=$(answer ethtool -a eth0)"
    link_answers
    # ethtool -t: online, the link test alone; offline, the interface goes down for the others
    # and comes back.
    diag "selftest_online=$(answer ethtool -t eth0 online)"
    diag "selftest_offline=$(answer ethtool -t eth0 offline)"
    check carrier-after-selftest carrier_up
}

# link_answers: what the driver answers to ethtool -s speed, duplex, autoneg, advertise and mdix,
# the settings after each (without MDI-X, which the C driver reads 2 s late), CTRL's speed and
# duplex bits (the dump's first word), and PHY Specific Control's crossover mode (word 17), as the
# host compares them between the drivers. QEMU's model reports 1000 Mb/s full duplex in STATUS
# whatever is forced: the speed shown is the model's. Each ethtool -s resets the adapter, and the
# link comes back when QEMU's model and the driver's watchdog get to it: settings are read once the
# carrier is back, or what they show depends on the machine's load.
link_answers() {
    diag "link_forced_10_half_set=$(answer ethtool -s eth0 speed 10 duplex half autoneg off)"
    check carrier-after-forced-10-half carrier_up
    diag "link_forced_10_half=$(link_settings)"
    diag "link_forced_10_half_ctrl=$(regs_words 0 0)"
    diag "pause_forced_link=$(answer ethtool -a eth0)"
    diag "link_forced_100_full_set=$(answer ethtool -s eth0 speed 100 duplex full)"
    check carrier-after-forced-100-full carrier_up
    diag "link_forced_100_full=$(link_settings)"
    diag "link_forced_100_full_ctrl=$(regs_words 0 0)"
    diag "link_forced_1000_half_set=$(answer ethtool -s eth0 speed 1000 duplex half)"
    diag "link_forced_mdix_set=$(answer ethtool -s eth0 mdix on)"
    diag "link_advertise_100_full_set=$(answer ethtool -s eth0 autoneg on advertise 0x008)"
    check carrier-after-advertise carrier_up
    diag "link_advertise_100_full=$(link_settings)"
    diag "link_advertise_100_full_ctrl=$(regs_words 0 0)"
    diag "link_advertise_unknown_set=$(answer ethtool -s eth0 advertise 0x1000)"
    check carrier-after-advertise-unknown carrier_up
    diag "link_advertise_unknown=$(link_settings)"
    diag "link_half_only_set=$(answer ethtool -s eth0 duplex half)"
    diag "link_ten_only_set=$(answer ethtool -s eth0 speed 10)"
    check carrier-after-ten-only carrier_up
    diag "link_ten_only=$(link_settings)"
    diag "link_mdix_on_set=$(answer ethtool -s eth0 mdix on)"
    diag "link_mdix_on_pscr=$(regs_words 17 17)"
    diag "link_restore_set=$(answer ethtool -s eth0 mdix auto autoneg on advertise 0x02f)"
    check carrier-after-link-restore carrier_up
    diag "link_restored=$(link_settings)"
    diag "link_restored_pscr=$(regs_words 17 17)"
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
    diag "rx_fcs_all=$(ethtool -k eth0 | grep -E '^rx-(fcs|all):' | tr -s ' \t' ' ' | tr '\n' '|')"
    diag "rx_fcs_all_on=$(answer ethtool -K eth0 rx-fcs on rx-all on)"
    diag "rx_fcs_all_shown=$(ethtool -k eth0 | grep -E '^rx-(fcs|all):' | tr -s ' \t' ' ' | tr '\n' '|')"
    diag "rx_fcs_all_off=$(answer ethtool -K eth0 rx-fcs off rx-all off)"
    # The C driver resets the adapter for rx-all, and its link comes back.
    check carrier-after-rx-features carrier_up
}

# The offload states each transfer runs in: the feature ethtool -K turns off for it ("all" is every
# one on).
# shellcheck disable=SC2034 # read by dut.sh and peer.sh
FEATURE_STATES="all rx tx sg tso"
