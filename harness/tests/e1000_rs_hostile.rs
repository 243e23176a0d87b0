//! e1000_rs when its device stops answering, under traffic both ways: the function's Memory Space
//! and Bus Master Enable cleared behind the driver's back for seven seconds (QEMU then reads 0 from
//! the BAR and drops writes), past the transmit watchdog, whose reset must not free rings the
//! device still holds; and the driver's own `fail_mmio_read` fault attribute, with which every
//! register read returns all ones, as a device gone from the bus reads. Statistics (`ethtool -S`,
//! `ip -s link`, sysfs), a ring resize, the interface going down and up, remove and probe must
//! neither panic nor warn; the driver says once that the device does not answer; after a rebind
//! frames cross again. The C e1000 on the hub's other NIC goes through the same Command register
//! change, for comparison (it has no such fault attribute).
//!
//! One VM, two e1000 NICs on a QEMU hub: the first bound to e1000_rs, the second to the C e1000.

use harness::{NetBackend, Scenario, Vm};

const SCRIPT: &str = include_str!("../guest/scenarios/e1000_rs_hostile/guest.sh");

#[test]
fn e1000_rs_survives_a_device_that_stops_answering() {
    Scenario::new("e1000-rs-hostile")
        .on_kasan_kernel()
        .vm(Vm::new("guest")
            .memory_mib(768)
            .module("drivers/e1000_rs")
            .kernel_module("drivers/net/ethernet/intel/e1000/e1000.ko")
            .bios_irq_routing()
            .host_program("/usr/sbin/ethtool")
            .host_program("/usr/sbin/ip")
            .tool("rawframes")
            .nic("e1000", NetBackend::Hub(0))
            .nic("e1000", NetBackend::Hub(0))
            .script(SCRIPT)
            .timeout(std::time::Duration::from_secs(300)))
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
}
