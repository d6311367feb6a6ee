/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* fwd.h - the forwarding data path of the library: a benchmark baseline
 * (FreeFlow's design), selected with UNIRDMA_DATAPATH=forward.  See
 * include/unirdma/fwd.h and bench/README.md. */
#ifndef URD_LIB_FWD_H
#define URD_LIB_FWD_H

#include "priv.h"

/* Called once the context's ops are set: with UNIRDMA_DATAPATH=forward in the
 * environment, replaces the data verbs (post_send, post_recv, post_srq_recv,
 * poll_cq, req_notify_cq) by ones that forward every call to the daemon.
 * Otherwise, or when the daemon does not offer forwarding, changes nothing. */
void urd_fwd_install(struct urd_context *ctx);

#endif
