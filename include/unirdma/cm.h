/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* QP1 of a vRNIC, as our librdmacm reaches it through our libibverbs.
 *
 * A vRNIC has one GSI address, QP1, but any number of processes may run
 * rdma_cm on it.  Each such process makes one ordinary UD QP of its context
 * its "CM agent" (urd_cm_agent); the daemon then
 *   - sends that QP's datagrams with source QPN 1 (the DETH's SrcQP on the
 *     wire, the receive completion's src_qp in one host), and
 *   - steers every datagram that arrives for QPN 1 of the vRNIC to one
 *     agent, by the CM message it carries (engine/cm_steer.c):
 *       REQ, SIDR_REQ: the agent that listens on the message's ServiceID
 *         (urd_cm_listen), else the vRNIC's lowest-numbered agent (which
 *         answers REJ "invalid service ID", as a kernel CM does);
 *       SIDR_REP: the agent whose slot is in bits 31..24 of RequestID;
 *       every other CM message: the agent whose slot is in bits 31..24 of
 *         the RemoteCommID (the comm ID that agent chose);
 *       anything else (not a CM MAD, unknown slot): dropped, counted.
 * So an agent must choose its comm IDs and SIDR request IDs as
 * (slot << 24) | n, n != 0.  The agent QP keeps the GSI Q_Key 0x80010000
 * (set it in the INIT transition) and sends to remote QPN 1 with that Q_Key.
 * Both calls are exported by our libibverbs under UNIRDMA_PRIVATE_1.0. */
#ifndef UNIRDMA_CM_H
#define UNIRDMA_CM_H

#include <stdint.h>
#include <infiniband/verbs.h>

#include "unirdma/abi.h"         /* URD_CM_MAX_AGENTS, URD_CM_MAX_LISTEN, URD_CM_SLOT */

#ifdef __cplusplus
extern "C" {
#endif

/* Make qp (a UD QP, any state) its vRNIC's CM agent for as long as it
 * lives.  Returns the agent's slot (1..255), or a negative errno: -EINVAL
 * (not UD, or already an agent), -ENOSPC (255 agents on this vRNIC). */
int urd_cm_agent(struct ibv_qp *qp);

/* Listen (on != 0) or stop listening on service_id with agent qp.
 * 0, or -EADDRINUSE (another agent of this vRNIC listens on it), -ENOSPC
 * (URD_CM_MAX_LISTEN), -EINVAL (qp not an agent), -ENOENT (stop: not
 * listening).  Destroying the QP stops all its listens. */
int urd_cm_listen(struct ibv_qp *qp, uint64_t service_id, int on);

#ifdef __cplusplus
}
#endif
#endif
