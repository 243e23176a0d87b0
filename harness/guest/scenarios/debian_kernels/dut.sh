# shellcheck shell=sh
diag "kernel=$(uname -r)"
check edu-load insmod /modules/@EDU@.ko
check edu-round-trips test "$(cat /sys/kernel/debug/@EDU@/verified_round_trips)" -eq 2
check edu-unload rmmod @EDU@

check nvme_rs-load insmod /modules/nvme_rs.ko
check nvme_rs-disk wait_for 20 test -b /dev/rsnvme0n1
check nvme-load load_c_nvme
check nvme-disk wait_for 20 disk_of "$C_PCI"
c_disk=$(disk_of "$C_PCI")
check pattern-write-256MiB blkio fill /dev/rsnvme0n1 0x5eed 256
check pattern-verify-256MiB blkio verify /dev/rsnvme0n1 0x5eed 256
check c-pattern-write-256MiB blkio fill "/dev/$c_disk" 0x5eed 256
rs_sha=$(dd if=/dev/rsnvme0n1 bs=1M count=256 2>/dev/null | sha256sum | cut -d' ' -f1)
c_sha=$(dd if="/dev/$c_disk" bs=1M count=256 2>/dev/null | sha256sum | cut -d' ' -f1)
diag "rs_sha=$rs_sha"
diag "c_sha=$c_sha"
check same-bytes-as-c test "$rs_sha" = "$c_sha"
# The controller device: passthrough (Identify, and the bad input and reset cases), and an open
# file keeps the module loaded (7.2's misc devices leave the owner unset: the driver takes a
# module reference itself).
check nvme_rs-controller-device test -c /dev/rsnvme0
check nvme_rs-passthrough sh -c 'passthru cases /dev/rsnvme0 | tee /tmp/cases | grep -q "^identify-after-reset ok"'
diag "passthru_cases=$(tr '\n' '|' </tmp/cases)"
exec 3</dev/rsnvme0
check nvme_rs-stays-while-open sh -c '! rmmod nvme_rs 2>/dev/null'
exec 3<&-
check nvme_rs-unload rmmod nvme_rs

check e1000_rs-load insmod /modules/e1000_rs.ko
check interface wait_for 10 test -d /sys/class/net/eth0
check driver-is-e1000_rs sh -c 'readlink /sys/class/net/eth0/device/driver | grep -q e1000_rs$'
up $DUT
check carrier-up carrier_up
check ping-peer wait_for 60 ping -c 1 -W 1 $PEER
dd if=/dev/urandom of=/tmp/out bs=1M count=64 2>/dev/null
diag "dut_sent_sha=$(sha256sum </tmp/out | cut -d' ' -f1)"
(timeout 300 netpipe recv 5002 | sha256sum | cut -d' ' -f1 >/tmp/recv.sha) &
listener=$!
check tcp-send-64MiB sh -c 'netpipe send $PEER 5001 </tmp/out'
wait $listener
ktap_result $? tcp-receive-64MiB
diag "dut_received_sha=$(cat /tmp/recv.sha)"
rm -f /tmp/out
check e1000_rs-unload rmmod e1000_rs
