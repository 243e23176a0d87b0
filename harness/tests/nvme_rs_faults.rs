//! nvme_rs when allocations fail: its probe (controller bring-up, queues, tag set, disks) with
//! allocations failing in turn (the kernel's fail-nth fault injection). Every attempt either
//! succeeds with its disk or fails with nothing left behind: no disk, the PCI function disabled, no
//! leak (kmemleak), no DMA-API or other report. Afterwards the driver binds and its disk reads back
//! what was written.
//!
//! A probe of a controller with one namespace makes about 900 allocations, most of them in the
//! block layer's disk set-up, so by default every [`STEP`]-th allocation fails (about 25 s);
//! `RDD_FAULT_STEP=1` fails each one in turn (about 2 minutes).
//!
//! And when an admin command never completes: each of the first admin commands of the
//! controller's life times out in turn (a test-only parameter of the driver ignores its
//! completion), in probe and in removal alike.

use harness::{
    nvme::{self, BIND_ALTERNATELY},
    Drive, Scenario,
};

/// Fail allocation 1, 1 + STEP, 1 + 2 * STEP, ...
const STEP: u32 = 7;

const SCRIPT: &str = include_str!("../guest/scenarios/nvme_rs_faults/guest.sh");

#[test]
fn nvme_rs_fails_cleanly_at_allocations() {
    let step = harness::fault_step(STEP);
    let vm = nvme::vm("guest")
        .nvme(vec![Drive::Raw { size: 64 << 20 }])
        // Failing allocations in the guest's ACPI interpreter while it routes INTx can corrupt
        // its reference counts (ACPICA's error path; a later pci_disable_device faulted in
        // acpi_ut_update_object_reference); the BIOS's routing table keeps ACPI out of it.
        .bios_irq_routing()
        .excuses_irq_proc_warning()
        .script(&format!("{BIND_ALTERNATELY}FAULT_STEP={step}\n{SCRIPT}"))
        .timeout(std::time::Duration::from_secs(3600));
    Scenario::new("nvme-rs-faults")
        .on_kasan_kernel()
        .vm(vm)
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
}

const ADMIN_TIMEOUTS_SCRIPT: &str =
    include_str!("../guest/scenarios/nvme_rs_faults/admin-timeouts.sh");

/// Admin commands of the controller's life on a 2-vCPU VM with one namespace: Identify
/// (controller, NVM command set), Get Log Page (command effects), Set Features (Number of Queues),
/// Create I/O CQ and SQ for each of 2 queues, Doorbell Buffer Config, Identify (active namespaces,
/// the namespace, its identifiers); then the event handler's Set Features (Asynchronous Event
/// Configuration) and Asynchronous Event Request; at removal, Delete I/O SQ and CQ of the first
/// queue (once one times out, the others are not sent).
const ADMIN_COMMANDS: u32 = 16;
/// Which of them is the Asynchronous Event Request, which is answered only at an event: losing its
/// completion changes nothing.
const ASYNC_EVENT_REQUEST: u32 = 14;

/// Every opcode of those: Identify, Get Log Page, Set Features, Create I/O CQ/SQ, Doorbell Buffer
/// Config, Delete I/O SQ/CQ.
const OPCODES: [&str; 8] = ["0x6", "0x2", "0x9", "0x5", "0x1", "0x7c", "0x0", "0x4"];

#[test]
fn nvme_rs_survives_admin_timeouts() {
    let vm = nvme::vm("guest")
        .nvme(vec![Drive::Raw { size: 64 << 20 }])
        .script(&format!(
            "{BIND_ALTERNATELY}ADMIN_COMMANDS={ADMIN_COMMANDS}\n\
             ASYNC_EVENT_REQUEST={ASYNC_EVENT_REQUEST}\n{ADMIN_TIMEOUTS_SCRIPT}"
        ))
        .timeout(std::time::Duration::from_secs(300));
    let outcome = Scenario::new("nvme-rs-admin-timeouts")
        .on_kasan_kernel()
        .vm(vm)
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
    let timed_out: Vec<&str> = outcome
        .vm("guest")
        .diagnostic("timed_out_opcodes")
        .split_whitespace()
        .collect();
    for opcode in OPCODES {
        assert!(
            timed_out.contains(&opcode),
            "no admin command with opcode {opcode} timed out: {timed_out:?}"
        );
    }
}
