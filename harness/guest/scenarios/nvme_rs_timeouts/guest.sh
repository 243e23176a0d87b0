# shellcheck shell=sh
check load insmod /modules/nvme_rs.ko
check disks-per-namespace wait_for 20 test -b /dev/rsnvme0n1 -a -b /dev/rsnvme0n2
check load-c-nvme load_c_nvme
check c-disk wait_for 20 test -b /dev/nvme0n1
c1=nvme0n1
check pattern-write blkio fill /dev/rsnvme0n1 101 32
check c-pattern-write blkio fill /dev/$c1 0x5eed 16

# reload [PARAMS]: nvme_rs again, with module parameters.
reload() { rmmod nvme_rs && insmod /modules/nvme_rs.ko "$@" && wait_for 20 test -b /dev/rsnvme0n2; }
# nvme_rs's fault injection points (fault_on, fault_off).
faults=/sys/kernel/debug/nvme_rs

# A lost completion (fault injection): the timeout handler ends the request with an error, and the
# disk keeps working.
echo 2000 >/sys/block/rsnvme0n1/queue/io_timeout
echo 100 >/sys/kernel/debug/fail_io_timeout/probability
echo 1 >/sys/kernel/debug/fail_io_timeout/times
echo 0 >/sys/kernel/debug/fail_io_timeout/verbose
echo 1 >/sys/block/rsnvme0n1/io-timeout-fail
check timed-out-io-fails sh -c '! timeout 60 blkio verify /dev/rsnvme0n1 101 1'
echo 0 >/sys/block/rsnvme0n1/io-timeout-fail
check timeout-handled sh -c 'dmesg | grep -q "nvme_rs.*timed out"'
check io-after-timeout blkio verify /dev/rsnvme0n1 101 32

# Stale and duplicated completions (fail_unique_completion, 4 times: each of the next 4
# completions comes twice more, as it was and with another command id generation): every copy is
# ignored and counted, none is taken, and the data is right.
check reload-before-duplicates reload
fault_on $faults/fail_unique_completion 4
check io-with-duplicates blkio verify /dev/rsnvme0n1 101 32
check every-duplicate-injected test "$(cat $faults/fail_unique_completion/times)" = 0
fault_off $faults/fail_unique_completion
diag "ignored_completions=$(nvme_rs_counter ignored_completions)"
check duplicates-ignored test "$(nvme_rs_counter ignored_completions)" -eq 8
check no-injected-completion-taken sh -c '! dmesg | grep -q "injected bad completion"'
check reload-after-duplicates reload

# Lost interrupts (fail_io_interrupt: the driver ignores its I/O interrupts while a read runs): the
# timeout handler finds the completions with its own poll and ends each request once, the read
# gets the right data, and the disk works. The completion is taken before the handler's check
# here, after it in the lost completion above.
check reload-with-short-timeouts reload io_timeout=2
fault_on $faults/fail_io_interrupt
check io-losing-interrupts blkio verify /dev/rsnvme0n1 101 1
fault_off $faults/fail_io_interrupt
check lost-interrupt-polled test "$(nvme_rs_counter polled_timeouts)" -ge 1
check io-after-lost-interrupt blkio verify /dev/rsnvme0n1 101 32
check reload-after-lost-interrupt reload

# timeout_resets: how many times a timeout handler has reset the controller since its probe (0
# before the probe made its counters).
timeout_resets() { nvme_rs_counter timeout_resets 2>/dev/null || echo 0; }
# more_timeout_resets N: whether there were more than N.
more_timeout_resets() { test "$(timeout_resets)" -gt "$1"; }
# until_timeout_resets N [SECONDS]: waits (60 s at most) until there were more than N.
until_timeout_resets() { wait_for "${2:-60}" more_timeout_resets "$1"; }

# A command the controller keeps past the timeout, which Abort cannot end (QEMU's never does): the
# host throttles the namespace to a byte a second. As the C driver does, nvme_rs aborts it, gives it
# another timeout, then resets the controller, which takes the command from it and sends it again;
# the host lifts the throttle once the reset is done, and the read completes with the right data.
# The other namespace works afterwards, with no reload.
echo 1000 >/sys/block/rsnvme0n1/queue/io_timeout
resets=$(timeout_resets)
request throttle
(blkio verify /dev/rsnvme0n1 101 1 >/tmp/stuck.out 2>&1; echo $? >/tmp/stuck.rc) &
stuck=$!
check stuck-io-resets until_timeout_resets "$resets"
request unthrottle
wait $stuck
check stuck-read-completes-after-reset sh -c 'cat /tmp/stuck.out; test "$(cat /tmp/stuck.rc)" = 0'
check sent-again-by-reset test "$(nvme_rs_counter requeued_commands)" -gt 0
check other-namespace-after-reset sh -c 'blkio fill /dev/rsnvme0n2 202 8 && blkio verify /dev/rsnvme0n2 202 8'
check io-after-reset blkio verify /dev/rsnvme0n1 101 32

# Both namespaces' commands kept at once while the controller is unbound, the second disk's timeout
# due a second after the first's (blk-mq rounds them up to the second). Removal lets no timeout
# reset the controller: the first handler to time out twice declares it dead and
# (fail_prompt_cancel, once) waits 4 s before it cancels, so that the second disk's handler finds its
# request in flight on a dead controller: it must leave it to the cancelling, which ends every
# request once. (Due together, the two disks' handlers could both start before either declared the
# controller dead, and once did on the KASAN kernel.)
fault_on $faults/fail_prompt_cancel 1
echo 1000 >/sys/block/rsnvme0n1/queue/io_timeout
echo 2000 >/sys/block/rsnvme0n2/queue/io_timeout
# What happens during the removal is in the kernel log: the counters go with the device.
controller_resets=$(dmesg | grep -c 'nvme_rs.*resetting controller')
request throttle-both
for n in 1 2; do
    (blkio verify /dev/rsnvme0n$n 101 1 >/dev/null 2>&1; echo $? >/tmp/stuck$n.rc) &
done
sleep 0.5
check remove-with-both-stuck sh -c "echo $RS_PCI >/sys/bus/pci/drivers/nvme_rs/unbind"
wait
check both-stuck-reads-fail sh -c 'test "$(cat /tmp/stuck1.rc)" != 0 -a "$(cat /tmp/stuck2.rc)" != 0'
check both-timeouts-handled sh -c 'test "$(dmesg | grep -c "nvme_rs.*timed out on a dead controller")" -ge 1'
check cancel-delayed test "$(cat $faults/fail_prompt_cancel/times)" = 0
check no-reset-while-removing test "$(dmesg | grep -c 'nvme_rs.*resetting controller')" = "$controller_resets"
request unthrottle-both
check bind-after-two-timeouts sh -c "echo $RS_PCI >/sys/bus/pci/drivers/nvme_rs/bind"
check disk-after-two-timeouts wait_for 20 test -b /dev/rsnvme0n2
check io-after-two-timeouts blkio verify /dev/rsnvme0n1 101 32

# A controller that stops answering while the probe adds its disks: the host throttles the first
# namespace to a byte a second, then reads 64 KiB through the throttle itself, which fills its
# bucket, so the partition scan's read would wait most of a day. It times out (io_timeout=2), Abort
# does not end it, and the reset that follows, during the probe, sends it again; the host lifts the
# throttle, the probe completes with both disks, and the first reads back what it held.
check unload-before-stuck-probe rmmod nvme_rs
resets=$(timeout_resets)
request throttle-and-fill
insmod /modules/nvme_rs.ko io_timeout=2 &
loading=$!
check reset-during-probe until_timeout_resets "$resets"
request unthrottle
wait $loading
check probe-completes-after-reset wait_for 20 test -b /dev/rsnvme0n1 -a -b /dev/rsnvme0n2
check io-after-stuck-probe blkio verify /dev/rsnvme0n1 101 32

# Removal while a timeout is due: the controller is unbound while a read is stuck behind the
# throttle. Removing the disk waits for the read; its timeout (2 s) disables the controller, which
# ends it with an error, and the removal completes.
check reload-before-stuck-removal reload io_timeout=2
request throttle
(blkio verify /dev/rsnvme0n1 101 1 >/dev/null 2>&1; echo $? >/tmp/stuck.rc) &
stuck=$!
sleep 1
check remove-while-timing-out sh -c "echo $RS_PCI >/sys/bus/pci/drivers/nvme_rs/unbind"
wait $stuck
check stuck-read-failed-at-removal sh -c 'test "$(cat /tmp/stuck.rc)" != 0'
check released-after-stuck-removal pci_released $RS_PCI
request unthrottle
check bind-after-stuck-removal sh -c "echo $RS_PCI >/sys/bus/pci/drivers/nvme_rs/bind"
check disk-after-stuck-removal wait_for 20 test -b /dev/rsnvme0n2
check io-after-stuck-removal blkio verify /dev/rsnvme0n1 101 32

check reload-before-unplug reload io_timeout=3
check disk-before-unplug wait_for 20 test -b /dev/rsnvme0n1

# Surprise removal (QMP device_del of the controller) during I/O, while a timeout is due: a read of
# the first namespace is stuck behind the throttle, and its timeout (3 s) fires about when the
# controller goes, in either order. (The host lifts the throttle just before: QEMU would otherwise
# wait for the read while it removes the device, and the whole VM with it.)
(blkio hammer /dev/rsnvme0n2 120 >/tmp/hammer.out 2>&1; echo $? >/tmp/hammer.rc) &
hammer=$!
request throttle
(blkio verify /dev/rsnvme0n1 101 1 >/dev/null 2>&1; echo $? >/tmp/stuck.rc) &
stuck=$!
sleep 3
request unthrottle-and-unplug
check disk-removed wait_for 60 sh -c '! test -e /sys/block/rsnvme0n1 && ! test -e /sys/block/rsnvme0n2'
wait $hammer $stuck
diag "hammer=$(cat /tmp/hammer.out | tr ' ' ',') stuck_read_rc=$(cat /tmp/stuck.rc)"
check io-ended-with-errors grep -qx 0 /tmp/hammer.rc
check c-nvme-unaffected blkio verify /dev/$c1 0x5eed 16
check unload rmmod nvme_rs
