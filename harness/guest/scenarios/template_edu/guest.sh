# shellcheck shell=sh
# DRIVER: the generated driver's name (exported, for the sh -c commands).
check load insmod /modules/$DRIVER.ko
check bound test -e /sys/bus/pci/drivers/$DRIVER/0000:00:02.0
check round-trips-verified sh -c 'dmesg | grep -q "$DRIVER 0000:00:02.0: DMA round trips verified: coherent 4095 bytes, streaming 4095 bytes"'
cycles=0
while [ $cycles -lt 20 ]; do
    echo 0000:00:02.0 >/sys/bus/pci/drivers/$DRIVER/unbind || break
    echo 0000:00:02.0 >/sys/bus/pci/drivers/$DRIVER/bind || break
    cycles=$((cycles + 1))
done
diag cycles=$cycles
check twenty-rebinds-verified sh -c 'test $(dmesg | grep -c "$DRIVER 0000:00:02.0: DMA round trips verified") -eq 21'
check unload rmmod $DRIVER
check released-at-unload pci_released 0000:00:02.0
check probe-fails-on-alloc-failure sh -c '! insmod /modules/$DRIVER.ko fail_coherent_alloc=1 || ! test -e /sys/bus/pci/drivers/$DRIVER/0000:00:02.0'
check alloc-failure-reported sh -c 'dmesg | grep -q "$DRIVER 0000:00:02.0: coherent allocation of .* bytes failed"'
check released-after-failed-probe pci_released 0000:00:02.0
rmmod $DRIVER 2>/dev/null
check reload-after-failure insmod /modules/$DRIVER.ko
check verified-after-failure sh -c 'test $(dmesg | grep -c "$DRIVER 0000:00:02.0: DMA round trips verified") -eq 22'
# Every third allocation of the probe failing in turn (each successful probe takes 0.4 s of DMA
# round trips): bound, or unbound; released.
check unbind-for-faults sh -c 'echo 0000:00:02.0 >/sys/bus/pci/drivers/$DRIVER/unbind'
probe_sweep probe-fails-cleanly-at-allocations 3 $DRIVER 0000:00:02.0 pci_bound
check bound-after-faults sh -c 'echo 0000:00:02.0 >/sys/bus/pci/drivers/$DRIVER/bind'
check final-unload rmmod $DRIVER
