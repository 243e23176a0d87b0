# shellcheck shell=sh
# nvme_rs and the C nvme driver on identical controllers, two on null-co and two on raw files,
# round after round. After nvme-bind-alternately.sh (disk_of, load_c_nvme). Exported by
# bench_nvme: ROUNDS; FIGURE_SECONDS per figure and driver; SLICE, the seconds of each driver's
# turn (empty: one after the other); SPAN_MIB; COUNT (true with instruction counting); RS_DRIVER
# (nvme, for the control); BACKENDS (null file); FIGURES, each KEY:MODE:BLOCK_SIZE:QUEUE_DEPTH:FIELD
# (FIELD: what blkio's report gives, iops or mbps).
# shellcheck disable=SC2046 # one argument per controller
set -- $(for d in /sys/bus/pci/devices/*; do
    [ "$(cat "$d/class")" = 0x010802 ] && echo "${d##*/}"; done | sort)
null_a=$1 null_b=$2 file_a=$3 file_b=$4
check load-nvme_rs insmod /modules/nvme_rs.ko
check load-c-nvme load_c_nvme
all_disks() { for a in $null_a $null_b $file_a $file_b; do disk_of "$a" >/dev/null || return 1; done; }
# Which controller of each identical pair nvme_rs drives alternates every other round (the
# other goes to the C driver), so that neither driver always sits in the same PCI slot. In the
# control, the C driver drives nvme_rs's controllers too.
# Usage: bind_slots first|second
bind_slots() {
    if [ "$1" = first ]; then rs="$null_a $file_a" c="$null_b $file_b"; else rs="$null_b $file_b" c="$null_a $file_a"; fi
    for a in $null_a $null_b $file_a $file_b; do
        [ -e /sys/bus/pci/devices/$a/driver ] && echo "$a" >/sys/bus/pci/devices/$a/driver/unbind
    done
    for a in $rs; do echo "$RS_DRIVER" >/sys/bus/pci/devices/$a/driver_override; done
    for a in $c; do echo nvme >/sys/bus/pci/devices/$a/driver_override; done
    for a in $null_a $null_b $file_a $file_b; do echo "$a" >/sys/bus/pci/drivers_probe; done
    wait_for 30 all_disks || return 1
    name_disks $1
}
# Sets null_rs, file_rs, null_c, file_c for nvme_rs on the first|second controller of each pair.
name_disks() {
    if [ "$1" = first ]; then set -- $null_a $file_a $null_b $file_b; else set -- $null_b $file_b $null_a $file_a; fi
    null_rs=$(disk_of $1) file_rs=$(disk_of $2) null_c=$(disk_of $3) file_c=$(disk_of $4)
    diag "disks=$null_rs,$null_c,$file_rs,$file_c"
}
check disks wait_for 30 all_disks
# queue_settings DISK: what the block layer gives the disk's queue (its limits, merging, scheduler,
# completion CPU, statistics), and the paths of a multipath head (C's disk where the kernel has
# NVME_MULTIPATH).
queue_settings() {
    q=/sys/block/$1/queue out=""
    for f in max_sectors_kb max_hw_sectors_kb max_segments max_segment_size virt_boundary_mask \
        dma_alignment nomerges rq_affinity iostats scheduler nr_requests; do
        [ -e "$q/$f" ] && out="$out $f=$(sed 's/ /,/g' "$q/$f")"
    done
    [ -d "/sys/block/$1/multipath" ] && out="$out paths=$(ls "/sys/block/$1/multipath" | tr '\n' ,)"
    echo "${out# }"
}
# BIND_ALTERNATELY gave nvme_rs the first controller of each pair; the control rebinds it.
if [ "$RS_DRIVER" = nvme_rs ]; then bound=first; else bound=none; fi
name_disks first
export file_rs file_c
check fill-file-backends sh -c 'blkio fill /dev/$file_rs 7 $SPAN_MIB && blkio fill /dev/$file_c 7 $SPAN_MIB'
# With instruction counting, blkio marks the start and the end of each device's run.
marks=0
if [ "$COUNT" = true ]; then export BLKIO_MARK=1; fi
round=0
while [ $round -lt "$ROUNDS" ]; do
    # Who goes first alternates every round, the slots every other round.
    if [ $((round % 2)) = 0 ]; then order="c rs"; else order="rs c"; fi
    if [ $((round / 2 % 2)) = 0 ]; then slots=first; else slots=second; fi
    if [ "$slots" != "$bound" ]; then
        bind_slots $slots || { diag "round$round: disks did not come back"; break; }
        bound=$slots
    fi
    for backend in $BACKENDS; do
        for figure in $FIGURES; do
            IFS=: read -r key mode bs qd field <<FIGURE
$figure
FIGURE
            # One blkio process measures both drivers, one after the other in $order, with the
            # same buffers (see blkio.c).
            devs=""
            # shellcheck disable=SC2154 # dev is set by the eval
            for driver in $order; do eval dev=\$"${backend}_$driver"; devs="$devs,/dev/$dev"; done
            out=$(taskset 1 blkio bench ${devs#,} $mode $bs $qd "$FIGURE_SECONDS" "$SPAN_MIB" $SLICE)
            echo "$out" >/dev/kmsg
            for driver in $order; do
                eval dev=\$"${backend}_$driver"
                line=$(echo "$out" | grep " dev=/dev/$dev ")
                marks=$((marks + 2))
                diag "round$round.$backend.$key.$driver=$(echo "$line" | sed -n "s/.* $field=\([0-9.]*\).*/\1/p")"
                diag "round$round.$backend.$key.$driver.ios=$(echo "$line" | sed -n 's/.* ios=\([0-9]*\).*/\1/p')"
                diag "round$round.$backend.$key.$driver.mark=$marks"
            done
        done
    done
    round=$((round + 1))
done
# Each disk's queue settings in the last slots, and what reached it (its statistics: reads, reads merged, sectors read, ms,
# writes, writes merged, sectors written, ...), and for a multipath head what reached its path.
# shellcheck disable=SC2154 # dev is set by the eval
for backend in $BACKENDS; do
    for driver in rs c; do
        eval dev=\$"${backend}_$driver"
        paths=$(ls "/sys/block/$dev/multipath" 2>/dev/null)
        stat="$(xargs echo <"/sys/block/$dev/stat" | cut -d' ' -f1-8)"
        for p in $paths; do
            stat="$stat path: $(xargs echo <"/sys/block/$dev/multipath/$p/stat" | cut -d' ' -f1-8)"
        done
        diag "stat.$backend.$driver=$stat"
        diag "queue.$backend.$driver=$(queue_settings "$dev")"
    done
done
# Which CPU took the controllers' interrupts: "IRQ:CPU0,CPU1:NAME", one per vector.
diag "interrupts=$(awk '/nvme/ { printf "%s%s,%s:%s|", $1, $2, $3, $NF }' /proc/interrupts)"
check benchmark-done true
