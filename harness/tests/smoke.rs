//! The foundation's first scenario: an out-of-tree Rust module is built against the project's
//! kernel, loaded, exercised and unloaded, and the guest reports each step.

use harness::{Scenario, Vm};

/// The smoke module's pattern and checksum, computed on the host.
fn expected_fnv1a(len: usize) -> u32 {
    (0..len)
        .map(|i| (i.wrapping_mul(31) ^ (i >> 8)) as u8)
        .fold(0x811c_9dc5, |h, b| {
            (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
        })
}

const SMOKE_SCRIPT: &str = include_str!("../guest/scenarios/smoke/guest.sh");

#[test]
fn smoke_module_loads_computes_and_unloads() {
    let outcome = Scenario::new("smoke")
        .vm(Vm::new("guest")
            .module("modules/smoke")
            .script(SMOKE_SCRIPT))
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
    let guest = outcome.vm("guest");
    for step in ["load", "listed", "unload", "unloaded", "kmemleak"] {
        guest.assert_passed(step);
    }
    let expected = format!("len=12345 fnv1a={:#010x}", expected_fnv1a(12345));
    assert_eq!(
        guest.diagnostic("loaded"),
        expected,
        "checksum computed by the module at load"
    );
    assert_eq!(
        guest.diagnostic("unloaded"),
        expected,
        "checksum of the same buffer at unload"
    );
}
