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

# Stale and duplicated completions (a test-only injection point: each of the first 4 completions
# after the load comes twice more, as it was and with another command id generation): every copy
# is ignored and counted, none is taken, and the data is right.
check reload-injecting-duplicates reload test_duplicate_completions=4
check io-with-duplicates blkio verify /dev/rsnvme0n1 101 32
check duplicates-ignored sh -c 'test "$(dmesg | grep -c "nvme_rs.*ignored completion")" -eq 8'
check no-injected-completion-taken sh -c '! dmesg | grep -q "injected bad completion"'
check reload-after-duplicates reload
check duplicates-counted sh -c 'dmesg | grep -q "nvme_rs.* 8 completions ignored"'

# Lost interrupts (test-only: the driver ignores its I/O interrupts until the first timeout, that of
# a read of the probe's partition scan): the timeout handler finds the completions with its own
# poll and ends each request once, and the disk works. The completion is taken before the
# handler's check here, after it in the fault injection above.
check reload-losing-interrupts reload test_lose_interrupts=1 io_timeout=2
check lost-interrupt-polled sh -c 'dmesg | grep -q "nvme_rs.*timed out, completion polled"'
check io-after-lost-interrupt blkio verify /dev/rsnvme0n1 101 32
check reload-after-lost-interrupt reload

# A command the controller keeps past the timeout, which Abort cannot end (QEMU's never does): the
# host throttles the namespace to a byte a second. The driver disables the controller and fails
# all I/O until it is reloaded; the C driver's disk is not touched.
echo 1000 >/sys/block/rsnvme0n1/queue/io_timeout
request throttle
check stuck-io-fails sh -c '! blkio verify /dev/rsnvme0n1 101 1'
check controller-killed sh -c 'dmesg | grep -q "nvme_rs.*controller disabled; failing outstanding I/O"'
check other-namespace-fails-too blkio hammer /dev/rsnvme0n2 10
request unthrottle
check reload-after-kill reload
check io-after-reload blkio verify /dev/rsnvme0n1 101 32

# Both namespaces' commands kept at once, the second disk's timeout due a second after the
# first's (blk-mq rounds them up to the second). The first handler declares the controller dead
# and (test_kill_delay) waits 4 s before it cancels, so that the second disk's handler finds its
# request in flight on a dead controller: it must leave it to the cancelling, which ends every
# request once. (Due together, the two disks' handlers could both start before either declared
# the controller dead, and once did on the KASAN kernel.)
check reload-delaying-kills reload test_kill_delay=4000
echo 1000 >/sys/block/rsnvme0n1/queue/io_timeout
echo 2000 >/sys/block/rsnvme0n2/queue/io_timeout
request throttle-both
for n in 1 2; do
    (blkio verify /dev/rsnvme0n$n 101 1 >/dev/null 2>&1; echo $? >/tmp/stuck$n.rc) &
done
wait
check both-stuck-reads-fail sh -c 'test "$(cat /tmp/stuck1.rc)" != 0 -a "$(cat /tmp/stuck2.rc)" != 0'
check both-timeouts-handled sh -c 'test "$(dmesg | grep -c "nvme_rs.*timed out on a dead controller")" -ge 1'
request unthrottle-both
check reload-after-two-timeouts reload
check io-after-two-timeouts blkio verify /dev/rsnvme0n1 101 32

# A controller that stops answering while the probe adds its disks: the host throttles the first
# namespace to a byte a second, then reads 64 KiB through the throttle itself, which fills its
# bucket, so the partition scan's read would wait most of a day. It times out (io_timeout=2), Abort
# does not end it, the driver disables the controller, and the probe fails: no disk left, the
# function released. Then the controller binds as before.
check unload-before-stuck-probe rmmod nvme_rs
request throttle-and-fill
insmod /modules/nvme_rs.ko io_timeout=2
check stuck-probe-fails test ! -e /sys/bus/pci/devices/$RS_PCI/driver
check stuck-probe-says-why sh -c 'dmesg | grep -q "nvme_rs .*controller stopped responding while its disks were added"'
check stuck-probe-leaves-no-disk test ! -e /sys/block/rsnvme0n1 -a ! -e /sys/block/rsnvme0n2
check released-after-stuck-probe pci_released $RS_PCI
request unthrottle
check reload-after-stuck-probe reload
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
