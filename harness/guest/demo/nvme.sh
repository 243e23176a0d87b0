# shellcheck shell=sh
# nvme_rs on one NVMe controller, the C nvme driver on its twin. After nvme-bind-alternately.sh
# (load_c_nvme).
check load-nvme_rs insmod /modules/nvme_rs.ko
check load-c-nvme load_c_nvme
check disks wait_for 20 sh -c 'test -b /dev/rsnvme0n1 && test -b /dev/nvme0n1'
diag "rsnvme0n1: $(($(cat /sys/block/rsnvme0n1/size) / 2048)) MiB, $(ls /sys/block/rsnvme0n1/mq | wc -l) hardware queues"
check write-64MiB-pattern blkio fill /dev/rsnvme0n1 0xd1 64
diag "$(blkio verify /dev/rsnvme0n1 0xd1 64)"
check same-pattern-on-c-nvme blkio fill /dev/nvme0n1 0xd1 64
diag "sha256 via nvme_rs $(dd if=/dev/rsnvme0n1 bs=1M count=64 2>/dev/null | sha256sum | cut -c1-16)..."
diag "sha256 via C nvme  $(dd if=/dev/nvme0n1 bs=1M count=64 2>/dev/null | sha256sum | cut -c1-16)..."
# Throughput, the drivers taking turns on the same boot (nvme_rs, C, C, nvme_rs: neither has only
# the first or only the last run); scripts/bench-nvme.sh is the benchmark.
diag "throughput in MB/s, four 2 s runs per figure (scripts/bench-nvme.sh measures it properly):"
# run DISK FIGURE: one 2 s run; prints its MB/s.
run() {
    # shellcheck disable=SC2086 # the figure's mode, block size and queue depth as three words
    blkio bench "$1" $2 2 64 | sed -n 's/.* mbps=\([0-9.]*\) errors=0$/\1/p' | grep . || echo failed
}
for figure in "randread 4096 32" "seqread 131072 8" "seqwrite 131072 8"; do
    rs1=$(run /dev/rsnvme0n1 "$figure") c1=$(run /dev/nvme0n1 "$figure")
    c2=$(run /dev/nvme0n1 "$figure") rs2=$(run /dev/rsnvme0n1 "$figure")
    diag "$figure: nvme_rs $rs1, $rs2; C nvme $c1, $c2"
done
# What nvme-cli reads through nvme_rs's controller device.
nvme id-ctrl /dev/rsnvme0 | head -n 8 | while IFS= read -r l; do diag "nvme id-ctrl /dev/rsnvme0: $l"; done
nvme smart-log /dev/rsnvme0 | head -n 8 | while IFS= read -r l; do diag "nvme smart-log /dev/rsnvme0: $l"; done
diag "nvme_rs counters: $(cd /sys/kernel/debug/rsnvme0/counters && for c in prp_commands sgl_commands fua_commands resets; do printf '%s=%s ' "$c" "$(cat "$c")"; done)"
dmesg | grep 'nvme_rs' | while IFS= read -r l; do diag "kernel: $l"; done
check unload-nvme_rs rmmod nvme_rs
