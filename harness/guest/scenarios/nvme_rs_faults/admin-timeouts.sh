# shellcheck shell=sh
# nvme_rs's fault injection point fail_admin_completion, at interval N, once: the Nth admin command
# of the controller (probe's, then removal's) is not answered, so it times out (admin_timeout, 1 s).
# The driver disables the controller before it frees what the command points to; the probe fails,
# or the removal completes, with nothing left behind. The Asynchronous Event Request (number
# ASYNC_EVENT_REQUEST) is skipped: it is answered only at an event.
no_disk_of() { ! disk_of "$1" >/dev/null; }
n=1
while [ $n -le $ADMIN_COMMANDS ]; do
    if [ $n = "$ASYNC_EVENT_REQUEST" ]; then
        n=$((n + 1))
        continue
    fi
    # Bound again once the fault is set, so that its count starts at the probe.
    insmod /modules/nvme_rs.ko admin_timeout=1 &&
        echo $RS_PCI >/sys/bus/pci/drivers/nvme_rs/unbind &&
        fault_on /sys/kernel/debug/nvme_rs/fail_admin_completion 1 $n &&
        echo $RS_PCI >/sys/bus/pci/drivers/nvme_rs/bind
    if pci_bound $RS_PCI; then
        check "lost-admin-$n-bound-with-disk" disk_of $RS_PCI
    else
        check "lost-admin-$n-no-disk" no_disk_of $RS_PCI
    fi
    check "lost-admin-$n-unload" rmmod nvme_rs
    check "lost-admin-$n-released" pci_released $RS_PCI
    n=$((n + 1))
done
timed_out=$(dmesg | sed -n 's/.*nvme_rs.*admin opcode \(0x[0-9a-f]*\) timed out.*/\1/p' | tr '\n' ' ')
diag "timed_out_opcodes=$timed_out"
check every-lost-completion-timed-out test "$(echo $timed_out | wc -w)" -eq $((ADMIN_COMMANDS - 1))

# Nothing lost: the controller binds, and its disk reads back what was written.
check load insmod /modules/nvme_rs.ko
check disk wait_for 20 disk_of $RS_PCI
disk=/dev/$(disk_of $RS_PCI)
check pattern-write blkio fill $disk 0xad 16
check pattern-verify blkio verify $disk 0xad 16
check unload rmmod nvme_rs
