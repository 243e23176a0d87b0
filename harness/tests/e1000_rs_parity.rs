//! e1000_rs as users' tools see it, against the C e1000 on the other end of a UDP socket link on
//! 127.0.0.1: Debian's ethtool (`-i`, link settings with MDI-X and `-s` speed, duplex,
//! advertisement and crossover, `-g`/`-G`, `-S`, `-k`/`-K` with
//! `rx-all` and `rx-fcs`, `-r`, `-a`/`-A`, `-s msglvl`, `-s wol`, `-e`/`-E`, `-d`, `-p`, `-t`)
//! and
//! iproute2's `ip` (MTU and jumbo frames, 802.1Q VLANs), then a transmit hang that the
//! watchdog's reset cures.
//! Wherever both drivers answer the same command, the host compares their answers.

use harness::{Scenario, SocketLink, Vm};

const E1000_C: &str = "drivers/net/ethernet/intel/e1000/e1000.ko";
const COMMON: &str = concat!(
    include_str!("../guest/scenarios/e1000_rs/common.sh"),
    include_str!("../guest/scenarios/e1000_rs_parity/common.sh")
);
const DUT_SCRIPT: &str = include_str!("../guest/scenarios/e1000_rs_parity/dut.sh");
const PEER_SCRIPT: &str = include_str!("../guest/scenarios/e1000_rs_parity/peer.sh");

/// A VM with Debian's ethtool and iproute2 beside busybox.
fn vm(name: &str, script: &str) -> Vm {
    Vm::new(name)
        .memory_mib(768)
        .bios_irq_routing()
        .host_program("/usr/sbin/ethtool")
        .host_program("/usr/sbin/ip")
        .tool("netpipe")
        .tool("rawframes")
        .script(&format!("{COMMON}{script}"))
        .timeout(std::time::Duration::from_secs(900))
}

#[test]
fn e1000_rs_ethtool_mtu_vlan_and_reset_against_the_c_e1000() {
    let link = SocketLink::new().expect("a free port");
    let dut = vm("dut", DUT_SCRIPT)
        .module("drivers/e1000_rs")
        .tool("mmio")
        .nic("e1000", link.end_a());
    let peer = vm("peer", PEER_SCRIPT)
        .kernel_module(E1000_C)
        .nic("e1000", link.end_b());
    let outcome = Scenario::new("e1000-rs-parity")
        .vm(dut)
        .vm(peer)
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
    let (dut, peer) = (outcome.vm("dut"), outcome.vm("peer"));
    let count = |vm: &harness::VmOutcome, key: &str| -> u64 {
        let value = vm.diagnostic(key);
        value
            .parse()
            .unwrap_or_else(|e| panic!("{key}={value:?}: {e}"))
    };

    // What both drivers answer alike.
    for key in [
        "link_settings",
        "rings",
        "rings_rounded",
        "rings_too_large",
        "rings_after_refusal",
        "mtu_too_large",
        "mtu_too_small",
        "vlan_features",
        "vlan_features_off",
        "txvlan_off",
        "vlan_filter_off",
        "features_after_refusals",
        "rx_fcs_all",
        "rx_fcs_all_on",
        "rx_fcs_all_shown",
        "rx_fcs_all_off",
        "settings_full",
        "msglvl_set",
        "msglvl_shown",
        "msglvl_named",
        "msglvl_after_named",
        "wol_magic",
        "wol_none",
        "wol_phy",
        "wol_shown",
        "eeprom",
        "eeprom_part",
        "eeprom_beyond",
        "eeprom_write",
        "eeprom_write_words",
        "eeprom_after_writes",
        "eeprom_write_bad_magic",
        "eeprom_write_last",
        "regs_size",
        "regs_phy",
        "identify",
        "pause",
        "pause_forced_set",
        "pause_forced",
        "pause_none_set",
        "pause_none",
        "pause_both_set",
        "pause_both",
        "link_forced_10_half_set",
        "link_forced_10_half",
        "pause_forced_link",
        "link_forced_100_full_set",
        "link_forced_100_full",
        "link_forced_1000_half_set",
        "link_forced_mdix_set",
        "link_advertise_100_full_set",
        "link_advertise_100_full",
        "link_advertise_unknown_set",
        "link_advertise_unknown",
        "link_half_only_set",
        "link_ten_only_set",
        "link_ten_only",
        "link_mdix_on_set",
        "link_mdix_on_pscr",
        "link_restore_set",
        "link_restored",
        "link_restored_pscr",
        "selftest_online",
    ] {
        assert_eq!(
            dut.diagnostic(key),
            peer.diagnostic(key),
            "{key}: e1000_rs / C e1000"
        );
    }
    // ethtool -s: CTRL's force bits, speed and duplex, as C sets them (FRCSPD, FRCDPX, SPEED,
    // FD, ASDE), and forcing taken back by negotiating again.
    let link_bits = |vm: &harness::VmOutcome, key: &str| -> u32 {
        let word = vm.diagnostic(key);
        u32::from_str_radix(word.trim(), 16).unwrap_or_else(|e| panic!("{key}={word:?}: {e}"))
            & 0x1b21
    };
    for (key, bits) in [
        ("link_forced_10_half_ctrl", 0x1800),
        ("link_forced_100_full_ctrl", 0x1901),
    ] {
        assert_eq!(link_bits(dut, key), bits, "{key}: CTRL of e1000_rs");
        assert_eq!(link_bits(peer, key), bits, "{key}: CTRL of the C e1000");
    }
    assert_eq!(
        link_bits(dut, "link_advertise_100_full_ctrl") & 0x1800,
        link_bits(peer, "link_advertise_100_full_ctrl") & 0x1800,
        "negotiating again: the force bits"
    );
    assert!(
        dut.diagnostic("link_forced_10_half")
            .contains("Auto-negotiation: off|")
            && dut
                .diagnostic("link_advertise_100_full")
                .contains("Advertised link modes: 100baseT/Full|")
            && !dut
                .diagnostic("link_forced_1000_half_set")
                .ends_with(" rc=0"),
        "forced, advertised, refused: {} / {} / {}",
        dut.diagnostic("link_forced_10_half"),
        dut.diagnostic("link_advertise_100_full"),
        dut.diagnostic("link_forced_1000_half_set")
    );
    // ethtool -mdix on: PHY Specific Control's crossover mode forced to MDI-X (bits 6:5 = 01),
    // automatic again (11) after mdix auto.
    let crossover = |key: &str| -> u32 {
        let word = dut.diagnostic(key);
        u32::from_str_radix(word.trim(), 16).unwrap_or_else(|e| panic!("{key}={word:?}: {e}")) >> 5
            & 3
    };
    assert_eq!(crossover("link_mdix_on_pscr"), 1, "mdix on: manual MDI-X");
    assert_eq!(
        crossover("link_restored_pscr"),
        3,
        "mdix auto: automatic crossover"
    );
    // ethtool -t offline: each test's result, as "name result" pairs.
    let self_test = |vm: &harness::VmOutcome| -> Vec<(String, String)> {
        vm.diagnostic("selftest_offline")
            .split('|')
            .filter_map(|line| line.rsplit_once(' '))
            .filter(|(name, _)| name.contains(" test ("))
            .map(|(name, result)| (name.trim().to_string(), result.to_string()))
            .collect()
    };
    let (rs_tests, c_tests) = (self_test(dut), self_test(peer));
    assert_eq!(rs_tests.len(), 5, "five offline results: {rs_tests:?}");
    for ((name, rs), (c_name, c)) in rs_tests.iter().zip(&c_tests) {
        assert_eq!(name, c_name, "the tests in C's order");
        if name.starts_with("Loopback") {
            // QEMU's model drops what arrives in the second after an RCTL write, the C driver's
            // test waits 200 ms and fails (13); e1000_rs waits that second out.
            assert_eq!(rs, "0", "loopback through the PHY: e1000_rs / C {c}");
        } else {
            assert_eq!(rs, c, "{name}: e1000_rs / C e1000");
        }
    }
    assert!(
        dut.diagnostic("link_settings")
            .contains("Speed: 1000Mb/s| Duplex: Full|"),
        "the link as STATUS reports it: {}",
        dut.diagnostic("link_settings")
    );
    assert!(
        dut.diagnostic("rings_rounded").contains("RX: 104|")
            && !dut.diagnostic("rings_too_large").ends_with(" rc=0")
            && !dut.diagnostic("mtu_too_large").ends_with(" rc=0")
            && !dut.diagnostic("mtu_too_small").ends_with(" rc=0"),
        "rounded and refused ring sizes and MTUs: {} / {} / {} / {}",
        dut.diagnostic("rings_rounded"),
        dut.diagnostic("rings_too_large"),
        dut.diagnostic("mtu_too_large"),
        dut.diagnostic("mtu_too_small")
    );
    assert!(
        dut.diagnostic("rings_resized").contains("RX: 1024|")
            && dut.diagnostic("rings_resized").contains("TX: 64|"),
        "ethtool -G under traffic took: {}",
        dut.diagnostic("rings_resized")
    );
    let c_names: Vec<&str> = peer.diagnostic("stat_names").split_whitespace().collect();
    let rs_names: Vec<&str> = dut.diagnostic("stat_names").split_whitespace().collect();
    assert!(rs_names.len() >= 20, "ethtool -S names: {rs_names:?}");
    for name in &rs_names {
        assert!(c_names.contains(name), "{name} is not a C e1000 statistic");
    }

    // ethtool -S against the wire: the statistics registers count the peer's 50 broadcasts, and
    // the C driver the DUT's 40, give or take an ARP request or two.
    for (vm, key, frames) in [
        (dut, "rx_broadcast_delta", 50),
        (dut, "tx_broadcast_delta", 40),
        (peer, "peer_rx_broadcast_delta", 40),
    ] {
        let counted = count(vm, key);
        assert!(
            (frames..=frames + 4).contains(&counted),
            "{key}: {counted} for {frames} broadcasts"
        );
    }
    assert!(
        count(dut, "rx_packets_delta") >= 50,
        "rx_packets counts the broadcasts"
    );
    // The device's count of what it sent and the driver's own, over 20 pings (and what else
    // crossed meanwhile: a neighbour message may fall between the two reads).
    let (hw, driver) = (
        count(dut, "tx_packets_hw_delta"),
        count(dut, "tx_packets_driver_delta"),
    );
    assert!(
        hw >= 20 && hw.abs_diff(driver) <= 2,
        "tx_packets: hardware {hw}, driver {driver}"
    );

    // ethtool -K: every state shown as asked, and both transfers intact in it.
    for off in ["all", "rx", "tx", "sg", "tso"] {
        let features = dut.diagnostic(&format!("features_{off}"));
        let expect_off = match off {
            "rx" => "rx-checksumming: off",
            "tx" => "tx-checksumming: off",
            "sg" => "scatter-gather: off",
            "tso" => "tcp-segmentation-offload: off",
            _ => "",
        };
        // Turning checksums or scatter-gather off turns segmentation off too (the stack's rule).
        let shown = if off == "all" {
            features.matches(": on").count() == 4
        } else {
            features.contains(expect_off)
        };
        assert!(shown, "features with {off} off: {features}");
        assert_eq!(
            peer.diagnostic(&format!("peer_received_sha_{off}")),
            dut.diagnostic("dut_sent_sha"),
            "DUT -> peer with {off} off"
        );
        assert_eq!(
            dut.diagnostic(&format!("dut_received_sha_{off}")),
            peer.diagnostic("peer_sent_sha"),
            "peer -> DUT with {off} off"
        );
    }

    // Each EEPROM holds its NIC's address and sums to the 8254x's checksum, 0xBABA.
    for vm in [dut, peer] {
        assert_eq!(
            vm.diagnostic("eeprom_address"),
            vm.diagnostic("interface_address"),
            "{}: the EEPROM's Ethernet address",
            vm.name
        );
        assert_eq!(
            vm.diagnostic("eeprom_word_sum"),
            "0xbaba",
            "{}: the EEPROM's checksum",
            vm.name
        );
    }
    // The message level, identification and the register dump take effect on e1000_rs.
    assert!(
        dut.diagnostic("settings_full")
            .contains("MDI-X: off (auto)")
            && dut.diagnostic("msglvl_shown").contains("0x00000003"),
        "MDI-X and the message level in ethtool eth0: {} / {}",
        dut.diagnostic("settings_full"),
        dut.diagnostic("msglvl_shown")
    );
    assert_eq!(
        (
            count(dut, "link_messages_unlogged"),
            count(dut, "link_messages_logged")
        ),
        (0, 1),
        "\"link up\" is logged after a restart only with the link message class"
    );
    let before = dut.diagnostic("ledctl_before");
    let modes: Vec<u32> = dut
        .diagnostic("ledctl_identifying")
        .split_whitespace()
        .map(|v| u32::from_str_radix(v.trim_start_matches("0x"), 16).expect("a hex LEDCTL"))
        .collect();
    assert_eq!(
        modes.len(),
        2,
        "ethtool -p alternates between two LED modes besides the configured one ({before}): \
         {modes:x?}"
    );
    assert_eq!(
        dut.diagnostic("ledctl_after"),
        before,
        "LEDCTL after ethtool -p"
    );
    assert_eq!(
        [
            dut.diagnostic("fc_forced_rx"),
            dut.diagnostic("fc_negotiated_none"),
            dut.diagnostic("fc_negotiated_both"),
        ],
        ["1", "0", "1"],
        "CTRL.RFCE (1) and TFCE (2) after ethtool -A: forced rx, negotiated none, negotiated both"
    );
    assert_eq!(
        dut.diagnostic("rdtr_dumped"),
        "0000002a",
        "ethtool -d shows RDTR as written through BAR0"
    );

    // Transfers through ring resizes, at MTU 9000 and through MTU changes.
    let dut_sent = dut.diagnostic("dut_sent_sha_16");
    let peer_sent = peer.diagnostic("peer_sent_sha_16");
    assert_eq!(
        peer.diagnostic("peer_received_sha_16"),
        dut_sent,
        "DUT -> peer while resizing"
    );
    assert_eq!(
        dut.diagnostic("dut_received_sha_16"),
        peer_sent,
        "peer -> DUT while resizing"
    );
    assert_eq!(
        peer.diagnostic("peer_received_sha_jumbo"),
        dut_sent,
        "DUT -> peer at MTU 9000"
    );
    assert_eq!(
        dut.diagnostic("dut_received_sha_jumbo"),
        peer_sent,
        "peer -> DUT at MTU 9000"
    );
    assert_eq!(
        peer.diagnostic("peer_received_sha_mtu_changes"),
        dut_sent,
        "DUT -> peer through MTU changes"
    );
    assert!(
        count(dut, "rx_bytes_per_packet_jumbo") > 3000,
        "jumbo frames arrived: {} bytes a frame",
        count(dut, "rx_bytes_per_packet_jumbo")
    );
    assert_eq!(
        count(dut, "rx_length_errors_jumbo"),
        10,
        "frames longer than MTU 9000's dropped and counted"
    );
    // 802.1Q: a transfer each way on VLAN 5; VLAN 5's frames reach the driver, VLAN 7's do not.
    assert_eq!(
        peer.diagnostic("peer_received_sha_vlan"),
        dut_sent,
        "DUT -> peer on VLAN 5"
    );
    assert_eq!(
        dut.diagnostic("dut_received_sha_vlan"),
        peer_sent,
        "peer -> DUT on VLAN 5"
    );
    assert!(
        dut.diagnostic("vlan_features")
            .contains("rx-vlan-offload: on")
            && dut
                .diagnostic("vlan_features_off")
                .contains("tx-vlan-offload: off"),
        "tags offloaded, insertion following stripping: {} / {}",
        dut.diagnostic("vlan_features"),
        dut.diagnostic("vlan_features_off")
    );
    // Frames the VLAN interface received and the stack dropped, while the peer sent 20 of VLAN 5,
    // 20 of VLAN 7, and 20 of VLAN 7 again with the DUT promiscuous (the filter off: the control).
    let window = |key: &str| -> (u64, u64) {
        let text = dut.diagnostic(key);
        let field = |name: &str| -> u64 {
            text.split_whitespace()
                .find_map(|pair| pair.strip_prefix(name))
                .and_then(|value| value.parse().ok())
                .unwrap_or_else(|| panic!("{key}={text:?}: no {name}"))
        };
        (field("vlan5="), field("dropped="))
    };
    let (vlan5, _) = window("vlan5_window");
    let (vlan7_received, vlan7_dropped) = window("vlan7_window");
    let (_, unfiltered_dropped) = window("vlan7_promiscuous_window");
    assert_eq!(vlan5, 20, "VLAN 5's 20 frames reach eth0.5");
    assert!(
        vlan7_received == 0 && vlan7_dropped <= 2,
        "VLAN 7's 20 frames stopped by the filter: {vlan7_dropped} reached the stack"
    );
    assert!(
        unfiltered_dropped >= 20,
        "unfiltered, VLAN 7's 20 frames reach the stack: {unfiltered_dropped} dropped there"
    );
    // rx-all: the MAC passes VLAN 7's frames and 1600-byte frames at MTU 1500, and stops them
    // again once it is off.
    assert!(
        dut.diagnostic("rx_fcs_all").contains("rx-all: off")
            && dut.diagnostic("rx_fcs_all_shown").contains("rx-all: on")
            && dut.diagnostic("rx_fcs_all_shown").contains("rx-fcs: on"),
        "rx-fcs and rx-all offered, off, then on: {} / {}",
        dut.diagnostic("rx_fcs_all"),
        dut.diagnostic("rx_fcs_all_shown")
    );
    for (key, reach) in [
        ("long_window", false),
        ("long_rx_all_window", true),
        ("vlan7_rx_all_window", true),
        ("vlan7_rx_all_off_window", false),
    ] {
        let (_, dropped) = window(key);
        if reach {
            assert!(
                dropped >= 20,
                "{key}: the 20 frames reach the stack: {dropped}"
            );
        } else {
            assert!(
                dropped <= 2,
                "{key}: the 20 frames stopped by the MAC: {dropped}"
            );
        }
    }
    // rx-fcs: a packet socket sees the peer's 100-byte frames, and with rx-fcs on, their FCS too.
    let lengths = |key: &str| -> String {
        let text = dut.diagnostic(key);
        text.split(';')
            .map(str::trim)
            .filter(|pair| !pair.is_empty())
            .collect::<Vec<_>>()
            .join(";")
    };
    assert_eq!(
        lengths("lengths_without_fcs"),
        "20 100",
        "frames without their FCS"
    );
    assert_eq!(
        lengths("lengths_with_fcs"),
        "20 104",
        "frames with their FCS"
    );

    assert_eq!(
        peer.diagnostic("peer_received_sha_copying_jumbo"),
        dut_sent,
        "DUT -> peer copying, at MTU 9000"
    );
    assert_eq!(
        dut.diagnostic("dut_received_sha_copying_jumbo"),
        peer_sent,
        "peer -> DUT copying, at MTU 9000"
    );

    // Suspend and resume, and shutdown.
    assert_eq!(
        peer.diagnostic("peer_received_sha_resumed"),
        dut_sent,
        "DUT -> peer after resume"
    );
    assert!(
        dut.console.contains("e1000_rs") && dut.console.contains(": shut down"),
        "the shutdown callback ran at the reboot"
    );

    assert!(
        count(dut, "tx_timeout_count") >= 1,
        "the watchdog's timeout counted"
    );
}
