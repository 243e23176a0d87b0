# shellcheck shell=sh
# Format NVM through nvme-cli on nvme_rs and on the C nvme, twin controllers of two namespaces
# behind intel-iommu, while the other namespace of each is read and written: after each format the
# disk's block size and capacity follow the controller's as C's do, and data of every transfer
# size reads back as written, or is refused as C refuses it.
check load insmod /modules/nvme_rs.ko
check disks wait_for 20 test -b /dev/rsnvme0n2
check load-c-nvme load_c_nvme
check c-disk wait_for 20 disk_of "$C_PCI"
c_ctrl=/dev/$(ls "/sys/bus/pci/devices/$C_PCI/nvme")
c1=/dev/$(disk_of "$C_PCI")
c2=${c1%n1}n2
check c-second-disk wait_for 20 test -b "$c2"
rs1=/dev/rsnvme0n1 rs2=/dev/rsnvme0n2

# The controller's sysfs attributes, as C's (the twins' serial numbers differ: their length is
# compared, padding included).
attr_as_c() {
    rs=$(cat "/sys/class/misc/rsnvme0/$1") c=$(cat "/sys/class/nvme/${c_ctrl#/dev/}/$1")
    diag "$1: nvme_rs '$rs', C '$c'"
    if [ "$1" = serial ]; then [ ${#rs} = ${#c} ] && [ -n "$rs" ]; else [ "$rs" = "$c" ]; fi
}
for attr in model serial firmware_rev cntlid; do
    check "attribute-$attr" attr_as_c $attr
done

# The other namespaces: 4 KiB reads written back at random offsets, until the end or an error.
(blkio hammer $rs2 30 >/tmp/rs_hammer.out 2>&1) &
rs_hammer=$!
(blkio hammer "$c2" 30 >/tmp/c_hammer.out 2>&1) &
c_hammer=$!

dd if=/dev/urandom of=/tmp/pattern bs=1M count=16 2>/dev/null
# through BS MODE DEV: the pattern written to DEV in BS-byte writes and read back, O_DIRECT (MODE
# direct) or buffered and synced: 16 MiB, or 256 writes where that is less. Prints "ok", or the
# step that failed.
through() {
    count=$((16777216 / $1))
    [ $count -le 256 ] || count=256
    want=$(head -c $(($1 * count)) /tmp/pattern | sha256sum)
    if [ "$2" = direct ]; then wflag=oflag=direct rflag=iflag=direct; else wflag=conv=fsync rflag=; fi
    # shellcheck disable=SC2086 # an empty flag is no argument
    dd if=/tmp/pattern of="$3" bs="$1" count=$count $wflag 2>/dev/null || { echo write-refused; return; }
    echo 3 >/proc/sys/vm/drop_caches
    # shellcheck disable=SC2086
    got=$(dd if="$3" bs="$1" count=$count $rflag 2>/dev/null | sha256sum)
    if [ "$got" = "$want" ]; then echo ok; else echo read-differs; fi
}
# answers_as_c NAME COMMAND...: COMMAND, with a disk as its last argument, prints the same for
# nvme_rs's first disk as for C's.
answers_as_c() {
    name=$1
    shift
    rs=$("$@" $rs1 2>&1 | tr '\n' ' ') c=$("$@" "$c1" 2>&1 | tr '\n' ' ')
    diag "$name: nvme_rs '$rs', C '$c'"
    [ "$rs" = "$c" ]
}
read_block() { dd if="$1" of=/dev/null bs=4096 count=1 iflag=direct 2>/dev/null; echo "rc=$?"; }
getss() { blockdev --getss "$1"; }
getsize() { blockdev --getsize64 "$1"; }
# What the controller itself says of nvme_rs's namespace 1 (nvme id-ns): the block size and the
# capacity in bytes of the LBA format in use.
lbads_in_use() { nvme id-ns /dev/rsnvme0 -n 1 | sed -n 's/.*lbads:\([0-9]*\).*(in use).*/\1/p'; }
controller_getss() { echo $((1 << $(lbads_in_use))); }
controller_getsize() { echo $(($(nvme id-ns /dev/rsnvme0 -n 1 | sed -n 's/^nsze *: *//p') << $(lbads_in_use))); }
# follows NAME CONTROLLER_COMMAND COMMAND: COMMAND (with a disk as its last argument) prints for
# nvme_rs's first disk what CONTROLLER_COMMAND says the controller has, and what it prints for C's.
# C's disk sometimes keeps its old format after a format in a whole boot (seen on the KASAN and
# Debian kernels, never on nvme_rs's): then nvme_rs is held to the controller alone, and it is said.
follows() {
    name=$1 want=$($2)
    shift 2
    rs=$("$@" $rs1 2>&1) c=$("$@" "$c1" 2>&1)
    diag "$name: nvme_rs '$rs', C '$c', controller '$want'"
    [ "$rs" = "$want" ] || return 1
    [ "$rs" = "$c" ] || echo "C's disk lags the controller: '$c'"
}
# format LBAF: nvme-cli formats namespace 1 of both controllers to LBA format LBAF.
format() {
    rs=$(nvme format /dev/rsnvme0 -n 1 -l "$1" -f 2>&1; echo "rc=$?")
    c=$(nvme format "$c_ctrl" -n 1 -l "$1" -f 2>&1; echo "rc=$?")
    diag "format $1: nvme_rs: $(echo "$rs" | tr '\n' ' ')/ C: $(echo "$c" | tr '\n' ' ')"
    [ "${rs##*rc=}" = 0 ] && [ "${c##*rc=}" = 0 ]
}
for lbaf in 4 0; do
    check "format-$lbaf" format $lbaf
    # C's disk follows its scan work, which may lag the command: up to 10 s.
    check "block-size-$lbaf" wait_for 10 follows "block size after format $lbaf" controller_getss getss
    check "capacity-$lbaf" wait_for 10 follows "capacity after format $lbaf" controller_getsize getsize
    for bs in 512 4096 1048576; do
        check "direct-$bs-after-$lbaf" answers_as_c "O_DIRECT $bs after $lbaf" through $bs direct
    done
    check "buffered-after-$lbaf" answers_as_c "buffered after $lbaf" through 1048576 buffered
done
check rs-block-size-4096-seen sh -c "dmesg | grep -q 'nvme_rs.*namespace 1: 4096-byte blocks'"

# A format with 8 bytes of separate metadata a block (LBA format 1). nvme_rs does not serve
# metadata: it gives the disk capacity 0 and nothing may reach the namespace, whose reads would
# write metadata to bus address 0. So does C where the kernel has no block integrity (the lab
# kernels); where it has (Debian's), C serves the format with an integrity profile.
check format-metadata format 1
check capacity-with-metadata wait_for 10 sh -c "[ \$(blockdev --getsize64 $rs1) = 0 ]"
check read-with-metadata-nothing sh -c "[ \$(dd if=$rs1 bs=4096 count=1 iflag=direct 2>/dev/null | wc -c) = 0 ]"
c_integrity=$(cat "/sys/block/${c1#/dev/}/integrity/format" 2>/dev/null)
diag "C with metadata: capacity $(getsize "$c1"), integrity format '${c_integrity:-none}'"
if [ "${c_integrity:-none}" = none ] && [ "$(getsize "$c1")" = 0 ]; then
    check capacity-with-metadata-as-c wait_for 10 answers_as_c "capacity with metadata" getsize
    check read-with-metadata-as-c answers_as_c "read with metadata" read_block
fi
check format-back format 0
check capacity-back wait_for 10 answers_as_c "capacity back" getsize
check direct-after-metadata answers_as_c "O_DIRECT after metadata" through 4096 direct

wait $rs_hammer
wait $c_hammer
diag "nvme_rs's other namespace: $(cat /tmp/rs_hammer.out)"
diag "C's other namespace: $(cat /tmp/c_hammer.out)"
# nvme_rs freezes the disks around the format, and loses nothing; C's I/O may fail meanwhile
# (EREMOTEIO seen: an NVMe error while its namespace is formatted), which is reported only.
check rs-other-namespace grep -q 'errors=0 ' /tmp/rs_hammer.out
check rescan-ioctl nvme ns-rescan /dev/rsnvme0
check no-dmar-fault sh -c '! dmesg | grep -i "DMAR.*fault"'
