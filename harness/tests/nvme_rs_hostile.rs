//! nvme_rs when its controller turns hostile or goes dark, against the C nvme driver on a twin
//! controller: an Identify Controller with an MDTS no shift can express, Memory Space and Bus
//! Master Enable cleared behind both drivers while I/O runs, a Controller Fatal Status seen by a
//! timeout handler, and registers that read all ones when a reset begins. What QEMU's controller
//! cannot produce comes from nvme_rs's fault injection points. No panic, Oops, KASAN or lockdep
//! report; after each, the driver works again (rebound where it gave the controller up), and the
//! C driver's controller is not disturbed.

use harness::{
    nvme::{self, BIND_ALTERNATELY},
    Drive, Scenario, MIB,
};

const SCRIPT: &str = include_str!("../guest/scenarios/nvme_rs_hostile/guest.sh");

#[test]
fn nvme_rs_survives_a_hostile_or_dark_controller() {
    let vm = nvme::vm("dut")
        .nvme(vec![Drive::Raw { size: 64 * MIB }])
        .nvme(vec![Drive::Raw { size: 64 * MIB }])
        .script(&format!("{BIND_ALTERNATELY}{SCRIPT}"))
        .timeout(std::time::Duration::from_secs(600));
    Scenario::new("nvme-rs-hostile")
        .on_kasan_kernel()
        .vm(vm)
        .on_request("dut", "throttle", |qmp| qmp.throttle("nvme0ns1", 1))
        .on_request("dut", "unthrottle", |qmp| qmp.throttle("nvme0ns1", 0))
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
}
