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
mod smoke;
mod template_edu;
