//! What the NVMe test, benchmark and demo share: the VM with both drivers and the guest shell that
//! binds them.

use crate::{Machine, Outcome, Scenario, Vm};

/// A q35 VM (every controller behind its own PCIe root port, so that it can be unplugged) with
/// nvme_rs, the C nvme driver and `blkio`; the caller adds the controllers and the script, which
/// starts with [`BIND_ALTERNATELY`].
pub fn vm(name: &str) -> Vm {
    with_c_driver(
        Vm::new(name)
            .machine(Machine::Q35)
            .memory_mib(1024)
            .module("drivers/nvme_rs"),
    )
}

/// `vm` with the C nvme driver's modules (what `load_c_nvme` loads) and `blkio`.
pub fn with_c_driver(vm: Vm) -> Vm {
    vm.kernel_module_if_built("drivers/nvme/common/nvme-keyring.ko")
        .kernel_module_if_built("drivers/nvme/common/nvme-auth.ko")
        .kernel_module("drivers/nvme/host/nvme-core.ko")
        .kernel_module("drivers/nvme/host/nvme.ko")
        .tool("blkio")
}

/// Binds NVMe controllers, in PCI address order, alternately to nvme_rs and to the C nvme driver
/// (through `driver_override`, before either driver loads), so that each pair of identical
/// controllers gets one of each. Exports `RS_PCI`/`C_PCI`, the first of each, and defines
/// `disk_of ADDRESS`, the first disk of the controller at that address under either driver, and
/// `load_c_nvme`, which loads the C driver with what it needs.
pub const BIND_ALTERNATELY: &str = include_str!("../guest/nvme-bind-alternately.sh");

/// Runs the scenario `name` with `vm`, the DUT ("dut", whose script runs [`BIND_ALTERNATELY`]),
/// and checks what every such scenario reports: the SHA-256 of the data read back through nvme_rs
/// (`rs_sha`) equals that through the C driver on the twin controller (`c_sha`).
pub fn run_against_the_c_driver(name: &str, vm: Vm) -> Outcome {
    let outcome = Scenario::new(name)
        .vm(vm)
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
    let dut = outcome.vm("dut");
    assert_eq!(dut.diagnostic("rs_sha"), dut.diagnostic("c_sha"));
    assert_eq!(dut.diagnostic("rs_sha").len(), 64, "a sha256 was computed");
    outcome
}
