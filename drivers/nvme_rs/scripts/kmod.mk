# What a module's Makefile includes; the module itself is described by its Kbuild file. Every driver
# carries its own copy in its scripts/ (vendored from the project's template/, checked by
# scripts/sync-dma.sh), so that a driver directory builds wherever it is copied.
#   make                  inside the project: against its lab kernel, with its toolchain;
#                         elsewhere: against the running kernel, as make KDIR=/lib/modules/$(uname -r)/build
#   make KDIR=<dir>       against another kernel with the toolchain in PATH (or RUSTC=...): a full
#                         kernel build, or a distribution's headers, which scripts/prepare-headers.sh
#                         first completes into a Rust-capable build directory (once per kernel)
#   make rust-analyzer    write rust-project.json for IDEs
#   make clean
# PROJECT=<dir> names the project when the module is not two levels below it.
KMOD_SCRIPTS := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
PROJECT ?= $(abspath $(CURDIR)/../..)
ifeq ($(wildcard $(PROJECT)/scripts/env.sh),)
PROJECT :=
KDIR ?= /lib/modules/$(shell uname -r)/build
endif

ifdef KDIR
# The toolchain the build will use, also when given on make's command line, is the one checked.
BUILD_DIR := $(shell $(foreach v,RUSTC BINDGEN PAHOLE,$(if $($(v)),$(v)='$($(v))')) \
	bash $(KMOD_SCRIPTS)/prepare-headers.sh $(KDIR))
ifeq ($(BUILD_DIR),)
$(error cannot build for the kernel in $(KDIR): see the message above)
endif
# And the build uses it: the kernel's Makefile sets RUSTC and the others itself, over what the
# environment says (`eval "$(scripts/env.sh --export)"` exports them, with KDIR), so only make's
# command line passes them on.
KBUILD_VARS := $(foreach v,RUSTC HOSTRUSTC RUSTDOC CLIPPY_DRIVER BINDGEN PAHOLE LIBCLANG_PATH,\
	$(if $($(v)),$(v)='$($(v))'))
else
BUILD_DIR := $(shell $(PROJECT)/scripts/env.sh --get KDIR)
ifeq ($(BUILD_DIR),)
$(error no kernel to build against: run $(PROJECT)/scripts/setup.sh, or pass KDIR=<kernel build or headers dir>)
endif
KBUILD_VARS := $(shell $(PROJECT)/scripts/env.sh --toolchain)
endif

all modules:
	$(MAKE) -C $(BUILD_DIR) M=$(CURDIR) $(KBUILD_VARS) modules

rust-analyzer clean:
	$(MAKE) -C $(BUILD_DIR) M=$(CURDIR) $(KBUILD_VARS) $@

.PHONY: all modules rust-analyzer clean
