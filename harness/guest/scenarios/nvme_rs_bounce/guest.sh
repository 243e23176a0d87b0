# shellcheck shell=sh
check load insmod /modules/nvme_rs.ko
check load-c-nvme load_c_nvme
disks_ready() { disk_of $RS_PCI >/dev/null && disk_of $C_PCI >/dev/null; }
check disks wait_for 20 disks_ready
rs=$(disk_of $RS_PCI) c=$(disk_of $C_PCI)
q() { cat "/sys/block/$1/queue/$2"; }
diag "rs_max_hw_sectors_kb=$(q $rs max_hw_sectors_kb) c_max_hw_sectors_kb=$(q $c max_hw_sectors_kb)"
check max-transfer-as-c test "$(q $rs max_hw_sectors_kb)" = "$(q $c max_hw_sectors_kb)"
# Direct I/O in 1 MiB requests, split at the largest transfer, then read back through the page
# cache.
check pattern-write blkio fill /dev/$rs 0xb0b 96
check pattern-verify blkio verify /dev/$rs 0xb0b 96
check c-pattern-write blkio fill /dev/$c 0xb0b 96
rs_sha=$(dd if=/dev/$rs bs=1M count=96 2>/dev/null | sha256sum | cut -d' ' -f1)
c_sha=$(dd if=/dev/$c bs=1M count=96 2>/dev/null | sha256sum | cut -d' ' -f1)
diag "rs_sha=$rs_sha"
diag "c_sha=$c_sha"
check same-bytes-as-c test "$rs_sha" = "$c_sha"
check sequential-128k blkio bench /dev/$rs seqread 131072 8 1 64
diag "bounce_slots_used_hiwater=$(cat /sys/kernel/debug/swiotlb/io_tlb_used_hiwater)"
check unload rmmod nvme_rs
