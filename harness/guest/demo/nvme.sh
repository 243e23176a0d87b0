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
diag "$(blkio bench /dev/rsnvme0n1 randread 4096 32 2 64) (nvme_rs)"
diag "$(blkio bench /dev/nvme0n1 randread 4096 32 2 64) (C nvme)"
dmesg | grep 'nvme_rs' | while IFS= read -r l; do diag "kernel: $l"; done
check unload-nvme_rs rmmod nvme_rs
