//! e1000_rs end to end: two VMs joined by a UDP socket netdev pair on 127.0.0.1; the DUT runs
//! e1000_rs, the peer the C e1000.

use harness::{Qmp, Scenario, SocketLink, Vm};

const E1000_C: &str = "drivers/net/ethernet/intel/e1000/e1000.ko";

/// Guest helpers shared by both sides.
const COMMON: &str = include_str!("../guest/scenarios/e1000_rs/common.sh");

fn scenario(name: &str, dut_script: &str, peer_script: &str) -> Scenario {
    let link = SocketLink::new().expect("a free port");
    let dut = Vm::new("dut")
        .memory_mib(768)
        .module("drivers/e1000_rs")
        .bios_irq_routing()
        .tool("netpipe")
        .tool("pingpair")
        .tool("rawframes")
        .nic("e1000", link.end_a())
        .script(&format!("{COMMON}{dut_script}"))
        .timeout(std::time::Duration::from_secs(900));
    let peer = Vm::new("peer")
        .memory_mib(768)
        .kernel_module(E1000_C)
        .tool("rawframes")
        .tool("netpipe")
        .nic("e1000", link.end_b())
        .script(&format!("{COMMON}{peer_script}"))
        .timeout(std::time::Duration::from_secs(900));
    Scenario::new(name).vm(dut).vm(peer)
}

/// The DUT's part: every check of the issue, in order.
const DUT_SCRIPT: &str = include_str!("../guest/scenarios/e1000_rs/dut.sh");

/// The peer's part: C e1000, the other end of every check.
const PEER_SCRIPT: &str = include_str!("../guest/scenarios/e1000_rs/peer.sh");

/// The e1000's Interrupt Mask (IMS, BAR0 + 0xd0), read through QEMU's monitor: BAR0's address
/// from `info pci`, then the register with `xp`, which QEMU serves from the device model.
fn interrupt_mask(qmp: &mut Qmp) -> harness::Result<u32> {
    let pci = qmp.human_monitor("info pci")?;
    let bar0 = pci
        .split("Bus ")
        .find(|device| device.contains("8086:100e"))
        .and_then(|device| device.split("BAR0: 32 bit memory at ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|hex| u64::from_str_radix(hex.trim_start_matches("0x"), 16).ok())
        .ok_or_else(|| harness::err!("no e1000 BAR0 in 'info pci':\n{pci}"))?;
    let answer = qmp.human_monitor(&format!("xp /1wx {:#x}", bar0 + 0xd0))?;
    answer
        .rsplit(": ")
        .next()
        .and_then(|value| u32::from_str_radix(value.trim().trim_start_matches("0x"), 16).ok())
        .ok_or_else(|| harness::err!("cannot read IMS from '{answer}'"))
}

#[test]
fn e1000_rs_against_the_c_e1000() {
    let outcome = scenario("e1000-rs", DUT_SCRIPT, PEER_SCRIPT)
        .on_request("dut", "interrupts-masked", |qmp| {
            match interrupt_mask(qmp)? {
                0 => Ok(()),
                ims => Err(harness::err!("IMS is {ims:#x} after ip link set down")),
            }
        })
        .on_request("dut", "interrupts-unmasked", |qmp| {
            match interrupt_mask(qmp)? {
                0 => Err(harness::err!("IMS is 0 on an open, idle interface")),
                _ => Ok(()),
            }
        })
        .on_request("dut", "link-down", |qmp| qmp.set_link("net0", false))
        .on_request("dut", "link-up", |qmp| qmp.set_link("net0", true))
        .on_request("dut", "unplug", |qmp| qmp.device_del("nic0"))
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
    let (dut, peer) = (outcome.vm("dut"), outcome.vm("peer"));
    assert_eq!(
        dut.diagnostic("dut_sent_sha"),
        peer.diagnostic("peer_received_sha"),
        "DUT -> peer bytes"
    );
    assert_eq!(
        peer.diagnostic("peer_sent_sha"),
        dut.diagnostic("dut_received_sha"),
        "peer -> DUT bytes"
    );
    assert_eq!(
        dut.diagnostic("dut_received_sha").len(),
        64,
        "a sha256 was computed"
    );
    assert_eq!(
        peer.diagnostic("dut_mac"),
        dut.diagnostic("mac"),
        "the EEPROM address is the one on the wire"
    );
    let counted = |key: &str| {
        let value = dut.diagnostic(key);
        value
            .parse::<u64>()
            .unwrap_or_else(|e| panic!("{key}={value:?}: {e}"))
    };
    assert_eq!(
        counted("rx_length_errors"),
        10,
        "oversize frames counted as length errors"
    );
    // Frames of an unknown ethertype: the stack drops them and counts them in rx_dropped (other
    // drops may join them, never fewer).
    assert!(
        counted("rx_dropped") >= 10,
        "unknown ethertype frames counted as dropped"
    );
    assert_eq!(
        counted("ip_in_hdr_errors"),
        10,
        "runt IPv4 frames dropped by IP"
    );
    // The stack checks these itself (the default receive path maps socket buffers and reports no
    // sum); the copying variant's CHECKSUM_COMPLETE sums are checked by its transfer below, where a
    // wrong one would show as "hw csum failure".
    assert_eq!(
        counted("udp_in_csum_errors"),
        10,
        "UDP datagrams with a wrong checksum dropped and counted"
    );
    // The counters count packets on the wire, as the C driver does: a segmentation offload frame
    // is as many packets as it becomes, each with its headers. At a 1500-byte MTU a TCP segment
    // carries at most 1460 payload bytes after at least 54 bytes of Ethernet, IPv4 and TCP headers.
    let (sent, min_packets) = (64u64 << 20, (64u64 << 20).div_ceil(1460));
    assert!(
        counted("tx_packets_64MiB") >= min_packets,
        "tx_packets counts segments: {} for 64 MiB",
        counted("tx_packets_64MiB")
    );
    assert!(
        counted("tx_bytes_64MiB") >= sent + 54 * min_packets,
        "tx_bytes counts every segment's headers: {} for 64 MiB",
        counted("tx_bytes_64MiB")
    );
    // The peer's 20 frames of 1514 bytes to one address each time; besides them the DUT
    // receives only its few control messages (549 bytes in a run), so a single frame shows.
    let (frame, frames) = (1514, 20);
    for key in [
        "foreign_rx_bytes_filtered",
        "foreign_rx_bytes_filtered_again",
        "multicast_rx_bytes_not_joined",
        "secondary_rx_bytes_removed",
        "foreign_rx_bytes_all_unicast_off",
    ] {
        assert!(
            counted(key) < frame,
            "frames to an address not the DUT's filtered: {key}={}",
            counted(key)
        );
    }
    for key in [
        "foreign_rx_bytes_promiscuous",
        "multicast_rx_bytes_joined",
        "secondary_rx_bytes",
        "secondary_rx_bytes_moved",
        "foreign_rx_bytes_all_unicast",
    ] {
        assert!(
            counted(key) >= frames * frame,
            "frames the filter passes received: {key}={}",
            counted(key)
        );
    }
    assert_eq!(dut.diagnostic("cycles"), "100");
    assert_eq!(
        dut.diagnostic("copy_sent_sha"),
        peer.diagnostic("peer_copy_received_sha"),
        "DUT -> peer bytes, copying variant"
    );
    assert_eq!(
        peer.diagnostic("peer_copy_sent_sha"),
        dut.diagnostic("copy_received_sha"),
        "peer -> DUT bytes, copying variant"
    );
}
