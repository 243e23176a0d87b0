# shellcheck shell=sh
# DRIVER: the generated driver's name (exported, for the sh -c commands).
debugfs_dir=/sys/kernel/debug/$DRIVER
# round_trips: what the driver counts of its verified DMA round trips since it was loaded.
round_trips() { cat "$debugfs_dir/verified_round_trips"; }

check load insmod /modules/$DRIVER.ko
check bound test -e /sys/bus/pci/drivers/$DRIVER/0000:00:02.0
# Coherent and streaming: two a bind.
check round-trips-verified test "$(round_trips)" -eq 2
cycles=0
while [ $cycles -lt 20 ]; do
    echo 0000:00:02.0 >/sys/bus/pci/drivers/$DRIVER/unbind || break
    echo 0000:00:02.0 >/sys/bus/pci/drivers/$DRIVER/bind || break
    cycles=$((cycles + 1))
done
diag cycles=$cycles
check twenty-rebinds-verified test "$(round_trips)" -eq 42
check unbind-for-alloc-failure sh -c 'echo 0000:00:02.0 >/sys/bus/pci/drivers/$DRIVER/unbind'
check released-at-unbind pci_released 0000:00:02.0
# The probe's coherent allocation fails once: the bind's writer gets the probe's ENOMEM.
check fault-point-on fault_on "$debugfs_dir/fail_coherent_alloc" 1
bind_error=$( (echo 0000:00:02.0 >/sys/bus/pci/drivers/$DRIVER/bind) 2>&1) && bind_error=bound
diag "bind_error=$bind_error"
check probe-fails-on-alloc-failure sh -c "echo '$bind_error' | grep -q 'Cannot allocate memory'"
check fault-point-fired test "$(cat "$debugfs_dir/fail_coherent_alloc/times")" -eq 0
check unbound-after-failed-probe sh -c '! test -e /sys/bus/pci/drivers/$DRIVER/0000:00:02.0'
check released-after-failed-probe pci_released 0000:00:02.0
check no-round-trip-counted test "$(round_trips)" -eq 42
fault_off "$debugfs_dir/fail_coherent_alloc"
check rebind-after-failure sh -c 'echo 0000:00:02.0 >/sys/bus/pci/drivers/$DRIVER/bind'
check verified-after-failure test "$(round_trips)" -eq 44
check unload rmmod $DRIVER
check released-at-unload pci_released 0000:00:02.0
check debugfs-gone-at-unload test ! -e "$debugfs_dir"
check reload insmod /modules/$DRIVER.ko
check counted-afresh-after-reload test "$(round_trips)" -eq 2
# Every third allocation of the probe failing in turn (each successful probe takes 0.4 s of DMA
# round trips): bound, or unbound; released.
check unbind-for-faults sh -c 'echo 0000:00:02.0 >/sys/bus/pci/drivers/$DRIVER/unbind'
probe_sweep probe-fails-cleanly-at-allocations 3 $DRIVER 0000:00:02.0 pci_bound
check bound-after-faults sh -c 'echo 0000:00:02.0 >/sys/bus/pci/drivers/$DRIVER/bind'
check final-unload rmmod $DRIVER
