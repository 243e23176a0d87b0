# shellcheck shell=sh
diag "rs_pci=$RS_PCI c_pci=$C_PCI"
check load insmod /modules/nvme_rs.ko
check disks-per-namespace wait_for 20 test -b /dev/rsnvme0n1 -a -b /dev/rsnvme0n2
check load-c-nvme load_c_nvme
check c-disks wait_for 20 test -b /dev/nvme0n1 -a -b /dev/nvme0n2
# The C driver numbers its disks in the order its asynchronous scan finds the namespaces: go by
# NSID.
c_disk() { for d in /sys/block/nvme0n*; do [ "$(cat "$d/nsid")" = "$1" ] && echo "${d##*/}"; done; }
c1=$(c_disk 1) c2=$(c_disk 2)
diag "c_disks=$c1,$c2"
q() { cat "/sys/block/$1/$2"; }
for n in 1 2; do
    for attr in size queue/logical_block_size queue/max_hw_sectors_kb queue/discard_max_hw_bytes queue/write_cache queue/fua \
        queue/write_zeroes_max_bytes queue/discard_granularity queue/max_discard_segments \
        queue/write_zeroes_unmap_max_hw_bytes queue/nr_requests queue/atomic_write_max_bytes \
        queue/atomic_write_unit_min_bytes queue/atomic_write_unit_max_bytes queue/atomic_write_boundary_bytes \
        queue/virt_boundary_mask queue/max_segment_size queue/max_segments; do
        check "ns$n-${attr##*/}-as-c" test "$(q rsnvme0n$n $attr)" = "$(q "$(c_disk $n)" $attr)"
    done
done
diag "rs_queues=$(ls /sys/block/rsnvme0n1/mq | wc -l) c_queues=$(ls /sys/block/$c1/mq | wc -l)"
diag "rs_max_hw_sectors_kb=$(q rsnvme0n1 queue/max_hw_sectors_kb)"

# 256 MiB of a pseudo-random pattern with direct I/O, read back and verified. The C driver writes
# the same pattern to its twin, and both devices then read back the same bytes through the page
# cache (large read-ahead requests).
check pattern-write-256MiB blkio fill /dev/rsnvme0n1 0x5eed 256
check pattern-verify-256MiB blkio verify /dev/rsnvme0n1 0x5eed 256
check c-pattern-write-256MiB blkio fill /dev/$c1 0x5eed 256
rs_sha=$(dd if=/dev/rsnvme0n1 bs=1M count=256 2>/dev/null | sha256sum | cut -d' ' -f1)
c_sha=$(dd if=/dev/$c1 bs=1M count=256 2>/dev/null | sha256sum | cut -d' ' -f1)
diag "rs_sha=$rs_sha"
diag "c_sha=$c_sha"
check same-bytes-as-c test "$rs_sha" = "$c_sha"

# Namespaces are separate: writing the second leaves the first alone.
check ns2-write blkio fill /dev/rsnvme0n2 0x2222 64
check ns2-verify blkio verify /dev/rsnvme0n2 0x2222 64
check ns1-untouched blkio verify /dev/rsnvme0n1 0x5eed 256

# reload [PARAMS]: nvme_rs again, with module parameters.
reload() { rmmod nvme_rs && insmod /modules/nvme_rs.ko "$@" && wait_for 20 test -b /dev/rsnvme0n2; }

# Durable writes (O_DSYNC) to a disk with a volatile write cache go out as FUA writes, as with the
# C driver, each write followed by the flush O_DSYNC asks for; without FUA the block layer adds a
# flush after every request too (33 flushes here instead of 17). Field 16 of stat counts flushes.
# shellcheck disable=SC2046 # the fields of the stat file as arguments
flushes() { set -- $(cat "/sys/block/$1/stat"); echo "${16}"; }
rs_flushes=$(flushes rsnvme0n1) c_flushes=$(flushes "$c1")
check dsync-write blkio fill-dsync /dev/rsnvme0n1 0xd5 16 300
check c-dsync-write blkio fill-dsync /dev/$c1 0xd5 16 300
rs_flushes=$(($(flushes rsnvme0n1) - rs_flushes)) c_flushes=$(($(flushes "$c1") - c_flushes))
diag "dsync_flushes rs=$rs_flushes c=$c_flushes"
check dsync-flushes-as-c test "$rs_flushes" -le "$c_flushes"
check dsync-verify blkio verify /dev/rsnvme0n1 0xd5 16 300
diag "dsync_fua_commands=$(nvme_rs_counter fua_commands)"
check dsync-writes-fua test "$(nvme_rs_counter fua_commands)" -ge 16
check reload-after-dsync reload

# Write Zeroes in the middle of that range (a hole punched: no fallback to writing zero pages, so
# it fails unless the driver's command does it): it reads back as zeroes, the data around it stays.
check write-zeroes blkio zero /dev/rsnvme0n1 8 302
check data-before-zeroes blkio verify /dev/rsnvme0n1 0xd5 2 300
check data-after-zeroes blkio verify /dev/rsnvme0n1 0xd5 6 310

# The same bytes through either data pointer format: SGLs for every request, then PRPs only.
check reload-sgls-always reload sgl_threshold=512
check verify-via-sgls blkio verify /dev/rsnvme0n1 0x5eed 256
check write-via-sgls blkio fill /dev/rsnvme0n2 0x3333 64
diag "sgl_phase_sgl_commands=$(nvme_rs_counter sgl_commands)"
check sgl-phase-used-sgls test "$(nvme_rs_counter sgl_commands)" -gt 0
check reload-prps-only reload sgl_threshold=0
check verify-via-prps blkio verify /dev/rsnvme0n1 0x5eed 256
check verify-sgl-written-via-prps blkio verify /dev/rsnvme0n2 0x3333 64
prp_phase_sgls=$(nvme_rs_counter sgl_commands) prp_phase_prps=$(nvme_rs_counter prp_commands)
diag "prp_phase_sgl_commands=$prp_phase_sgls prp_phase_prp_commands=$prp_phase_prps"
check prp-phase-used-only-prps test "$prp_phase_sgls" -eq 0 -a "$prp_phase_prps" -gt 0
check reload-default reload

# Queue depth (io_queue_depth, 1024 by default as in the C driver): the smallest queue, one
# command in flight at a time, moves the same bytes; a depth out of range fails the probe, saying
# why, and leaves no disk.
check reload-smallest-queues reload io_queue_depth=2
# (One tag: the disk has no I/O scheduler, which blk-mq gives only disks of one hardware queue,
# and this VM's two CPUs get two.)
check smallest-queues-one-tag test "$(q rsnvme0n1 queue/nr_requests)" = 1
check verify-via-smallest-queues blkio verify /dev/rsnvme0n1 0x5eed 64
check unload-before-bad-depth rmmod nvme_rs
insmod /modules/nvme_rs.ko io_queue_depth=4096
check bad-depth-says-why sh -c 'dmesg | grep -q "nvme_rs .*io_queue_depth=4096 is not 2 to 4095"'
check bad-depth-leaves-no-disk test ! -e /sys/block/rsnvme0n1
check released-after-bad-depth pci_released $RS_PCI
check reload-default-depth reload

# Data in pieces that PRPs cannot describe: eight 512-byte pieces, each from the middle of its own
# page, in one pwritev and one preadv. The disk has no virtual boundary where the controller has
# SGLs (as with the C driver), so the pieces make one request each way, which goes out as an SGL
# even where the threshold would have PRPs (sgl_threshold=0). The C driver's disk moves the same.
check reload-prps-preferred reload sgl_threshold=0
check gapped-io blkio gapped /dev/rsnvme0n1 0x9a 8 131072
diag "gapped_phase_sgl_commands=$(nvme_rs_counter sgl_commands)"
check gapped-io-one-sgl-each-way test "$(nvme_rs_counter sgl_commands)" = 2
check reload-after-gapped-io reload
check c-gapped-io blkio gapped /dev/$c1 0x9a 8 131072

# Four writers at once, then four readers at once, on separate 32 MiB regions.
run_parallel() {
    pids=""
    for s in 1 2 3 4; do
        blkio "$1" /dev/rsnvme0n1 $((100 + s)) 32 $((s * 32 - 32)) >"/tmp/par.$s" 2>&1 &
        pids="$pids $!"
    done
    rc=0
    for p in $pids; do wait "$p" || rc=1; done
    cat /tmp/par.* >/dev/kmsg
    return $rc
}
run_parallel fill
ktap_result $? concurrent-writers
run_parallel verify
ktap_result $? concurrent-readers

# Discard (Dataset Management) deallocates: QEMU punches a hole in the image (discard=unmap) and
# reads deallocated blocks as zeroes, and the data around them stays. Over a 16 MiB pattern, 1 MiB
# at 4 MiB, then 6 MiB + 512 bytes to 8 MiB. The second starts off the 4 KiB discard granularity,
# so the block layer splits it there into two adjacent bios and merges them into one request: one
# command of two ranges, as the disk takes several (max_discard_segments, set as the C driver
# sets it). The C driver's twin goes through the same and must read back the same bytes.
# zeroes DISK SECTOR COUNT: whether COUNT sectors from SECTOR read back, all zeroes.
zeroes() {
    dd if="/dev/$1" of=/tmp/zeroes bs=512 skip="$2" count="$3" 2>/dev/null &&
        test "$(wc -c </tmp/zeroes)" = $(($3 * 512)) &&
        test "$(tr -d '\000' </tmp/zeroes | wc -c)" = 0
}
for who in rs c; do
    if [ $who = rs ]; then disk=rsnvme0n2; else disk=$c2; fi
    check "discard-pattern-$who" blkio fill /dev/$disk 0xd15c 16
    check "discard-aligned-$who" blkdiscard -o $((4 << 20)) -l $((1 << 20)) /dev/$disk
    check "discard-unaligned-$who" blkdiscard -o $(((6 << 20) + 512)) -l $(((2 << 20) - 512)) /dev/$disk
    check "discarded-reads-zeroes-$who" zeroes $disk 8192 2048
    check "unaligned-discard-reads-zeroes-$who" zeroes $disk 12289 4095
    report=$(blkio verify /dev/$disk 0xd15c 16 | tr '\n' ' ')
    diag "discard_verify_$who=$report"
    # Only the 6,143 discarded sectors differ, the first at 4 MiB.
    check "only-discarded-changed-$who" sh -c "echo '$report' | grep -q 'mismatches=6143 .*first_mismatch offset=4194304'"
done
rs_sha=$(dd if=/dev/rsnvme0n2 bs=1M count=16 2>/dev/null | sha256sum | cut -d' ' -f1)
c_sha=$(dd if=/dev/$c2 bs=1M count=16 2>/dev/null | sha256sum | cut -d' ' -f1)
check discards-same-bytes-as-c test "$rs_sha" = "$c_sha"

# Atomic writes (RWF_ATOMIC, never split): the disk takes one logical block whole, as the C driver's
# does (QEMU states no atomic write unit of its own). Larger ones the kernel refuses before they
# reach either driver, by the disk's limits.
for who in rs c; do
    if [ $who = rs ]; then disk=rsnvme0n2; else disk=$c2; fi
    check "atomic-write-$who" blkio atomic /dev/$disk 0xa7 512 2049
    check "larger-atomic-write-refused-$who" sh -c "blkio atomic /dev/$disk 0xa7 1024 2050 | grep -q errno=EINVAL"
done
dsm_commands=$(nvme_rs_counter dsm_commands) dsm_ranges=$(nvme_rs_counter dsm_ranges)
diag "dsm_commands=$dsm_commands dsm_ranges=$dsm_ranges"
check discard-of-two-ranges test "$dsm_commands" = 2 -a "$dsm_ranges" = 3
check reload-after-discards reload

# Discard the whole namespace, then a file system on it.
check discard blkdiscard /dev/rsnvme0n2
ln -sf /proc/mounts /etc/mtab
check mkfs-ext2 /bin/mke2fs -q -F -t ext2 /dev/rsnvme0n2
mkdir -p /mnt/rs
check mount mount -t ext2 /dev/rsnvme0n2 /mnt/rs
dd if=/dev/urandom of=/tmp/file bs=1M count=8 2>/dev/null
file_sha=$(sha256sum </tmp/file | cut -d' ' -f1)
check write-files sh -c 'cp /tmp/file /mnt/rs/file && mkdir /mnt/rs/dir &&
    for i in $(seq 1 100); do echo "$i" >/mnt/rs/dir/$i || exit 1; done'
check umount umount /mnt/rs
check fsck-clean /bin/e2fsck -f -n /dev/rsnvme0n2
check mount-again mount -t ext2 -o ro /dev/rsnvme0n2 /mnt/rs
check file-reads-back test "$(sha256sum </mnt/rs/file | cut -d' ' -f1)" = "$file_sha"
check umount-again umount /mnt/rs

# 100 unload/load cycles, each reading data back.
cycles=0
while [ $cycles -lt 100 ]; do
    rmmod nvme_rs || break
    insmod /modules/nvme_rs.ko || break
    wait_for 20 test -b /dev/rsnvme0n1 || break
    blkio verify /dev/rsnvme0n1 $((101 + cycles % 4)) 1 $((cycles % 4 * 32)) >/dev/null || break
    cycles=$((cycles + 1))
done
diag "cycles=$cycles"
check hundred-cycles test $cycles -eq 100
check unload rmmod nvme_rs
check released-at-unload pci_released $RS_PCI
