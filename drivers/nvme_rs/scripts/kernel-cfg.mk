# Rust cfgs for where the kernel crate's API differs between the kernels that the same driver
# sources build for, so that the code can say #[cfg(kernel_before_7_3)], and the module name that
# dma_local's C wrappers carry. Every module's Kbuild includes this file (a driver its own copy in
# scripts/, vendored from template/) after setting obj-m; VERSION and PATCHLEVEL are the kernel's.
#   kernel_before_7_3   kernels older than 7.3 (Debian's 7.2)
kernel-cfg-version := $(shell printf '%d%02d' $(VERSION) $(PATCHLEVEL))
rustflags-y += $(if $(call test-lt, $(kernel-cfg-version), 703),--cfg=kernel_before_7_3)

# dma_local's C wrappers carry the module's name, so that the copies in two drivers built into one
# kernel do not clash: dma_local_shim.h pastes it into each symbol, and dma_local.rs reads it from
# the environment (env!) to link to them.
dma-local-modname := $(basename $(notdir $(firstword $(obj-m))))
export DMA_LOCAL_MODNAME := $(dma-local-modname)
ccflags-y += -DDMA_LOCAL_MODNAME=$(dma-local-modname)
