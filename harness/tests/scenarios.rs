//! Every scenario, in one test binary, so that `cargo test` can run two of them at once: each
//! scenario takes the host cores it keeps busy (`Scenario::cores`) and waits for them.
//!
//! `cargo test -p harness --test scenarios nvme_rs_timeouts` runs one file's scenarios.

mod debian_kernels;
mod dma_local_misuse;
mod dma_local_selftest;
mod e1000_rs;
mod e1000_rs_faults;
mod e1000_rs_hostile;
mod e1000_rs_parity;
mod harness_self_test;
mod nvme_rs;
mod nvme_rs_bounce;
mod nvme_rs_faults;
mod nvme_rs_formats;
mod nvme_rs_hostile;
mod nvme_rs_namespaces;
mod nvme_rs_parity;
mod nvme_rs_timeouts;
mod readme_walkthrough;
mod smoke;
mod template_edu;

/// Every test file is a module of this binary (the crate has `autotests = false`): a file left out
/// would never run.
#[test]
fn every_test_file_is_listed_here() {
    let listed = include_str!("scenarios.rs");
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests");
    for entry in std::fs::read_dir(dir).expect("the tests directory") {
        let path = entry.expect("an entry").path();
        let Some(name) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if path.extension().is_some_and(|e| e == "rs") && name != "scenarios" {
            assert!(
                listed.contains(&format!("\nmod {name};\n")),
                "tests/{name}.rs is not a module of tests/scenarios.rs: it would never run"
            );
        }
    }
}
