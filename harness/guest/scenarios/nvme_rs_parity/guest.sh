# shellcheck shell=sh
# nvme_rs's controller device as nvme-cli and the passthrough ioctls see it, against the C nvme
# driver's twin: the first controller is nvme_rs's (/dev/rsnvme0), the second the C driver's; the
# third and fourth, with one namespace each, the same.
check load insmod /modules/nvme_rs.ko
check disks wait_for 20 test -b /dev/rsnvme0n1 -a -b /dev/rsnvme0n2
check controller-device wait_for 20 test -c /dev/rsnvme0
check load-c-nvme load_c_nvme
# c_controller PCI_ADDRESS: the C driver's controller device there (it probes its controllers at
# once, so their numbers need not follow the bus).
c_controller() { echo "/dev/$(ls "/sys/bus/pci/devices/$1/nvme")"; }
check c-controller-device wait_for 20 sh -c "ls /sys/bus/pci/devices/$C_PCI/nvme | grep -q nvme"

RS=/dev/rsnvme0 C=$(c_controller "$C_PCI")
check c-controller-node wait_for 20 test -c "$C"
# What tells twin controllers apart (serial number, NQN), the device's own name in nvme-cli's
# headers, and the I/O counters of the SMART log, which follow each disk's own history.
twin_lines='^sn  *:|^subnqn  *:|^Data Units|^host_(read|write)_commands|^controller_busy_time'
# nvme_out SUBCOMMAND DEV [OPTIONS...]: nvme-cli's output, without the lines above, one line.
nvme_out() {
    sub=$1 dev=$2
    shift 2
    out=$(nvme "$sub" "$dev" "$@" 2>&1)
    rc=$?
    echo "$out" | grep -Ev "$twin_lines" | sed "s|${dev#/dev/}||g" | tr '\n' '|'
    echo " rc=$rc"
}
# nvme_same NAME RS_DEV C_DEV SUBCOMMAND [OPTIONS...]: nvme-cli prints the same for both devices.
nvme_same() {
    name=$1 rs_dev=$2 c_dev=$3
    shift 3
    rs_out=$(nvme_out "$1" "$rs_dev" "$@") c_out=$(nvme_out "$1" "$c_dev" "$@")
    diag "nvme_$name=$rs_out"
    [ "$rs_out" = "$c_out" ] || {
        echo "nvme $*: nvme_rs / C:"
        echo "$rs_out" | tr '|' '\n' >/tmp/rs.out
        echo "$c_out" | tr '|' '\n' >/tmp/c.out
        diff /tmp/rs.out /tmp/c.out
        return 1
    }
}
# nvme_as_c NAME SUBCOMMAND [OPTIONS...]: nvme-cli prints the same for both controllers.
nvme_as_c() {
    name=$1
    shift
    nvme_same "$name" $RS "$C" "$@"
}
check id-ctrl-as-c nvme_as_c id_ctrl id-ctrl
check id-ns-1-as-c nvme_as_c id_ns_1 id-ns -n 1
check id-ns-2-as-c nvme_as_c id_ns_2 id-ns -n 2
check smart-log-as-c nvme_as_c smart_log smart-log
check error-log-as-c nvme_as_c error_log error-log
# Every feature nvme-cli names that QEMU has, but those the C driver sets at its start and
# nvme_rs does not (Asynchronous Event Configuration, Host Behavior Support) and the Timestamp,
# which counts time; these are shown only.
for f in 1 2 4 5 6 7 8 9 0xa; do
    check "get-feature-$f-as-c" nvme_as_c "feature_$f" get-feature -f $f
done
for f in 0xb 0xe 0x16; do
    diag "nvme_feature_${f}_rs=$(nvme_out get-feature $RS -f $f)"
    diag "nvme_feature_${f}_c=$(nvme_out get-feature "$C" -f $f)"
done
diag "nvme_id_ctrl_rs_sn=$(nvme id-ctrl $RS | grep '^sn ')"

# The passthrough ioctls' answers to bad flags, metadata, lengths and pointers, and to commands
# a caller may or may not send, as root and as nobody (the device nodes opened to everyone, as
# the ioctls check the caller themselves).
chmod 0666 $RS "$C"
for who in root nobody; do
    as=
    [ $who = nobody ] && as=--as-nobody
    # shellcheck disable=SC2086 # no option as root
    rs_cases=$(passthru $as cases $RS | tr '\n' '|') c_cases=$(passthru $as cases "$C" | tr '\n' '|')
    diag "cases_${who}_rs=$rs_cases"
    diag "cases_${who}_c=$c_cases"
done

# Random admin commands, as root (sparing those that destroy data or take the controller from
# its driver) and as nobody, while a writer runs on the first disk; then the disk still reads
# back what was written, and nvme-cli still works.
blkio fill /dev/rsnvme0n1 0xf022 48 &
writer=$!
check fuzz-as-root passthru fuzz $RS 3000 1
check fuzz-as-nobody passthru --as-nobody fuzz $RS 3000 2
wait $writer
writer_rc=$?
check writer-during-fuzz test $writer_rc = 0
check verify-after-fuzz blkio verify /dev/rsnvme0n1 0xf022 48
check id-ctrl-after-fuzz nvme_as_c id_ctrl_after_fuzz id-ctrl
check fuzz-as-root-on-c passthru fuzz "$C" 3000 1

# Controller resets while I/O runs, three through nvme-cli's `nvme reset` (NVME_IOCTL_RESET) and
# three through sysfs, on each driver: random reads at queue depth 32 on the second disk end
# without an error, and the first disk, rewritten meanwhile, reads back the last pattern written.
c_disk() { for d in /sys/block/"${C#/dev/}"n*; do [ "$(cat "$d/nsid")" = "$1" ] && echo "/dev/${d##*/}"; done; }
# rewrite_start DISK: rewrites DISK's first 48 MiB, a new pattern each pass (60 at most), until
# rewrite_check, which must run in the same shell: the last pattern written reads back.
rewrite_start() {
    rm -f /tmp/stop /tmp/last_pass
    (for pass in $(seq 1 60); do
        [ -e /tmp/stop ] && break
        blkio fill "$1" $((0x7e00 + pass)) 48 >/dev/null || exit 1
        echo "$pass" >/tmp/last_pass
    done) &
    rewriter=$!
    sleep 0.5
}
rewrite_check() {
    touch /tmp/stop
    wait "$rewriter" || return 1
    blkio verify "$1" $((0x7e00 + $(cat /tmp/last_pass))) 48 | tee /tmp/verify.out
    grep -q ' mismatches=0' /tmp/verify.out
}
# resets_under_io DEV SYSFS_ATTR DISK1 DISK2
resets_under_io() {
    dev=$1 attr=$2 disk1=$3 disk2=$4
    blkio bench "$disk2" randread 4096 32 5 >/tmp/bench.out &
    reader=$!
    rewrite_start "$disk1"
    for _ in 1 2 3; do
        nvme reset "$dev" || return 1
        sleep 0.3
        echo 1 >"$attr" || return 1
        sleep 0.3
    done
    wait $reader || return 1
    cat /tmp/bench.out
    grep -q ' errors=0' /tmp/bench.out && rewrite_check "$disk1"
}
check resets-under-io resets_under_io $RS /sys/class/misc/rsnvme0/reset_controller /dev/rsnvme0n1 /dev/rsnvme0n2
rs_seed=$((0x7e00 + $(cat /tmp/last_pass)))
diag "resets=$(nvme_rs_total resets)"
check c-resets-under-io resets_under_io "$C" "/sys/class/nvme/${C#/dev/}/reset_controller" "$(c_disk 1)" "$(c_disk 2)"
check nvme-cli-after-resets nvme_as_c id_ctrl_after_resets id-ctrl

# QEMU completes what it has when it is disabled, so for a command still in flight at a reset, one
# whose completion fault injection loses: the reset (long before the 30 s timeout) takes it from
# the controller and sends it again, and the read it belongs to succeeds, on either driver.
# requeued_read DEV DISK SEED
requeued_read() {
    dev=$1 disk=$2 seed=$3
    echo 100 >/sys/kernel/debug/fail_io_timeout/probability
    echo 1 >/sys/kernel/debug/fail_io_timeout/times
    echo 0 >/sys/kernel/debug/fail_io_timeout/verbose
    echo 1 >"/sys/block/${disk#/dev/}/io-timeout-fail"
    blkio verify "$disk" "$seed" 1 >/tmp/lost.out &
    reader=$!
    sleep 1
    nvme reset "$dev"
    wait $reader
    rc=$?
    echo 0 >"/sys/block/${disk#/dev/}/io-timeout-fail"
    cat /tmp/lost.out
    [ $rc = 0 ] && grep -q ' mismatches=0' /tmp/lost.out
}
# (Debian's kernels have no FAIL_IO_TIMEOUT: there the test says so.)
if [ -d /sys/kernel/debug/fail_io_timeout ]; then
    check requeued-read requeued_read $RS /dev/rsnvme0n1 $rs_seed
    diag "requeued=$(nvme_rs_total requeued_commands)"
    c_seed=$((0x7e00 + $(cat /tmp/last_pass)))
    check c-requeued-read requeued_read "$C" "$(c_disk 1)" $c_seed
else
    diag "requeued=no fault injection"
fi

# System sleep while nvme_rs's first disk is rewritten: pm_test=devices runs every driver's
# suspend and resume callbacks around a suspend to idle. nvme_rs shuts its controller down
# (CC.SHN), takes the requests in flight and sends them again after the reset that resumes it:
# the rewriter finishes and its last pattern reads back; nvme-cli works on both drivers after.
sleep_under_io() {
    rewrite_start /dev/rsnvme0n1
    echo devices >/sys/power/pm_test || return 1
    slept=yes
    echo freeze >/sys/power/state || slept=no
    echo none >/sys/power/pm_test
    [ $slept = yes ] && rewrite_check /dev/rsnvme0n1
}
check sleep-under-io sleep_under_io
rs_seed=$((0x7e00 + $(cat /tmp/last_pass)))
diag "resumed=$(nvme_rs_total resumes)"
check nvme-cli-after-sleep nvme_as_c id_ctrl_after_sleep id-ctrl

# I/O passthrough on a controller's device (the deprecated NVME_IOCTL_IO_CMD there, which goes to
# the only namespace): the second pair of controllers has one namespace each. nvme-cli's
# io-passthru writes 4 KiB at LBA 8 and reads it back, on each driver; the disk reads back the
# same bytes, and both drivers answer the same to a wrong NSID and to nobody.
RS1=/dev/rsnvme1
C1=$(c_controller "$(for d in /sys/bus/pci/devices/*; do [ -d "$d/nvme" ] && echo "${d##*/}"; done | sed -n 2p)")
diag "io_devices=$RS1,$C1"
dd if=/dev/urandom of=/tmp/pattern bs=4096 count=1 2>/dev/null
# io_passthru DEV DISK: writes the pattern at LBA 8 and reads it back through the device, and
# reads the first 8 KiB (two pages: PRP2 is then the second page) as the disk holds them
io_passthru() {
    nvme io-passthru "$1" -o 1 -n 1 -l 4096 -w --cdw10=8 --cdw12=7 -i /tmp/pattern || return 1
    nvme io-passthru "$1" -o 2 -n 1 -l 4096 -r --cdw10=8 --cdw12=7 -b >/tmp/back || return 1
    cmp /tmp/pattern /tmp/back || return 1
    nvme io-passthru "$1" -o 2 -n 1 -l 8192 -r --cdw10=0 --cdw12=15 -b >/tmp/back8k || return 1
    dd if="$2" bs=8192 count=1 iflag=direct 2>/dev/null | cmp /tmp/back8k -
}
check io-passthru io_passthru $RS1 /dev/rsnvme1n1
check io-passthru-on-disk sh -c 'dd if=/dev/rsnvme1n1 bs=4096 skip=1 count=1 2>/dev/null | cmp /tmp/pattern -'
check c-io-passthru io_passthru "$C1" "${C1}n1"
for dev in $RS1 "$C1"; do
    out=$(nvme io-passthru "$dev" -o 2 -n 2 -l 4096 -r --cdw10=8 --cdw12=7 2>&1 | tail -n 1)
    diag "io_wrong_nsid_${dev##*/}=$out"
done
chmod 0666 $RS1 "$C1"
diag "io_nobody_rs=$(passthru --as-nobody io-read $RS1)"
diag "io_nobody_c=$(passthru --as-nobody io-read "$C1")"
# A Read and a Write of what it read, through a file opened read-only and one opened for writing:
# the effects log says a Read is harmless, a Write changes blocks (it needs a file open for writing).
diag "io_rewrite_nobody_rs=$(passthru --as-nobody io-rewrite $RS1)"
diag "io_rewrite_nobody_c=$(passthru --as-nobody io-rewrite "$C1")"
check data-after-nobody-rewrite io_passthru $RS1 /dev/rsnvme1n1

# A namespace's own devices, its disk and its generic character device (nvme_rs's /dev/rsng1n1,
# C's /dev/ng<C>n1): nvme-cli's get-ns-id, id-ns (the NSID from the device) and io-passthru answer
# as C's, and so do the namespace ioctls (`passthru ns-io`), as root and as nobody; through a
# partition, nobody may send an I/O command (C keeps a partition's user inside it).
RS1_NG=/dev/rsng1n1 C1_NG=/dev/ng${C1#/dev/nvme}n1
check ng-devices wait_for 20 test -c $RS1_NG -a -c "$C1_NG"
# namespace_devices_as_c KIND RS_DEV C_DEV
namespace_devices_as_c() {
    kind=$1 rs=$2 c=$3
    check "get-ns-id-$kind-as-c" nvme_same "get_ns_id_$kind" "$rs" "$c" get-ns-id
    check "id-ns-$kind-as-c" nvme_same "id_ns_$kind" "$rs" "$c" id-ns
    check "io-passthru-$kind" io_passthru "$rs" /dev/rsnvme1n1
    check "c-io-passthru-$kind" io_passthru "$c" "${C1}n1"
    ns_io_as_c "$kind" "$rs" "$c"
}
# ns_io_as_c KIND RS_DEV C_DEV: `passthru ns-io` on each, as root and as nobody
ns_io_as_c() {
    chmod 0666 "$2" "$3"
    for who in root nobody; do
        as=
        [ $who = nobody ] && as=--as-nobody
        # shellcheck disable=SC2086 # no option as root
        diag "ns_io_$1_${who}_rs=$(passthru $as ns-io "$2")"
        # shellcheck disable=SC2086
        diag "ns_io_$1_${who}_c=$(passthru $as ns-io "$3")"
    done
}
namespace_devices_as_c disk /dev/rsnvme1n1 "${C1}n1"
namespace_devices_as_c ng $RS1_NG "$C1_NG"
# one_partition DISK: a DOS partition table with one Linux partition, sectors 2048 to 10239
one_partition() {
    {
        dd if=/dev/zero bs=446 count=1 2>/dev/null
        printf '\000\000\000\000\203\000\000\000\000\010\000\000\000\040\000\000'
        dd if=/dev/zero bs=48 count=1 2>/dev/null
        printf '\125\252'
    } >/tmp/mbr
    dd if=/tmp/mbr of="$1" bs=512 count=1 conv=notrunc oflag=direct 2>/dev/null &&
        blockdev --rereadpt "$1"
}
check partition one_partition /dev/rsnvme1n1
check c-partition one_partition "${C1}n1"
check partition-nodes wait_for 20 test -b /dev/rsnvme1n1p1 -a -b "${C1}n1p1"
ns_io_as_c partition /dev/rsnvme1n1p1 "${C1}n1p1"

# A file held open across the unbind: its ioctls get ENODEV, nothing crashes, and while it is
# open the module stays (the file's owner, or on 7.2 the driver's own reference).
exec 3<$RS
check unbind-while-open sh -c "echo $RS_PCI >/sys/bus/pci/drivers/nvme_rs/unbind"
check no-device-after-unbind test ! -e $RS
diag "held_file_after_unbind=$(passthru cases fd:3 | head -n 1)"
check module-stays-while-open sh -c '! rmmod nvme_rs 2>/dev/null'
exec 3<&-
check bind-again sh -c "echo $RS_PCI >/sys/bus/pci/drivers/nvme_rs/bind"
check device-again wait_for 20 test -c $RS
check id-ctrl-after-rebind nvme_as_c id_ctrl_after_rebind id-ctrl
check unload rmmod nvme_rs
check reload insmod /modules/nvme_rs.ko
check disk-after-reload wait_for 20 test -b /dev/rsnvme0n1
check verify-after-reload blkio verify /dev/rsnvme0n1 $rs_seed 48
