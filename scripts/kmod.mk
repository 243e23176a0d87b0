# Included by every out-of-tree module's Makefile. The module itself is described by its Kbuild file.
#   make                  build against the project's lab kernel, with its toolchain
#   make KDIR=<dir>       build against another kernel with the toolchain in PATH (or RUSTC=...):
#                         a full kernel build, or a distribution's headers such as
#                         /lib/modules/$(uname -r)/build, which scripts/prepare-headers.sh first
#                         completes into a Rust-capable build directory (once per kernel)
#   make rust-analyzer    write rust-project.json for IDEs
#   make clean
TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/..)

ifdef KDIR
# The toolchain the build will use, also when given on make's command line, is the one checked.
BUILD_DIR := $(shell $(foreach v,RUSTC BINDGEN PAHOLE,$(if $($(v)),$(v)='$($(v))')) \
	$(TOP)/scripts/prepare-headers.sh $(KDIR))
ifeq ($(BUILD_DIR),)
$(error cannot build for the kernel in $(KDIR): see the message above)
endif
# And the build uses it: the kernel's Makefile sets RUSTC and the others itself, over what the
# environment says (`eval "$(scripts/env.sh --export)"` exports them, with KDIR), so only make's
# command line passes them on.
KBUILD_VARS := $(foreach v,RUSTC HOSTRUSTC RUSTDOC CLIPPY_DRIVER BINDGEN PAHOLE LIBCLANG_PATH,\
	$(if $($(v)),$(v)='$($(v))'))
else
BUILD_DIR := $(shell $(TOP)/scripts/env.sh --get KDIR)
ifeq ($(BUILD_DIR),)
$(error no kernel to build against: run $(TOP)/scripts/setup.sh, or pass KDIR=<kernel build or headers dir>)
endif
KBUILD_VARS := $(shell $(TOP)/scripts/env.sh --toolchain)
endif

all modules:
	$(MAKE) -C $(BUILD_DIR) M=$(CURDIR) PROJECT=$(TOP) $(KBUILD_VARS) modules

rust-analyzer clean:
	$(MAKE) -C $(BUILD_DIR) M=$(CURDIR) PROJECT=$(TOP) $(KBUILD_VARS) $@

.PHONY: all modules rust-analyzer clean
