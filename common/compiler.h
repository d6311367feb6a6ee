/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Compiler helpers shared by the library and the daemon. */
#ifndef UNIRDMA_COMPILER_H
#define UNIRDMA_COMPILER_H

/* A parameter a callback's fixed signature gives but this implementation
 * does not need (ops tables, handler tables). */
#define URD_UNUSED __attribute__((unused))

#endif
