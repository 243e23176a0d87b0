# shellcheck shell=sh
# A hostile or dying controller: nvme_rs on the first controller, the C nvme on its twin for
# comparison. Values QEMU's controller cannot produce come from nvme_rs's fault injection points
# (/sys/kernel/debug/nvme_rs/*, Documentation/fault-injection).
check load insmod /modules/nvme_rs.ko
check disk wait_for 20 test -b /dev/rsnvme0n1
check load-c-nvme load_c_nvme
check c-disk wait_for 20 disk_of "$C_PCI"
c_disk=$(disk_of "$C_PCI")
faults=/sys/kernel/debug/nvme_rs

rs_bind() { echo "$RS_PCI" >/sys/bus/pci/drivers/nvme_rs/bind; }
rs_unbind() { echo "$RS_PCI" >/sys/bus/pci/drivers/nvme_rs/unbind; }
rs_rebind() { rs_unbind && rs_bind; }
c_rebind() {
    echo "$C_PCI" >/sys/bus/pci/drivers/nvme/unbind && echo "$C_PCI" >/sys/bus/pci/drivers/nvme/bind
}
rs_works() { blkio fill /dev/rsnvme0n1 "$1" 8 && blkio verify /dev/rsnvme0n1 "$1" 8; }
c_works() { c_disk=$(disk_of "$C_PCI") && blkio fill "/dev/$c_disk" "$1" 8 && blkio verify "/dev/$c_disk" "$1" 8; }
not_bus_master() { ! pci_bus_master "$1"; }
# logged TEXT: the kernel log has a line with TEXT.
logged() { dmesg | grep -q "$1"; }

# An Identify Controller whose MDTS is 255, as no shift can express: the probe must not overflow
# (a panic with the kernel's overflow checks) or wrap to a zero transfer size; the limit is then
# the driver's own, as C's check_shl_overflow leaves it.
check unbind-for-mdts rs_unbind
fault_on $faults/fail_mdts 1
check probe-with-mdts-255 rs_bind
check mdts-fault-reached test "$(cat $faults/fail_mdts/times)" = 0
fault_off $faults/fail_mdts
check mdts-disk wait_for 20 test -b /dev/rsnvme0n1
max_kb=$(cat /sys/block/rsnvme0n1/queue/max_hw_sectors_kb)
diag "max_hw_sectors_kb with MDTS 255: $max_kb"
check mdts-limit-sane test "$max_kb" -ge 128 -a "$max_kb" -le 4096
check io-after-mdts-255 rs_works 11

# Memory Space and Bus Master Enable cleared behind both drivers through the config space while
# I/O runs, then set again: the controller loses doorbells and DMA (QEMU sets CSTS.CFS when it
# cannot fetch a command); the timeouts that follow reset it. Then each driver is rebound and
# must work. What the I/O saw is reported for each, not required: the C driver fails it too.
# config_command ADDRESS [VALUE]: reads (or writes) the PCI command register.
config_command() {
    if [ $# = 1 ]; then
        od -An -tu2 -j4 -N2 "/sys/bus/pci/devices/$1/config" | tr -d ' '
    else
        # shellcheck disable=SC2059 # the format is the octal escapes of the value's two bytes
        printf "$(printf '\\%03o\\%03o' $(($2 & 255)) $(($2 >> 8)))" |
            dd of="/sys/bus/pci/devices/$1/config" bs=1 seek=4 count=2 conv=notrunc 2>/dev/null
    fi
}
for d in rsnvme0n1 "$c_disk"; do echo 3000 >"/sys/block/$d/queue"/io_timeout; done
rs_command=$(config_command "$RS_PCI") c_command=$(config_command "$C_PCI")
(blkio hammer /dev/rsnvme0n1 25 >/tmp/rs_hammer.out 2>&1) &
rs_hammer=$!
(blkio hammer "/dev/$c_disk" 25 >/tmp/c_hammer.out 2>&1) &
c_hammer=$!
sleep 2
check dark-rs config_command "$RS_PCI" $((rs_command & ~6))
check dark-c config_command "$C_PCI" $((c_command & ~6))
sleep 2
check light-rs config_command "$RS_PCI" "$rs_command"
check light-c config_command "$C_PCI" "$c_command"
wait $rs_hammer
wait $c_hammer
diag "nvme_rs under a dark device: $(cat /tmp/rs_hammer.out)"
diag "C nvme under a dark device: $(cat /tmp/c_hammer.out)"
dmesg | grep -e 'nvme_rs' -e 'nvme nvme' | tail -n 12 | sed 's/^/# /'
check rebind-rs-after-dark rs_rebind
check rs-disk-after-dark wait_for 20 test -b /dev/rsnvme0n1
check rs-works-after-dark rs_works 12
check rebind-c-after-dark c_rebind
check c-works-after-dark wait_for 20 c_works 12

# CSTS.CFS seen by a timeout handler (a command the controller keeps: the host throttles the
# namespace): as C's nvme_timeout, a fatal status resets at once, without an abort first; the
# reset sends the command again and it completes with the right data once the throttle lifts.
echo 2000 >/sys/block/rsnvme0n1/queue/io_timeout
request throttle
fault_on $faults/fail_csts_fatal 1
(blkio verify /dev/rsnvme0n1 12 1 >/tmp/stuck.out 2>&1; echo $? >/tmp/stuck.rc) &
stuck=$!
check fatal-status-resets wait_for 30 logged 'nvme_rs.*controller fatal status (CSTS 0x3), resetting'
check fatal-status-sent-again wait_for 30 logged 'nvme_rs.*reset: [1-9][0-9]* commands in flight sent again'
request unthrottle
wait $stuck
fault_off $faults/fail_csts_fatal
check stuck-read-completes sh -c 'cat /tmp/stuck.out; test "$(cat /tmp/stuck.rc)" = 0'
check works-after-fatal-status rs_works 13

# Every register reads all ones (a device gone from the bus) when a reset begins: the reset cannot
# stop the controller, turns bus mastering off, says so, and gives the controller up; unbound and
# bound again once the device reads true, the driver works.
fault_on $faults/fail_mmio_read
check reset-on-dark-device sh -c '! echo 1 >/sys/class/misc/rsnvme0/reset_controller'
fault_off $faults/fail_mmio_read
check said-not-stopped logged 'nvme_rs.*controller did not stop (.*): bus mastering off'
check bus-master-off not_bus_master "$RS_PCI"
check unbind-given-up rs_unbind
check rebind-after-all-ones rs_bind
check works-after-all-ones wait_for 20 rs_works 14
check bus-master-on pci_bus_master "$RS_PCI"
c_disk=$(disk_of "$C_PCI")
check c-untouched c_works 15
