/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the unit tests share: CHECK(cond, fmt, ...) counts a failure in
 * `fails` and says where, and goes on. */
#ifndef UNIRDMA_TESTS_UNIT_H
#define UNIRDMA_TESTS_UNIT_H

#include <stdio.h>

static int fails;

#define CHECK(c, ...)                                                           \
	do {                                                                    \
		if (!(c)) {                                                     \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);   \
			fprintf(stderr, __VA_ARGS__);                           \
			fputc('\n', stderr);                                    \
			fails++;                                                \
		}                                                               \
	} while (0)

#endif
