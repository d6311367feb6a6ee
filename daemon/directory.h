/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The cluster directory client (directory.c): this host, its vRNIC GIDs, its
 * QPN range and the admitted external RoCE peers in etcd, and the other hosts'
 * entries fed into the engine's copy of the directory (engine_host_set,
 * engine_gid_set).  Without --cluster there is no etcd and no thread; external
 * peers then live in STATE/peers.json.
 *
 * Locks: the client never holds the big lock (d->lock) while it talks to etcd;
 * it takes it only to update the engine's tables.  Its own mutex nests inside
 * the big lock (big lock first). */
#ifndef UNIRDMA_DIRECTORY_H
#define UNIRDMA_DIRECTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"

struct urd_daemon;
struct urd_vrnic;
struct json_object;

#define DIR_PREFIX "/unirdma/v1/"

/* Before the admin socket opens: cluster is NULL (a lone daemon) or a comma
 * separated list of etcd client URLs; host_name NULL means gethostname().
 * A lone daemon loads STATE/peers.json.  0 or -errno with a message in err. */
int directory_init(struct urd_daemon *d, const char *cluster, const char *host_name, char *err, size_t errlen);
/* Starts the client thread (clustered only); after engine_start. */
int directory_start(struct urd_daemon *d);
/* Stops it; the host's lease is revoked so that peers forget it at once. */
void directory_stop(struct urd_daemon *d);

/* vrnic.c, big lock held: a vRNIC appeared or goes away (publish / withdraw
 * its GID; the client thread does it).  No-ops without a cluster. */
void directory_vrnic_added(struct urd_daemon *d, struct urd_vrnic *vr);
void directory_vrnic_removed(struct urd_daemon *d, struct urd_vrnic *vr);

/* admin.c, WITHOUT the big lock. */
/* The directory's own commands (peer.admit, peer.remove, hosts, cluster,
 * cluster.gids): the answer, or NULL when cmd is not one of them. */
struct json_object *directory_admin(struct urd_daemon *d, struct json_object *req, const char *cmd);
/* vrnic.create: claim the address in etcd first (create-if-absent).  0 (go
 * on: claimed, or etcd did not answer within ~2 s and it is published later),
 * or -EADDRINUSE / -EINVAL with a message.  claim_done after the create, ok
 * or not (a claim without its vRNIC is withdrawn). */
int directory_vrnic_claim(struct urd_daemon *d, struct json_object *req, char *err, size_t errlen);
void directory_vrnic_claim_done(struct urd_daemon *d, struct json_object *req);
/* vrnic show: the GID's state in the directory, or NULL without a cluster.
 * Big lock held. */
struct json_object *directory_vrnic_json(const struct urd_vrnic *vr);

/* Names of the wire counters' drop reasons and NAK syndromes (admin, metrics). */
extern const char *const wire_drop_names[WDROP_NUM];
extern const char *const wire_nak_names[WNAK_NUM];

/* The fuzz harness's way in (tests/fuzz/fuzz_dir.c): the parsers of what
 * etcd sends and the engine's tables they feed, without etcd or threads. */
void directory_fuzz_begin(struct urd_daemon *d, const char *host);
void directory_fuzz_range(const char *data, size_t n);
bool directory_fuzz_watch(const char *data, size_t n, size_t piece);
void directory_fuzz_end(void);      /* forget everything: the engine's tables empty */

#endif
