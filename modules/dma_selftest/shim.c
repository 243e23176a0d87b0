// SPDX-License-Identifier: GPL-2.0
/* The template's C wrappers, compiled as they are. */
#include "../../template/src/dma_local_shim.c"
