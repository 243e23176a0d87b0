//! The contracts of `dma_local` (template/src/dma_local.rs), checked in the guest against a bound
//! PCI device with DMA-API debugging on: the self-test module reports one KTAP line a contract, and
//! each one becomes a result of this scenario; so does each example of the wrapper's documentation,
//! which the module compiles from the doc comments and runs.

use harness::{Scenario, Vm};

/// Runs the self-test and turns its KTAP lines in the kernel log into results named
/// `dma_local.<test>`.
const SCRIPT: &str = include_str!("../guest/scenarios/dma_local_selftest/guest.sh");

/// Every contract the self-test module checks; a test that vanished from it fails here.
const CONTRACTS: &[&str] = &[
    "mask_bits_limits",
    "set_masks",
    "mapping_limits",
    "segment_limits",
    "barriers",
    "coherent_respects_mask",
    "coherent_zero_length_rejected",
    "coherent_size_overflow",
    "coherent_allocation_failure",
    "coherent_rejects_no_kernel_mapping",
    "coherent_rejects_cc_shared",
    "coherent_is_zeroed",
    "bounds_exact_edges",
    "bounds_offset_overflow",
    "bulk_round_trip_and_handles",
    "field_access_macros",
    "shared_write",
    "attrs_operators",
    "coherent_with_attrs",
    "streaming_map_view_unmap",
    "streaming_from_device_view_reads",
    "streaming_empty_rejected_buffer_returned",
    "mapping_of_foreign_memory",
    "mapping_of_pages",
    "pool_blocks",
    "noncoherent_views",
    "sg_table_map_segments_unmap",
    "enable_bus_master",
    "edu_sg_table_to_noncoherent",
    "edu_noncoherent_to_sg_table",
];

/// The parts of the wrapper whose documentation has an example, which the self-test compiles from
/// the doc comments and runs (`modules/dma_selftest/doc_examples.sh`): one vanished fails here.
const EXAMPLES_IN: &[&str] = &[
    "dma_local/coherent.rs",
    "dma_local/mapping.rs",
    "dma_local/mask.rs",
    "dma_local/noncoherent.rs",
    "dma_local/pool.rs",
    "dma_local/sg.rs",
    "dma_local/streaming.rs",
];

#[test]
fn dma_local_contracts_hold_on_a_bound_device() {
    let outcome = Scenario::new("dma-local-selftest")
        .on_kasan_kernel()
        .vm(Vm::new("guest")
            .edu()
            .module("modules/dma_selftest")
            .script(SCRIPT))
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
    let guest = outcome.vm("guest");
    let examples: Vec<&str> = guest
        .ktap
        .results
        .iter()
        .filter_map(|r| r.name.strip_prefix("dma_local.example:"))
        .collect();
    assert_eq!(
        guest.diagnostic("plan"),
        (CONTRACTS.len() + examples.len()).to_string(),
        "the module's plan: {} contracts and the examples {examples:?}",
        CONTRACTS.len()
    );
    for contract in CONTRACTS {
        guest.assert_passed(&format!("dma_local.{contract}"));
    }
    for part in EXAMPLES_IN {
        let example = examples
            .iter()
            .find(|e| e.starts_with(&format!("{part}:")))
            .unwrap_or_else(|| panic!("no example of {part} ran: {examples:?}"));
        guest.assert_passed(&format!("dma_local.example:{example}"));
    }
}
