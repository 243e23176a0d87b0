//! The contracts of `dma_local` (template/src/dma_local.rs), checked in the guest against a bound
//! PCI device with DMA-API debugging on: the self-test module reports one KTAP line a contract, and
//! each one becomes a result of this scenario.

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
    assert_eq!(
        guest.diagnostic("plan"),
        CONTRACTS.len().to_string(),
        "the module's plan"
    );
    for contract in CONTRACTS {
        guest.assert_passed(&format!("dma_local.{contract}"));
    }
}
