/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Rate limiting: per-vRNIC token buckets in bytes/s and operations/s.
 *
 * The engine asks qos_admit() before it starts a WQE.  Buckets refill at the
 * configured rate up to their burst; a WQE may start while both buckets are
 * non-negative, and then takes its bytes and one operation, possibly driving
 * the byte bucket negative (a message larger than the burst borrows and the
 * following ones wait the debt off).  That keeps the average at the rate for
 * any message size, and the tenant cannot bypass it: the engine decides when
 * its work runs. */
#include "internal.h"

static void refill(struct urd_qos *q, uint64_t now)
{
	double dt;

	if (!q->last_ns || now < q->last_ns) {
		q->last_ns = now;
		return;
	}
	dt = (double)(now - q->last_ns) / 1e9;
	q->last_ns = now;
	if (q->rate_bytes) {
		q->tok_bytes += dt * (double)q->rate_bytes;
		if (q->tok_bytes > (double)q->burst_bytes)
			q->tok_bytes = (double)q->burst_bytes;
	}
	if (q->rate_ops) {
		q->tok_ops += dt * (double)q->rate_ops;
		if (q->tok_ops > (double)q->burst_ops)
			q->tok_ops = (double)q->burst_ops;
	}
}

bool qos_admit(struct urd_vrnic *vr, uint64_t bytes, uint64_t now, uint64_t *until)
{
	struct urd_qos *q = &vr->qos;
	double wait_s = 0;

	refill(q, now);
	if (q->rate_bytes && q->tok_bytes < 0)
		wait_s = -q->tok_bytes / (double)q->rate_bytes;
	if (q->rate_ops && q->tok_ops < 1) {
		double w = (1 - q->tok_ops) / (double)q->rate_ops;

		if (w > wait_s)
			wait_s = w;
	}
	if (wait_s > 0) {
		/* at least 1 us, so a waiting QP does not spin the engine */
		*until = now + (wait_s < 1e-6 ? 1000 : (uint64_t)(wait_s * 1e9));
		return false;
	}
	if (q->rate_bytes)
		q->tok_bytes -= (double)bytes;
	if (q->rate_ops)
		q->tok_ops -= 1;
	return true;
}
