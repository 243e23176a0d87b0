# What a module's Makefile includes; the module itself is described by its Kbuild file. Every driver
# carries its own copy in its scripts/ (vendored from the project's template/, checked by
# scripts/sync-dma.sh), so that a driver directory builds wherever it is copied.
#   make                  inside the project: against its lab kernel, with its toolchain;
#                         elsewhere: against the running kernel, as make KDIR=/lib/modules/$(uname -r)/build
#   make KDIR=<dir>       against another kernel, with its toolchain (RUSTC=... or found by
#                         scripts/prepare-headers.sh): a full kernel build, or a distribution's
#                         headers, with the kernel's Rust build products or completed with them
#                         from the kernel's source (once per kernel)
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
# prepare-headers.sh checks the toolchain (the one given, also on make's command line, or the one
# it finds) and prints the directory to build against, then that toolchain.
PREPARED := $(shell $(foreach v,RUSTC BINDGEN PAHOLE,$(if $($(v)),$(v)='$($(v))')) \
	bash $(KMOD_SCRIPTS)/prepare-headers.sh --make $(KDIR))
ifeq ($(PREPARED),)
$(error cannot build for the kernel in $(KDIR): see the message above)
endif
BUILD_DIR := $(firstword $(PREPARED))
# And the build uses it: the kernel's Makefile sets RUSTC and the others itself, over what the
# environment says (`eval "$(scripts/env.sh --export)"` exports them, with KDIR), so only make's
# command line passes them on.
KBUILD_VARS := $(wordlist 2,$(words $(PREPARED)),$(PREPARED)) \
	$(foreach v,RUSTDOC CLIPPY_DRIVER LIBCLANG_PATH,$(if $($(v)),$(v)='$($(v))'))
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
