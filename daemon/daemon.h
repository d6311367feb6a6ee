/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* unirdmad's control plane: vRNICs, the mailbox thread and its handlers, VMs,
 * admin socket, metrics.  The object model it manages is core/objects.h; it
 * drives the engine through engine/engine.h.  Nothing below daemon/ (engine/,
 * core/) includes this header. */
#ifndef UNIRDMA_DAEMON_H
#define UNIRDMA_DAEMON_H

#include "engine.h"
#include "objects.h"

extern struct urd_daemon *urd_d;

/* vrnic.c */
extern bool urd_vrnic_threads;
int vrnic_create(struct urd_daemon *d, const char *name, const char *tenant,
		 const char *ip_prefix, struct urd_vrnic **out);
struct urd_vm_cfg;
/* vm NULL: a container vRNIC (vrnic_create); else a VM vRNIC (vm.c) */
int vrnic_create_ex(struct urd_daemon *d, const char *name, const char *tenant,
		    const char *ip_prefix, const struct urd_vm_cfg *vm, struct urd_vrnic **out);
void vrnic_default_limits(struct urd_limits *l);
int vrnic_set_limits(struct urd_vrnic *vr, const struct urd_limits *l);
/* A new address for vr: vrnic_check_addr parses "A.B.C.D[/P]" (without /P
 * the prefix stays) and judges it: -EINVAL bad address, -EBUSY while a device
 * context is open (its tenants hold the old GID), -EADDRINUSE when another
 * vRNIC clashes (as at create).  vrnic_set_addr then moves the vRNIC there:
 * GID 0, the underlay's /32, the cluster directory.  Big lock held. */
int vrnic_check_addr(const struct urd_vrnic *vr, const char *ip_prefix, uint32_t *ip, uint8_t *prefix);
void vrnic_set_addr(struct urd_vrnic *vr, uint32_t ip, uint8_t prefix);
int vrnic_set_qos(struct urd_vrnic *vr, uint64_t rate_bytes, uint64_t burst_bytes,
		  uint64_t rate_ops, uint64_t burst_ops);
/* Whether vr takes address vectors without a GRH (URD_REGION_GRHLESS_AV);
 * the library reads the flag at each ibv_create_ah, the daemon at each
 * modify_qp: a change applies to the next call. */
void vrnic_set_grhless_av(struct urd_vrnic *vr, bool on);
int vrnic_delete(struct urd_daemon *d, const char *name);
struct urd_vrnic *vrnic_find(struct urd_daemon *d, const char *name);
void vrnic_destroy_all(struct urd_daemon *d);
/* Big lock held: stop serving vr, tell its tenants (DEAD) and log why. */
void vrnic_fail(struct urd_vrnic *vr, const char *why);
/* The thread that turns guard faults into vrnic_fail (main.c starts it). */
int vrnic_monitor_start(struct urd_daemon *d);
void vrnic_monitor_stop(void);

/* cdi.c: the CDI spec of the vRNICs (dir NULL: none; an absolute path, main
 * checks it).  cdi_update with the big lock held, after a vRNIC was
 * created, deleted or changed. */
#define URD_DEFAULT_STATE_DIR "/run/unirdma"
#define URD_DEFAULT_CDI_DIR "/var/run/cdi"
int cdi_init(struct urd_daemon *d, const char *dir);
void cdi_update(struct urd_daemon *d);
void cdi_fini(void);

/* underlay.c: a vRNIC's address on the underlay device (with --underlay) */
int underlay_addr_add(struct urd_vrnic *vr);
void underlay_addr_del(struct urd_vrnic *vr);

/* ctrl.c: the mailbox thread of each vRNIC */
void *ctrl_thread_main(void *arg);
/* True when the context in slot has no living owner (container: its OFD lock
 * is free; VM: owner and heartbeat stalled).  Big lock held. */
bool ctrl_occupant_dead(struct urd_vrnic *vr, uint32_t slot);

/* ctx.c: a context closes or dies: everything it created goes */
void ctx_destroy(struct vr_ctx *ctx);

/* mr.c */
/* Give back a batch of what ctx_destroy queued: MRs' pieces and allocations
 * (a context may die with millions of them: that is not one lock hold).  Big
 * lock held; true while more wait. */
bool mem_reap(struct urd_vrnic *vr, uint32_t max);
/* REG_MR of a VM vRNIC: the segment list (up to URD_MR_MAX_SEGS_INDIRECT
 * entries) is copied, translated, checked and coalesced by the control thread
 * WITHOUT the big lock (it depends only on the request and the guest RAM
 * layout); op_reg_mr then only charges and links.  *out stays NULL for other
 * requests. */
struct vr_mr_prep;
void mr_prepare(struct urd_vrnic *vr, const void *req, uint32_t req_len, struct vr_mr_prep **out);
void mr_prep_free(struct vr_mr_prep *p);

/* dispatch.c: one request of a slot's mailbox to its handler (verbs.h) */
int ctrl_dispatch(struct urd_vrnic *vr, uint32_t slot, const void *req, uint32_t req_len,
		  void *resp, uint32_t *resp_len);
int ctrl_dispatch_prep(struct urd_vrnic *vr, uint32_t slot, const void *req, uint32_t req_len,
		       void *resp, uint32_t *resp_len, struct vr_mr_prep *prep);
/* The library gave up waiting for this request (it marked resp_seq): destroy
 * what the request created, as the matching destroy verb would.  Big lock. */
void ctrl_undo(struct urd_vrnic *vr, uint32_t slot, uint16_t op, const void *resp);

/* fwd.c: the forwarding data path (benchmark baseline); -EOPNOTSUPP when absent */
int fwd_dispatch(struct urd_vrnic *vr, struct vr_ctx *ctx, const void *req, uint32_t req_len,
		 void *resp, uint32_t *resp_len);

/* vm.c: VM vRNICs: guest RAM shared with QEMU, guest-physical MR segments,
 * heartbeat liveness */
struct json_object;
struct urd_vm_cfg {
	uint64_t ram_bytes;             /* 0: not a VM */
};
int vm_parse_cfg(struct json_object *req, struct urd_vm_cfg *cfg, char *err, size_t errlen);
int vm_prepare(struct urd_vrnic *vr, const struct urd_vm_cfg *cfg);
void vm_init_header(struct urd_vrnic *vr);
void vm_release(struct urd_vrnic *vr);
uint64_t vm_ram_bytes(const struct urd_vrnic *vr);
int vm_translate(struct urd_vrnic *vr, uint64_t gpa, uint64_t len, uint8_t **ptr);
int vm_copy_seg_table(struct urd_vrnic *vr, const struct urd_mr_seg *pieces, uint32_t npieces,
		      struct urd_mr_seg **table, uint32_t *nsegs);
void vm_free_seg_table(struct urd_mr_seg *table, uint32_t nsegs);
/* Liveness in two steps: the scan reads the slots' words without the big
 * lock and returns the slots to release; the reap runs under it. */
uint64_t vm_liveness_scan(struct urd_vrnic *vr);
void vm_liveness_reap(struct urd_vrnic *vr, uint32_t slot);     /* big lock held */
bool vm_slot_stalled(struct urd_vrnic *vr, uint32_t slot);      /* big lock held */
struct json_object *vm_json(const struct urd_vrnic *vr);
uint32_t vm_guard_faults(const struct urd_vrnic *vr);  /* guard_faults of the guest RAM */

/* admin.c */
int admin_start(struct urd_daemon *d);
void admin_stop(void);

/* guard.c: SIGBUS protection for mappings of tenant files */
void guard_install(void);
void guard_add(void *addr, uint64_t len);
void guard_remove(void *addr);
uint32_t guard_faults(const void *addr);        /* SIGBUS taken in the range at addr */
bool guard_wait(int timeout_ms);                /* a fault since the last call? */
void guard_kick(void);                          /* wake guard_wait */

/* metrics.c: Prometheus text endpoint */
int metrics_start(struct urd_daemon *d, const char *listen_addr, const char *token_file);
void metrics_stop(void);
int metrics_port(void);
const char *metrics_token_file(void);           /* the token file it wrote, or NULL */
char *metrics_render(struct urd_daemon *d);      /* takes the big lock briefly; malloc'd */


#endif
