//! e1000_rs when allocations fail: its probe, and then its open, with each allocation they make
//! failing in turn (the kernel's fail-nth fault injection). Every attempt either succeeds or fails
//! with nothing left behind: no interface, the PCI function disabled, no leak (kmemleak), no
//! DMA-API or other report. Afterwards the driver binds, opens and moves frames both ways.
//!
//! One VM, two e1000 NICs on a QEMU hub: the first bound to e1000_rs, the second to the C e1000,
//! whose frames show the device still works.

use harness::{NetBackend, Scenario, Vm};

const SCRIPT: &str = r#"
set -- $(for d in /sys/bus/pci/devices/*; do
    [ "$(cat "$d/vendor"):$(cat "$d/device")" = 0x8086:0x100e ] && echo "${d##*/}"; done | sort)
rs_pci=$1 c_pci=$2
echo e1000_rs >/sys/bus/pci/devices/$rs_pci/driver_override
echo e1000 >/sys/bus/pci/devices/$c_pci/driver_override
check load-c-e1000 insmod /modules/e1000.ko
check load insmod /modules/e1000_rs.ko
iface_of() { ls "/sys/bus/pci/devices/$1/net" 2>/dev/null | head -n 1 | grep .; }
check interface wait_for 10 iface_of $rs_pci
check unbind sh -c "echo $rs_pci >/sys/bus/pci/drivers/e1000_rs/unbind"
check fault-injection-ready fail_nth_setup

# After each probe: bound with an interface, or unbound with none; released.
probe_sweep probe-fails-cleanly-at-each-allocation 1 e1000_rs $rs_pci iface_of

check bind sh -c "echo $rs_pci >/sys/bus/pci/drivers/e1000_rs/bind"
rs_if=$(iface_of $rs_pci)
up_flags=$(printf '0x%x' $(( $(cat /sys/class/net/$rs_if/flags) | 1 )))
# Through sysfs, so that the open runs in this shell's task (ip would be a process of its own).
open_rs() { echo $up_flags >/sys/class/net/$rs_if/flags; }
# After an open: up (then closed again) or down, as it said.
open_left() {
    up=$(( $(cat /sys/class/net/$rs_if/flags) & 1 ))
    if [ $1 = 0 ]; then [ $up = 1 ] && ip link set $rs_if down; else [ $up = 0 ]; fi
}
fault_sweep open-fails-cleanly-at-each-allocation 1 open_rs open_left

# Nothing lost: frames cross the hub both ways.
c_if=$(iface_of $c_pci)
check open ip link set $rs_if up
check c-open ip link set $c_if up
check carrier wait_for 30 grep -qx 1 /sys/class/net/$rs_if/carrier
check c-carrier wait_for 30 grep -qx 1 /sys/class/net/$c_if/carrier
rx() { cat /sys/class/net/$1/statistics/rx_packets; }
rs_rx=$(rx $rs_if) c_rx=$(rx $c_if)
check frames-to-rs rawframes $c_if "$(cat /sys/class/net/$rs_if/address)" 0x88b5 1514 20
check frames-from-rs rawframes $rs_if "$(cat /sys/class/net/$c_if/address)" 0x88b5 1514 20
check rs-received wait_for 10 sh -c "test \$(cat /sys/class/net/$rs_if/statistics/rx_packets) -ge $((rs_rx + 20))"
check c-received wait_for 10 sh -c "test \$(cat /sys/class/net/$c_if/statistics/rx_packets) -ge $((c_rx + 20))"
check unload rmmod e1000_rs
check released-at-unload pci_released $rs_pci
"#;

#[test]
fn e1000_rs_fails_cleanly_at_each_allocation() {
    Scenario::new("e1000-rs-faults")
        .vm(Vm::new("guest")
            .memory_mib(768)
            .module("drivers/e1000_rs")
            .kernel_module("drivers/net/ethernet/intel/e1000/e1000.ko")
            .bios_irq_routing()
            .injects_faults()
            .tool("rawframes")
            .nic("e1000", NetBackend::Hub(0))
            .nic("e1000", NetBackend::Hub(0))
            .script(SCRIPT)
            .timeout(std::time::Duration::from_secs(600)))
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
}
