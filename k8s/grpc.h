/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* grpc.h: gRPC over plaintext HTTP/2 (nghttp2) on unix sockets, server and
 * client, as much as a kubelet device plugin needs: unary calls and server
 * streams, identity encoding only.  One thread: the caller's poll loop asks
 * for the descriptors (grpc_pollfds), hands back what poll found
 * (grpc_handle) and calls grpc_tick for the deadlines.
 *
 * Server calls: a handler gets the request message and must, before it
 * returns, answer with grpc_reply or grpc_fail, or open a stream with
 * grpc_stream_open and then send messages with grpc_stream_send until the
 * peer goes (its on_close runs) or grpc_stream_end.  A request that is not
 * gRPC (content type, method), not one message, compressed, too big, or for
 * an unknown method is answered here with an HTTP or gRPC error status;
 * broken HTTP/2 closes the connection.  Nothing the peer sends can make a
 * handler run on a message that is not exactly one whole gRPC frame. */
#ifndef UNIRDMA_K8S_GRPC_H
#define UNIRDMA_K8S_GRPC_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "pb.h"

enum grpc_code {
	GRPC_OK = 0,
	GRPC_CANCELLED = 1,
	GRPC_UNKNOWN = 2,
	GRPC_INVALID_ARGUMENT = 3,
	GRPC_DEADLINE_EXCEEDED = 4,
	GRPC_NOT_FOUND = 5,
	GRPC_RESOURCE_EXHAUSTED = 8,
	GRPC_FAILED_PRECONDITION = 9,
	GRPC_UNIMPLEMENTED = 12,
	GRPC_INTERNAL = 13,
	GRPC_UNAVAILABLE = 14,
};

#define GRPC_MAX_MESSAGE (64 * 1024)    /* largest request or answer accepted */

struct grpc_call;

typedef void (*grpc_handler_fn)(struct grpc_call *call, const uint8_t *msg, size_t len, void *arg);

struct grpc_method {
	const char *path;               /* "/package.Service/Method" */
	grpc_handler_fn fn;
};

/* A client call's end: code, message (never NULL), the answer on GRPC_OK. */
typedef void (*grpc_done_fn)(void *arg, int code, const char *message, const uint8_t *resp, size_t len);

/* Adopts an accepted connection (any fd mode; it is made non-blocking).
 * methods must outlive it.  -errno (the fd is closed) when no slot is free. */
int grpc_serve_fd(int fd, const struct grpc_method *methods, size_t nmethods, void *arg);

/* Starts a unary call to the server on the unix socket path; done runs
 * exactly once, from grpc_handle or grpc_tick, never from here.
 * -errno when the call could not start (no connect: done does not run). */
int grpc_call_unary(const char *sock_path, const char *method, const struct pb_buf *req, int timeout_ms,
		    grpc_done_fn done, void *arg);

/* Server side answers (see above).  msg may be NULL for an empty message. */
void grpc_reply(struct grpc_call *call, const struct pb_buf *msg);
void grpc_fail(struct grpc_call *call, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void grpc_stream_open(struct grpc_call *call, void (*on_close)(struct grpc_call *call, void *arg), void *arg);
/* -ENOBUFS when the peer has let 1 MiB pile up, -ENOMEM. */
int grpc_stream_send(struct grpc_call *call, const struct pb_buf *msg);
/* Ends a stream with a status; on_close still runs when it is gone. */
void grpc_stream_end(struct grpc_call *call, int code, const char *message);

/* The poll loop: fills up to max entries (after writing out what is
 * pending and dropping finished connections), returns how many. */
int grpc_pollfds(struct pollfd *pfd, int max);
void grpc_handle(const struct pollfd *pfd, int n);
/* Deadlines (connections that never start, client calls); returns the
 * milliseconds until the next one, -1 for none. */
int grpc_tick(void);
/* One best-effort write of whatever is queued (at exit). */
void grpc_flush(void);
/* Closes every connection (stream on_close handlers and pending client
 * calls' done run, the latter with GRPC_CANCELLED). */
void grpc_close_all(void);

/* sun_path for a socket path that may be longer than sun_path: through
 * /proc/self/fd of its directory, opened into *dirfd (-1 if not needed;
 * close it after bind or connect).  0 or -errno. */
struct sockaddr_un;
int unix_addr(const char *path, struct sockaddr_un *sa, int *dirfd);
/* A non-blocking, close-on-exec connection to the unix socket at path (of
 * any length): its fd, or -errno.  A unix socket connects at once or not at
 * all (EAGAIN: its backlog is full). */
int unix_connect(const char *path);

#endif
