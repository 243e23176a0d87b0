# shellcheck shell=sh
# Namespaces that come and go, through nvme-cli, on nvme_rs and on the C nvme (twin controllers,
# each in an NVM subsystem of its own with namespace 1 attached and namespace 2 attached to no
# controller, behind intel-iommu): attach-ns adds the disk, data written to it reads back,
# detach-ns deletes it, as on C; the same through the other driver's controller of a shared
# subsystem, which only an asynchronous event tells of; the disks' nsid and wwid attributes are C's;
# a namespace's disk or character device held open after its namespace or its controller went gets
# ENODEV for what needs either.
check load insmod /modules/nvme_rs.ko
check disk wait_for 20 test -b /dev/rsnvme0n1
check load-c-nvme load_c_nvme
check c-disk wait_for 20 disk_of "$C_PCI"
c_ctrl=/dev/$(ls "/sys/bus/pci/devices/$C_PCI/nvme")
c1=/dev/$(disk_of "$C_PCI")
rs_ctrl=/dev/rsnvme0 rs1=/dev/rsnvme0n1
check no-second-disk-yet sh -c "! test -e /dev/rsnvme0n2 && ! test -e ${c1%n1}n2"

# The disks' attributes: the NSID, and a world-wide name of the same kind as C's (the twins'
# namespaces differ; the exact name is compared at the end, with C bound to nvme_rs's controller).
rs_wwid=$(cat /sys/block/rsnvme0n1/wwid)
c_wwid=$(cat "/sys/block/${c1#/dev/}/wwid")
diag "wwid_rs=$rs_wwid"
diag "wwid_c=$c_wwid"
check nsid-attribute sh -c "[ \"\$(cat /sys/block/rsnvme0n1/nsid)\" = \"\$(cat /sys/block/${c1#/dev/}/nsid)\" ]"
check wwid-kind sh -c "[ '${rs_wwid%%.*}' = '${c_wwid%%.*}' ] && [ ${#rs_wwid} = ${#c_wwid} ]"

cntlid() { cat "/sys/class/$1/cntlid"; }
rs_cntlid=$(cntlid misc/rsnvme0) c_cntlid=$(cntlid "nvme/${c_ctrl#/dev/}")
# attach NVME-CLI-VERB: nvme-cli attaches or detaches namespace 2 to or from each controller; both
# succeed.
attach() {
    rs=$(nvme "$1" $rs_ctrl -n 2 -c "$rs_cntlid" 2>&1; echo "rc=$?")
    c=$(nvme "$1" "$c_ctrl" -n 2 -c "$c_cntlid" 2>&1; echo "rc=$?")
    diag "$1: nvme_rs: $(echo "$rs" | tr '\n' ' ')/ C: $(echo "$c" | tr '\n' ' ')"
    [ "${rs##*rc=}" = 0 ] && [ "${c##*rc=}" = 0 ]
}
# through DEV: 4 MiB of random data written to DEV with O_DIRECT reads back equal.
dd if=/dev/urandom of=/tmp/pattern bs=1M count=4 2>/dev/null
through() {
    dd if=/tmp/pattern of="$1" bs=1M oflag=direct 2>/dev/null || return 1
    dd if="$1" bs=1M count=4 iflag=direct 2>/dev/null | cmp /tmp/pattern -
}
for round in 1 2; do
    check "attach-$round" attach attach-ns
    # nvme_rs scans before the command returns; C's disk follows its scan work.
    check "rs-disk-added-$round" test -b /dev/rsnvme0n2
    check "c-disk-added-$round" wait_for 10 test -b "${c1%n1}n2"
    check "rs-size-as-c-$round" sh -c "[ \$(blockdev --getsize64 /dev/rsnvme0n2) = \$(blockdev --getsize64 ${c1%n1}n2) ]"
    check "rs-data-$round" through /dev/rsnvme0n2
    check "c-data-$round" through "${c1%n1}n2"
    check "rs-nsid-2-$round" grep -qx 2 /sys/block/rsnvme0n2/nsid
    # The namespace's disk and generic character device, held open across the detachment.
    check "rs-ng-device-$round" test -c /dev/rsng0n2
    exec 4</dev/rsnvme0n2 5</dev/rsng0n2
    check "detach-$round" attach detach-ns
    check "rs-disk-deleted-$round" sh -c '! test -e /dev/rsnvme0n2 && ! test -e /dev/rsng0n2'
    diag "held_after_detach_disk_$round=$(passthru ns-io fd:4)"
    diag "held_after_detach_ng_$round=$(passthru ns-io fd:5)"
    exec 4<&- 5<&-
    check "c-disk-deleted-$round" wait_for 10 sh -c "! test -e ${c1%n1}n2"
done
check rs-first-disk-kept through $rs1
# I/O commands whose data length is not what they move: a Read of 64 KiB said to move 8 KiB keeps
# to nvme_rs's buffer (no DMAR fault, checked at the end) and returns the 8 KiB asked for; a
# command whose length the driver cannot tell, of two pages, only for CAP_SYS_ADMIN.
chmod 0666 $rs1
diag "overlong_root=$(passthru overlong $rs1)"
diag "overlong_nobody=$(passthru --as-nobody overlong $rs1)"
# A rescan with nothing changed keeps the disks as they are.
check rescan nvme ns-rescan $rs_ctrl
check rescan-kept-disk sh -c '[ -b /dev/rsnvme0n1 ] && ! [ -e /dev/rsnvme0n2 ]'
check rs-log sh -c "dmesg | grep -q 'nvme_rs.*namespace 2: disk added' && dmesg | grep -q 'nvme_rs.*namespace 2 is gone'"

# Two controllers in one NVM subsystem, the third (nvme_rs) and the fourth (C), share namespace 1,
# attached to neither. nvme_rs learns of an attachment or a detachment made through C's controller
# only from its controller's asynchronous event, and its disk comes and goes with it; what it
# writes there C reads. (QEMU checks whether the namespace is attached to the controller that
# sends the command, not to the one named: C's controller attaches the namespace to nvme_rs's
# before its own, and detaches it from nvme_rs's before its own.)
nvme_pci() {
    for d in /sys/bus/pci/devices/*; do
        [ "$(cat "$d/class")" = 0x010802 ] && echo "${d##*/}"
    done | sed -n "$1p"
}
shared_c_pci=$(nvme_pci 4)
for d in /sys/class/misc/rsnvme*; do
    case "$(cat "$d/serial")" in rdd0002*) shared_rs=/dev/${d##*/} ;; esac
done
shared_c=/dev/$(ls "/sys/bus/pci/devices/$shared_c_pci/nvme")
rs_id=$(cntlid "misc/${shared_rs#/dev/}") c_id=$(cntlid "nvme/${shared_c#/dev/}")
diag "shared_subsystem=$shared_rs ($rs_id) $shared_c ($c_id)"
check aen-none-yet sh -c "! test -e ${shared_rs}n1"
check aen-attach-to-rs nvme attach-ns "$shared_c" -n 1 -c "$rs_id"
check aen-rs-disk-added wait_for 10 test -b "${shared_rs}n1"
check aen-attach-to-c nvme attach-ns "$shared_c" -n 1 -c "$c_id"
check aen-c-disk-added wait_for 10 disk_of "$shared_c_pci"
shared_c_disk=/dev/$(disk_of "$shared_c_pci")
check aen-rs-writes-c-reads sh -c "dd if=/tmp/pattern of=${shared_rs}n1 bs=1M oflag=direct 2>/dev/null && dd if=$shared_c_disk bs=1M count=4 iflag=direct 2>/dev/null | cmp /tmp/pattern -"
check aen-detach-from-rs nvme detach-ns "$shared_c" -n 1 -c "$rs_id"
check aen-rs-disk-deleted wait_for 10 sh -c "! test -e ${shared_rs}n1"
check aen-detach-from-c nvme detach-ns "$shared_c" -n 1 -c "$c_id"
check aen-rs-disk-added-once sh -c "[ \$(dmesg | grep -c 'nvme_rs.*namespace 1: disk added') = 1 ]"

# A long admin command (an Asynchronous Event Request, answered only at an event) waits when each
# driver lets go of its controller: the unbind ends within seconds, and so does the command, with
# C's answer.
long_admin() {
    nvme admin-passthru "$1" --opcode=0x0c --timeout=600000 >"/tmp/long_$2.out" 2>&1
    echo "rc=$?" >>"/tmp/long_$2.out"
}
long_admin $rs_ctrl rs &
long_admin "$c_ctrl" c &
# nvme_rs's disk and its namespace's character device, held open across the unbind.
exec 4<$rs1 5</dev/rsng0n1
# admin_commands_in_flight: both nvme commands (the only nvme processes now) sleep inside their
# ioctl (x86-64's system call 16), so each driver holds one when it is unbound; a command that had
# not got there yet would be refused instead.
admin_commands_in_flight() {
    in_flight=0
    for proc in /proc/[0-9]*; do
        read -r command 2>/dev/null <"$proc/comm" || continue
        read -r syscall _ 2>/dev/null <"$proc/syscall" || continue
        if [ "$command" = nvme ] && [ "$syscall" = 16 ]; then
            in_flight=$((in_flight + 1))
        fi
    done
    [ "$in_flight" -eq 2 ]
}
check long-admin-in-flight wait_for 30 admin_commands_in_flight
# unbind_within DRIVER ADDRESS: unbinds the device in less than ten seconds.
unbind_within() {
    start=$(uptime_cs)
    echo "$2" >"/sys/bus/pci/drivers/$1/unbind" || return 1
    [ $(($(uptime_cs) - start)) -lt 1000 ]
}
check unbind-rs-under-long-admin unbind_within nvme_rs "$RS_PCI"
check unbind-c-under-long-admin unbind_within nvme "$C_PCI"
wait
diag "held_after_unbind_disk=$(passthru ns-io fd:4)"
diag "held_after_unbind_ng=$(passthru ns-io fd:5)"
check module-stays-while-held sh -c '! rmmod nvme_rs 2>/dev/null'
exec 4<&- 5<&-
diag "long_admin_rs=$(tr '\n' ' ' </tmp/long_rs.out)"
diag "long_admin_c=$(tr '\n' ' ' </tmp/long_c.out)"

# nvme_rs's controller bound to C: its namespace gets the name nvme_rs gave it.
check bind-c sh -c "echo nvme >/sys/bus/pci/devices/$RS_PCI/driver_override && echo $RS_PCI >/sys/bus/pci/drivers/nvme/bind"
check c-disk-of-rs-controller wait_for 20 disk_of "$RS_PCI"
c_wwid_of_rs=$(cat "/sys/block/$(disk_of "$RS_PCI")/wwid")
diag "wwid_under_c=$c_wwid_of_rs"
check wwid-as-c test "$c_wwid_of_rs" = "$rs_wwid"
check no-dmar-fault sh -c '! dmesg | grep -i "DMAR.*fault"'
