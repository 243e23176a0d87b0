# Included by every out-of-tree module's Makefile. The module itself is described by its Kbuild file.
#   make                      build against the project's cached kernel
#   make KDIR=<build dir>     build against another kernel build
#   make rust-analyzer        write rust-project.json for IDEs
#   make clean
TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/..)

ifndef KDIR
KDIR := $(shell $(TOP)/scripts/env.sh --get KDIR)
ifeq ($(KDIR),)
$(error no kernel to build against: run $(TOP)/scripts/setup.sh, or pass KDIR=<kernel build dir>)
endif
endif
KBUILD_VARS := $(shell $(TOP)/scripts/env.sh --toolchain)

all modules:
	$(MAKE) -C $(KDIR) M=$(CURDIR) $(KBUILD_VARS) modules

rust-analyzer clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) $(KBUILD_VARS) $@

.PHONY: all modules rust-analyzer clean
