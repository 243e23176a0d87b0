# Rust cfgs for where the kernel crate's API differs between the kernels that the same driver
# sources build for, so that the code can say #[cfg(kernel_before_7_3)]. Every module's Kbuild
# includes this file (from $(PROJECT), else two levels up); VERSION and PATCHLEVEL are the kernel's.
#   kernel_before_7_3   kernels older than 7.3 (Debian's 7.2)
kernel-cfg-version := $(shell printf '%d%02d' $(VERSION) $(PATCHLEVEL))
rustflags-y += $(if $(call test-lt, $(kernel-cfg-version), 703),--cfg=kernel_before_7_3)
