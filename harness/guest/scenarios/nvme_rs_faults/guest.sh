# shellcheck shell=sh
check load insmod /modules/nvme_rs.ko
check disk wait_for 20 disk_of $RS_PCI
check unbind sh -c "echo $RS_PCI >/sys/bus/pci/drivers/nvme_rs/unbind"

# After each probe: bound with its disk, or unbound with none; released.
probe_sweep probe-fails-cleanly-at-allocations $FAULT_STEP nvme_rs $RS_PCI disk_of

# Nothing lost: the controller binds, and its disk reads back what was written.
check bind sh -c "echo $RS_PCI >/sys/bus/pci/drivers/nvme_rs/bind"
check disk-again wait_for 20 disk_of $RS_PCI
disk=/dev/$(disk_of $RS_PCI)
check pattern-write blkio fill $disk 0xfa17 16
check pattern-verify blkio verify $disk 0xfa17 16
check unload rmmod nvme_rs
check released-at-unload pci_released $RS_PCI
