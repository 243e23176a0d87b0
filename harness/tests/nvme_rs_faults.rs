//! nvme_rs when allocations fail: its probe (controller bring-up, queues, tag set, disks) with
//! allocations failing in turn (the kernel's fail-nth fault injection). Every attempt either
//! succeeds with its disk or fails with nothing left behind: no disk, the PCI function disabled, no
//! leak (kmemleak), no DMA-API or other report. Afterwards the driver binds and its disk reads back
//! what was written.
//!
//! A probe of a controller with one namespace makes about 900 allocations, most of them in the
//! block layer's disk set-up, so by default every [`STEP`]-th allocation fails (about 25 s);
//! `RDD_FAULT_STEP=1` fails each one in turn (about 2 minutes).

use harness::{
    nvme::{self, BIND_ALTERNATELY},
    Drive, Scenario,
};

/// Fail allocation 1, 1 + STEP, 1 + 2 * STEP, ...
const STEP: u32 = 7;

const SCRIPT: &str = r#"
check load insmod /modules/nvme_rs.ko
check disk wait_for 20 disk_of $RS_PCI
check unbind sh -c "echo $RS_PCI >/sys/bus/pci/drivers/nvme_rs/unbind"

# After each probe: bound with its disk, or unbound with none; released.
probe_sweep probe-fails-cleanly-at-allocations $FAULT_STEP nvme_rs $RS_PCI disk_of

# Nothing lost: the controller binds, and its disk reads back what was written.
check bind sh -c "echo $RS_PCI >/sys/bus/pci/drivers/nvme_rs/bind"
check disk-again wait_for 20 disk_of $RS_PCI
disk=/dev/$(disk_of $RS_PCI)
check pattern-write blkio fill $disk 0xfa17 16
check pattern-verify blkio verify $disk 0xfa17 16
check unload rmmod nvme_rs
check released-at-unload pci_released $RS_PCI
"#;

#[test]
fn nvme_rs_fails_cleanly_at_allocations() {
    let step = std::env::var("RDD_FAULT_STEP").map_or(STEP, |s| match s.parse::<u32>() {
        Ok(step) if step > 0 => step,
        _ => panic!("RDD_FAULT_STEP={s:?}: a positive whole number"),
    });
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
        .vm(vm)
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
}
