/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* In-process unirdmad for the libFuzzer targets (tests/fuzz/fuzz_*.c).
 *
 * The harness builds the daemon the way daemon/main.c does, but with no
 * threads (urd_vrnic_threads = false): the fuzz target itself plays the
 * control thread (fz_call -> ctrl_dispatch) and the engine thread
 * (fz_engine_pass -> the engine's own engine_pass), each under the big lock,
 * exactly as the real threads hold it.
 *
 * Every input starts from the same state (fz_begin: deterministic QPNs, SRQ
 * numbers, context ids and MR keys) so that handles, offsets and keys in a
 * corpus file mean the same thing on every run, and ends by destroying every
 * context (fz_end), after which the daemon must be back to empty: no object,
 * no arena or memory-window byte in use, nothing on the engine's lists.
 * fz_check() verifies the daemon's private model against itself (object
 * counters, references, key and QPN tables, allocators); any violation
 * aborts, which libFuzzer reports as a crash.
 */
#ifndef UNIRDMA_FUZZ_HARNESS_H
#define UNIRDMA_FUZZ_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "daemon.h"

#define FZ_NVR 3        /* vr0, vr1: tenant t1; vr2: tenant t2 */

extern struct urd_vrnic *fz_vr[FZ_NVR];

/* Once per process: the daemon and its vRNICs (files unlinked at once, so a
 * crashed run leaves nothing in /dev/shm). */
void fz_init(void);

/* Start of an input: deterministic counters and key generator. */
void fz_begin(void);

/* End of an input: destroy every context, check that nothing is left. */
void fz_end(void);

/* One control request, as the control thread serves it: lock, dispatch,
 * unlock.  Aborts if the response length or status is out of range, or if
 * the daemon's model is inconsistent afterwards.  Returns the status. */
int fz_call(struct urd_vrnic *vr, uint32_t slot, const void *req, uint32_t len,
	    void *resp, uint32_t *resp_len);

/* Helpers that build a request; resp may be NULL.  Return the status. */
int fz_req(struct urd_vrnic *vr, uint32_t slot, uint16_t op, void *req, uint32_t len,
	   void *resp);

/* The liveness path: the context in slot died. */
void fz_ctx_died(struct urd_vrnic *vr, uint32_t slot);

/* One engine pass at time now (ns), under the big lock; returns whether it
 * did anything; *next_timer is the earliest timer (UINT64_MAX: none). */
bool fz_engine_pass(uint64_t now, uint64_t *next_timer);

/* Run the engine until it has nothing left to do (at most max passes),
 * advancing *now to each timer. */
void fz_engine_drain(uint64_t *now, int max);

/* The daemon's model is consistent (aborts if not); fz_check_full also
 * scans the whole doorbell, key and QPN tables. */
void fz_check(void);
void fz_check_full(void);

/* Byte scans for canary checks, uninstrumented (check.c): the index of the
 * first byte of p that is not v (of a that differs from b), or n. */
size_t fz_find_not(const uint8_t *p, uint8_t v, size_t n);
size_t fz_find_diff(const uint8_t *a, const uint8_t *b, size_t n);

/* Fail: print and abort (libFuzzer saves the input). */
void fz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Seed writing (UNIRDMA_FUZZ_WRITE_SEEDS=DIR): fz_seed_write(dir, name, data, len). */
void fz_seed_write(const char *dir, const char *name, const void *data, size_t len);

/* A growable byte buffer for building inputs. */
struct fz_buf {
	uint8_t *p;
	size_t len, cap;
};
void fz_put(struct fz_buf *b, const void *data, size_t len);
void fz_put8(struct fz_buf *b, uint8_t v);
void fz_put16(struct fz_buf *b, uint16_t v);
void fz_put32(struct fz_buf *b, uint32_t v);

#endif
