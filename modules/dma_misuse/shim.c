// SPDX-License-Identifier: GPL-2.0
/* The template's C wrappers, so that a misuse that compiles also links. */
#include "../../template/src/dma_local_shim.c"
