# shellcheck shell=sh
i=0
for d in /sys/bus/pci/devices/*; do
    [ "$(cat "$d/class")" = 0x010802 ] || continue
    if [ $((i % 2)) = 0 ]; then driver=nvme_rs; else driver=nvme; fi
    echo $driver >"$d/driver_override"
    [ $i = 0 ] && export RS_PCI=${d##*/}
    [ $i = 1 ] && export C_PCI=${d##*/}
    i=$((i + 1))
done
disk_of() {
    for b in /sys/bus/pci/devices/$1/block/*n1 /sys/bus/pci/devices/$1/nvme/*/nvme*n1; do
        [ -e "$b" ] || continue
        # With NVMe multipath (Debian's kernels), the C driver's disk is the namespace head:
        # path nvme0c0n1 belongs to disk nvme0n1.
        echo "${b##*/}" | sed 's/^\(nvme[0-9]*\)c[0-9]*n/\1n/'
        return 0
    done
    return 1
}
load_c_nvme() {
    for m in nvme-keyring nvme-auth; do
        [ ! -e /modules/$m.ko ] || insmod /modules/$m.ko || return
    done
    insmod /modules/nvme-core.ko && insmod /modules/nvme.ko
}
