//! e1000_rs when allocations fail: its probe, and then its open, with each allocation they make
//! failing in turn (the kernel's fail-nth fault injection). Every attempt either succeeds or fails
//! with nothing left behind: no interface, the PCI function disabled, no leak (kmemleak), no
//! DMA-API or other report. Afterwards the driver binds, opens and moves frames both ways, and when
//! the memory for its receive buffers runs out, it drops and counts frames and loses none, mapping
//! its receive buffers or copying out of them.
//!
//! One VM, two e1000 NICs on a QEMU hub: the first bound to e1000_rs, the second to the C e1000,
//! whose frames show the device still works.
//!
//! On the KASAN kernel, which is four to five times slower, every [`KASAN_STEP`]-th allocation of
//! the probe fails by default; `RDD_FAULT_STEP=1` fails each one in turn. The open's sweep fails
//! every allocation in turn on every kernel: the few whose failure fails the open lie among
//! hundreds, and a sample every fourth missed them all in one run. It runs with the smallest rings
//! (48 descriptors each, set with ethtool), so that the receive buffers' allocations, one site
//! repeated per descriptor, number 48 rather than 256.

use harness::{Env, Kernel, NetBackend, Scenario, Vm};

/// See the module's documentation.
const KASAN_STEP: u32 = 4;

const SCRIPT: &str = include_str!("../guest/scenarios/e1000_rs_faults/guest.sh");

#[test]
fn e1000_rs_fails_cleanly_at_each_allocation() {
    let kasan = Env::of(Kernel::Kasan).is_ok_and(|env| env.kernel == Kernel::Kasan);
    let step = harness::fault_step(if kasan { KASAN_STEP } else { 1 });
    Scenario::new("e1000-rs-faults")
        .on_kasan_kernel()
        .vm(Vm::new("guest")
            .memory_mib(768)
            .module("drivers/e1000_rs")
            .kernel_module("drivers/net/ethernet/intel/e1000/e1000.ko")
            .bios_irq_routing()
            .tool("rawframes")
            .host_program("/usr/sbin/ethtool")
            .nic("e1000", NetBackend::Hub(0))
            .nic("e1000", NetBackend::Hub(0))
            .script(&format!("FAULT_STEP={step}\n{SCRIPT}"))
            .timeout(std::time::Duration::from_secs(600)))
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
}
