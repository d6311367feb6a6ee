/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* grpc.c: gRPC on HTTP/2 (see grpc.h), written from the "gRPC over HTTP2"
 * protocol description: a call is one HTTP/2 stream, POST to
 * /Service/Method with content-type application/grpc; each message is a
 * 1-byte compressed flag, a 4-byte big-endian length and the protobuf
 * bytes; the status comes in trailers (grpc-status, grpc-message
 * percent-encoded), or alone in the response headers when there is no
 * message ("Trailers-Only").  nghttp2 does the HTTP/2 framing, HPACK and
 * flow control; the memory interface (mem_recv/mem_send) keeps the sockets
 * ours, non-blocking, in the caller's poll loop.
 *
 * Notes:
 *   - Who is trusted: nobody on the socket.  Headers are size-limited per
 *     stream, request bodies at GRPC_MAX_MESSAGE (+ the 5-byte prefix);
 *     nghttp2 limits streams per connection (the SETTINGS we send) and
 *     drops connections that flood it with control frames or resets; we
 *     limit connections (MAX_CONNS) and drop one that sends no request
 *     within START_MS.  A stream whose peer does not read gets at most
 *     STREAM_BACKLOG bytes queued.
 *   - Lifetimes: a call lives from its HEADERS (server) or submission
 *     (client) to nghttp2's stream-close callback, or to its connection's
 *     end, whichever comes first; conn_free ends the calls nghttp2 still
 *     held (nghttp2_session_del runs no callbacks).  Connections are freed
 *     only in grpc_pollfds and grpc_close_all, never while grpc_handle walks
 *     the descriptors poll returned. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <nghttp2/nghttp2.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "dplog.h"
#include "grpc.h"

#define MAX_CONNS 32
#define MAX_STREAMS 16                  /* SETTINGS_MAX_CONCURRENT_STREAMS we announce */
#define MAX_HEADER_BYTES (16 * 1024)    /* names + values (+32 each, as HPACK counts) per stream */
#define START_MS 10000                  /* accept to first request */
#define STREAM_BACKLOG (1 << 20)
#define PREFIX 5                        /* compressed flag + length */

struct conn;

struct grpc_call {
	struct conn *conn;
	int32_t id;
	struct grpc_call *prev, *next;
	/* what the peer sent: the request (server) or the answer (client) */
	uint8_t *in;
	size_t inlen, incap, hdr_bytes;
	bool too_big;
	/* server: the request's headers */
	char path[128];
	bool post, grpc_ctype, identity, path_long, handled;
	/* what we send: messages, then the status (server) or END_STREAM */
	struct pb_buf out;
	size_t outoff;
	bool submitted, finished;
	int status;
	char message[256];
	void (*on_close)(struct grpc_call *call, void *arg);
	void *close_arg;
	/* client: the answer's headers and trailers */
	int http_status, grpc_status;   /* -1: none, -2: not a number */
	char grpc_message[256];
	grpc_done_fn done;
	void *done_arg;
};

struct conn {
	int fd;
	nghttp2_session *s;
	bool client, dead;
	const uint8_t *pend;            /* from nghttp2_session_mem_send, valid until its next call */
	size_t pendlen;
	long long deadline;             /* ms (CLOCK_MONOTONIC); 0: none */
	const struct grpc_method *methods;
	size_t nmethods;
	void *arg;
	struct grpc_call *calls;
};

static struct conn *conns[MAX_CONNS];
static struct conn *polled[MAX_CONNS];  /* grpc_pollfds' order, for grpc_handle */
static int npolled;

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int unix_addr(const char *path, struct sockaddr_un *sa, int *dirfd)
{
	char dir[PATH_MAX], base[PATH_MAX];

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	*dirfd = -1;
	if (strlen(path) < sizeof(sa->sun_path)) {
		memcpy(sa->sun_path, path, strlen(path) + 1);
		return 0;
	}
	if (strlen(path) >= sizeof(dir))
		return -ENAMETOOLONG;
	memcpy(dir, path, strlen(path) + 1);
	memcpy(base, path, strlen(path) + 1);
	if (strlen(basename(base)) > 64)
		return -ENAMETOOLONG;
	*dirfd = open(dirname(dir), O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (*dirfd < 0)
		return -errno;
	snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d/%s", *dirfd, basename(base));
	return 0;
}

int unix_connect(const char *path)
{
	struct sockaddr_un sa;
	int fd, dirfd, ret;

	ret = unix_addr(path, &sa, &dirfd);
	if (ret)
		return ret;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		ret = -errno;
	} else if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		ret = -errno;
		close(fd);
	} else {
		ret = fd;
	}
	if (dirfd >= 0)
		close(dirfd);
	return ret;
}

/* ------------------------------------------------------------ messages */

static bool hdr_is(const uint8_t *name, size_t len, const char *want)
{
	return len == strlen(want) && !memcmp(name, want, len);
}

/* Appends one length-prefixed message (msg NULL: an empty one). */
static void put_frame(struct pb_buf *b, const struct pb_buf *msg)
{
	size_t len = msg ? msg->len : 0;
	uint8_t prefix[PREFIX] = { 0, (uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8),
				   (uint8_t)len };

	if (msg && msg->oom) {
		b->oom = true;
		return;
	}
	pb_put_raw(b, prefix, sizeof(prefix));
	if (len)
		pb_put_raw(b, msg->p, len);
}

/* The one message of a unary request or answer: NULL and (*msg, *len),
 * or the reason.  A request of a unary or server-streaming method carries
 * exactly one; anything else is a malformed request, not an empty one. */
static const char *one_frame(const uint8_t *in, size_t inlen, const uint8_t **msg, size_t *len)
{
	uint32_t n;

	if (inlen == 0)
		return "no message";
	if (inlen < PREFIX)
		return "truncated message prefix";
	if (in[0] == 1)
		return "compressed message, but no grpc-encoding was agreed";
	if (in[0] != 0)
		return "invalid compressed-flag byte";
	n = (uint32_t)in[1] << 24 | (uint32_t)in[2] << 16 | (uint32_t)in[3] << 8 | in[4];
	if (n > inlen - PREFIX)
		return "truncated message";
	if (n < inlen - PREFIX)
		return "more than one message";
	*msg = in + PREFIX;
	*len = n;
	return NULL;
}

/* grpc-message is percent-encoded: anything outside printable ASCII, and '%'. */
static void pct_encode(const char *in, char *out, size_t outlen)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (const unsigned char *p = (const unsigned char *)in; *p && o + 4 < outlen; p++) {
		if (*p < 0x20 || *p > 0x7e || *p == '%') {
			out[o++] = '%';
			out[o++] = hex[*p >> 4];
			out[o++] = hex[*p & 15];
		} else {
			out[o++] = (char)*p;
		}
	}
	out[o] = '\0';
}

static int hexval(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The peer's grpc-message, decoded, printable ASCII only (it goes to a log). */
static void pct_decode(const uint8_t *in, size_t len, char *out, size_t outlen)
{
	size_t o = 0;

	for (size_t i = 0; i < len && o + 1 < outlen; i++) {
		int c = in[i];

		if (c == '%' && i + 2 < len && hexval(in[i + 1]) >= 0 && hexval(in[i + 2]) >= 0) {
			c = hexval(in[i + 1]) << 4 | hexval(in[i + 2]);
			i += 2;
		}
		out[o++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	out[o] = '\0';
}

/* ------------------------------------------------------------ calls */

static void call_unlink(struct grpc_call *c)
{
	struct conn *conn = c->conn;

	if (c->prev)
		c->prev->next = c->next;
	else
		conn->calls = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->prev = c->next = NULL;
}

static struct grpc_call *call_new(struct conn *conn)
{
	struct grpc_call *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->conn = conn;
	c->identity = true;
	c->http_status = -1;
	c->grpc_status = -1;
	c->next = conn->calls;
	if (c->next)
		c->next->prev = c;
	conn->calls = c;
	return c;
}

static void call_free(struct grpc_call *c)
{
	call_unlink(c);
	free(c->in);
	pb_buf_free(&c->out);
	free(c);
}

/* A client call's end: runs done once. */
static void client_done(struct grpc_call *c, int code, const char *message, const uint8_t *resp, size_t len)
{
	grpc_done_fn done = c->done;

	if (!done)
		return;
	c->done = NULL;
	done(c->done_arg, code, message, resp, len);
}

/* What the answer said, when its stream closed with HTTP/2 code h2err. */
static void client_finish(struct grpc_call *c, uint32_t h2err)
{
	const uint8_t *msg = NULL;
	const char *why;
	char text[300];
	size_t len = 0;

	if (c->grpc_status == -2) {
		client_done(c, GRPC_INTERNAL, "the server's grpc-status is not a number", NULL, 0);
	} else if (c->grpc_status >= 0) {
		if (c->grpc_status != GRPC_OK) {
			client_done(c, c->grpc_status, c->grpc_message, NULL, 0);
		} else if (c->too_big) {
			client_done(c, GRPC_RESOURCE_EXHAUSTED, "the answer is too big", NULL, 0);
		} else if ((why = one_frame(c->in, c->inlen, &msg, &len))) {
			snprintf(text, sizeof(text), "the answer: %s", why);
			client_done(c, GRPC_INTERNAL, text, NULL, 0);
		} else {
			client_done(c, GRPC_OK, "", msg, len);
		}
	} else if (h2err) {
		snprintf(text, sizeof(text), "stream reset by the server (%s)", nghttp2_http2_strerror(h2err));
		client_done(c, h2err == NGHTTP2_REFUSED_STREAM ? GRPC_UNAVAILABLE :
			       h2err == NGHTTP2_CANCEL ? GRPC_CANCELLED : GRPC_INTERNAL, text, NULL, 0);
	} else if (c->http_status != 200) {
		snprintf(text, sizeof(text), "HTTP status %d, no gRPC status", c->http_status);
		client_done(c, c->http_status == 404 ? GRPC_UNIMPLEMENTED : GRPC_UNKNOWN, text, NULL, 0);
	} else {
		client_done(c, GRPC_INTERNAL, "the answer has no grpc-status", NULL, 0);
	}
}

/* ------------------------------------------------------------ sending */

/* The data source of every stream we send messages on: the call's out
 * buffer, then (finished) the trailers or END_STREAM. */
static ssize_t read_out(nghttp2_session *s, int32_t id, uint8_t *buf, size_t length, uint32_t *flags,
			nghttp2_data_source *src, void *ud)
{
	struct grpc_call *c = src->ptr;
	size_t left = c->out.len - c->outoff, n = left < length ? left : length;

	(void)ud;
	if (n)
		memcpy(buf, c->out.p + c->outoff, n);
	c->outoff += n;
	if (c->outoff == c->out.len) {
		c->out.len = 0;
		c->outoff = 0;
	} else if (c->outoff > 65536 && c->outoff > c->out.len / 2) {
		memmove(c->out.p, c->out.p + c->outoff, c->out.len - c->outoff);
		c->out.len -= c->outoff;
		c->outoff = 0;
	}
	if (n < left)
		return (ssize_t)n;
	if (!c->finished)
		return n ? (ssize_t)n : NGHTTP2_ERR_DEFERRED;
	*flags |= NGHTTP2_DATA_FLAG_EOF;
	if (!c->conn->client) {
		char code[16], msg[sizeof(c->message) * 3];
		nghttp2_nv tr[2];
		size_t ntr = 1;

		snprintf(code, sizeof(code), "%d", c->status);
		pct_encode(c->message, msg, sizeof(msg));
		tr[0] = (nghttp2_nv){ (uint8_t *)"grpc-status", (uint8_t *)code, 11, strlen(code),
				      NGHTTP2_NV_FLAG_NONE };
		if (*msg)
			tr[ntr++] = (nghttp2_nv){ (uint8_t *)"grpc-message", (uint8_t *)msg, 12, strlen(msg),
						  NGHTTP2_NV_FLAG_NONE };
		*flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
		if (nghttp2_submit_trailer(s, id, tr, ntr))
			return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	}
	return (ssize_t)n;
}

#define NV(n, v) { (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE }

/* Response headers and the data source: messages follow. */
static void submit_headers(struct grpc_call *c)
{
	nghttp2_nv nva[] = { NV(":status", "200"), NV("content-type", "application/grpc"),
			     NV("grpc-accept-encoding", "identity") };
	nghttp2_data_provider prd = { .source.ptr = c, .read_callback = read_out };

	c->submitted = true;
	if (nghttp2_submit_response(c->conn->s, c->id, nva, sizeof(nva) / sizeof(nva[0]), &prd))
		c->conn->dead = true;
}

/* The status alone, in the response headers. */
static void submit_trailers_only(struct grpc_call *c, int code, const char *message)
{
	char num[16], msg[sizeof(c->message) * 3];
	nghttp2_nv nva[4] = { NV(":status", "200"), NV("content-type", "application/grpc") };
	size_t n = 2;

	snprintf(num, sizeof(num), "%d", code);
	pct_encode(message, msg, sizeof(msg));
	nva[n++] = (nghttp2_nv)NV("grpc-status", num);
	if (*msg)
		nva[n++] = (nghttp2_nv)NV("grpc-message", msg);
	c->submitted = c->finished = true;
	if (nghttp2_submit_response(c->conn->s, c->id, nva, n, NULL))
		c->conn->dead = true;
}

/* Not gRPC at all: an HTTP status. */
static void submit_http_error(struct grpc_call *c, const char *status)
{
	nghttp2_nv nva[] = { NV(":status", status) };

	c->submitted = c->finished = true;
	if (nghttp2_submit_response(c->conn->s, c->id, nva, 1, NULL))
		c->conn->dead = true;
}

void grpc_reply(struct grpc_call *c, const struct pb_buf *msg)
{
	if (c->submitted)
		return;
	put_frame(&c->out, msg);
	if (c->out.oom) {
		submit_trailers_only(c, GRPC_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	c->finished = true;
	c->status = GRPC_OK;
	submit_headers(c);
}

void grpc_fail(struct grpc_call *c, int code, const char *fmt, ...)
{
	char text[sizeof(c->message)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (!c->submitted) {
		submit_trailers_only(c, code, text);
	} else if (!c->finished) {
		grpc_stream_end(c, code, text);
	}
}

void grpc_stream_open(struct grpc_call *c, void (*on_close)(struct grpc_call *call, void *arg), void *arg)
{
	if (c->submitted)
		return;
	c->on_close = on_close;
	c->close_arg = arg;
	submit_headers(c);
}

int grpc_stream_send(struct grpc_call *c, const struct pb_buf *msg)
{
	if (c->finished || c->conn->dead)
		return -EPIPE;
	if (c->out.len - c->outoff > STREAM_BACKLOG)
		return -ENOBUFS;
	put_frame(&c->out, msg);
	if (c->out.oom)
		return -ENOMEM;
	nghttp2_session_resume_data(c->conn->s, c->id);
	return 0;
}

void grpc_stream_end(struct grpc_call *c, int code, const char *message)
{
	if (c->finished || !c->submitted)
		return;
	c->finished = true;
	c->status = code;
	snprintf(c->message, sizeof(c->message), "%s", message ? message : "");
	nghttp2_session_resume_data(c->conn->s, c->id);
}

/* ------------------------------------------------------------ receiving */

/* A whole request arrived (END_STREAM): check it, run the method. */
static void dispatch(struct conn *conn, struct grpc_call *c)
{
	const struct grpc_method *m = NULL;
	const uint8_t *msg;
	const char *why;
	size_t len;

	c->handled = true;
	if (!c->post) {
		submit_http_error(c, "405");
		return;
	}
	if (!c->grpc_ctype) {
		submit_http_error(c, "415");
		return;
	}
	if (c->too_big) {
		grpc_fail(c, GRPC_RESOURCE_EXHAUSTED, "request larger than %d bytes", GRPC_MAX_MESSAGE);
		return;
	}
	if (!c->identity) {
		grpc_fail(c, GRPC_UNIMPLEMENTED, "only grpc-encoding identity is supported");
		return;
	}
	for (size_t i = 0; !c->path_long && i < conn->nmethods; i++)
		if (!strcmp(conn->methods[i].path, c->path))
			m = &conn->methods[i];
	if (!m) {
		dp_log("request for an unknown method %.60s%s: UNIMPLEMENTED", c->path, c->path_long ? "..." : "");
		grpc_fail(c, GRPC_UNIMPLEMENTED, "unknown method");
		return;
	}
	why = one_frame(c->in, c->inlen, &msg, &len);
	if (why) {
		dp_log("%s: malformed request: %s", c->path, why);
		grpc_fail(c, GRPC_INTERNAL, "malformed request: %s", why);
		return;
	}
	m->fn(c, msg, len, conn->arg);
	if (!c->submitted)      /* a handler's bug; never leave the peer waiting */
		grpc_fail(c, GRPC_INTERNAL, "no answer");
	free(c->in);
	c->in = NULL;
	c->inlen = c->incap = 0;
}

static int on_begin_headers(nghttp2_session *s, const nghttp2_frame *frame, void *ud)
{
	struct conn *conn = ud;
	struct grpc_call *c;

	if (conn->client || frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	c = call_new(conn);
	if (!c)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;   /* RST_STREAM */
	c->id = frame->hd.stream_id;
	conn->deadline = 0;
	if (nghttp2_session_set_stream_user_data(s, c->id, c)) {
		call_free(c);
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	}
	return 0;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *frame, const uint8_t *name, size_t namelen,
		     const uint8_t *value, size_t valuelen, uint8_t flags, void *ud)
{
	struct grpc_call *c = nghttp2_session_get_stream_user_data(s, frame->hd.stream_id);
	struct conn *conn = ud;

	(void)flags;
	if (!c || frame->hd.type != NGHTTP2_HEADERS)
		return 0;
	c->hdr_bytes += namelen + valuelen + 32;
	if (c->hdr_bytes > MAX_HEADER_BYTES)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	if (!conn->client) {
		if (frame->headers.cat != NGHTTP2_HCAT_REQUEST)
			return 0;       /* trailers of a request: nothing we need */
		if (hdr_is(name, namelen, ":method")) {
			c->post = hdr_is(value, valuelen, "POST");
		} else if (hdr_is(name, namelen, ":path")) {
			c->path_long = valuelen >= sizeof(c->path);
			if (!c->path_long) {
				memcpy(c->path, value, valuelen);
				c->path[valuelen] = '\0';
				/* a NUL inside would make strcmp see another path */
				c->path_long = strlen(c->path) != valuelen;
			}
		} else if (hdr_is(name, namelen, "content-type")) {
			c->grpc_ctype = hdr_is(value, valuelen, "application/grpc") ||
					(valuelen > 16 && !memcmp(value, "application/grpc", 16) &&
					 (value[16] == '+' || value[16] == ';'));
		} else if (hdr_is(name, namelen, "grpc-encoding")) {
			c->identity = hdr_is(value, valuelen, "identity");
		}
		return 0;
	}
	if (hdr_is(name, namelen, ":status")) {
		c->http_status = valuelen == 3 ? (value[0] - '0') * 100 + (value[1] - '0') * 10 + (value[2] - '0')
					       : 0;
	} else if (hdr_is(name, namelen, "grpc-status")) {
		int v = 0;

		for (size_t i = 0; i < valuelen && v >= 0; i++)
			v = value[i] >= '0' && value[i] <= '9' && v < 1000 ? v * 10 + (value[i] - '0') : -2;
		c->grpc_status = valuelen ? v : -2;
	} else if (hdr_is(name, namelen, "grpc-message")) {
		pct_decode(value, valuelen, c->grpc_message, sizeof(c->grpc_message));
	}
	return 0;
}

static int on_data_chunk(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
			 void *ud)
{
	struct grpc_call *c = nghttp2_session_get_stream_user_data(s, id);

	(void)flags, (void)ud;
	if (!c || c->too_big || c->handled)
		return 0;
	if (len > GRPC_MAX_MESSAGE + PREFIX - c->inlen) {
		/* dropped, answered at END_STREAM; nghttp2 keeps the windows open */
		c->too_big = true;
		free(c->in);
		c->in = NULL;
		c->inlen = c->incap = 0;
		return 0;
	}
	if (c->incap - c->inlen < len) {
		size_t cap = c->incap ? c->incap : 256;
		uint8_t *p;

		while (cap - c->inlen < len)
			cap *= 2;
		p = realloc(c->in, cap);
		if (!p)
			return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
		c->in = p;
		c->incap = cap;
	}
	memcpy(c->in + c->inlen, data, len);
	c->inlen += len;
	return 0;
}

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *frame, void *ud)
{
	struct conn *conn = ud;
	struct grpc_call *c;

	if (conn->client || !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM) ||
	    (frame->hd.type != NGHTTP2_DATA && frame->hd.type != NGHTTP2_HEADERS))
		return 0;
	c = nghttp2_session_get_stream_user_data(s, frame->hd.stream_id);
	if (c && !c->handled)
		dispatch(conn, c);
	return 0;
}

static int on_stream_close(nghttp2_session *s, int32_t id, uint32_t err, void *ud)
{
	struct grpc_call *c = nghttp2_session_get_stream_user_data(s, id);
	struct conn *conn = ud;

	if (!c)
		return 0;
	nghttp2_session_set_stream_user_data(s, id, NULL);
	if (conn->client) {
		client_finish(c, err);
		conn->dead = true;      /* one call per client connection */
	} else if (c->on_close) {
		void (*fn)(struct grpc_call *, void *) = c->on_close;

		c->on_close = NULL;
		fn(c, c->close_arg);
	}
	call_free(c);
	return 0;
}

/* ------------------------------------------------------------ connections */

static nghttp2_session_callbacks *callbacks(void)
{
	static nghttp2_session_callbacks *cbs;

	if (!cbs && !nghttp2_session_callbacks_new(&cbs)) {
		nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, on_begin_headers);
		nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
		nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk);
		nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
		nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
	}
	return cbs;
}

/* A free slot; the last one is kept for a client call (registration
 * must not wait for idle peers to time out). */
static struct conn **free_slot(bool client)
{
	struct conn **slot = NULL;
	int used = 0;

	for (int i = 0; i < MAX_CONNS; i++) {
		if (conns[i])
			used++;
		else if (!slot)
			slot = &conns[i];
	}
	return client || used < MAX_CONNS - 1 ? slot : NULL;
}

/* Ends a connection's calls (their owners hear of it) and frees it. */
static void conn_free(struct conn *conn)
{
	while (conn->calls) {
		struct grpc_call *c = conn->calls;

		if (conn->client) {
			client_done(c, GRPC_UNAVAILABLE, "connection closed before the answer", NULL, 0);
		} else if (c->on_close) {
			void (*fn)(struct grpc_call *, void *) = c->on_close;

			c->on_close = NULL;
			fn(c, c->close_arg);
		}
		call_free(c);
	}
	nghttp2_session_del(conn->s);
	close(conn->fd);
	free(conn);
}

static struct conn *conn_new(int fd, bool client)
{
	struct conn **slot = free_slot(client), *conn;
	nghttp2_session_callbacks *cbs = callbacks();
	nghttp2_option *opt;
	int ret;

	if (!slot || !cbs)
		return NULL;
	conn = calloc(1, sizeof(*conn));
	if (!conn)
		return NULL;
	conn->fd = fd;
	conn->client = client;
	if (nghttp2_option_new(&opt)) {
		free(conn);
		return NULL;
	}
	/* what the peer may send in SETTINGS frames at most, per frame */
	nghttp2_option_set_max_settings(opt, 16);
	ret = client ? nghttp2_session_client_new2(&conn->s, cbs, conn, opt)
		     : nghttp2_session_server_new2(&conn->s, cbs, conn, opt);
	nghttp2_option_del(opt);
	if (ret) {
		free(conn);
		return NULL;
	}
	if (client) {
		nghttp2_settings_entry set[] = { { NGHTTP2_SETTINGS_ENABLE_PUSH, 0 } };

		ret = nghttp2_submit_settings(conn->s, NGHTTP2_FLAG_NONE, set, 1);
	} else {
		nghttp2_settings_entry set[] = { { NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, MAX_STREAMS },
						 { NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, MAX_HEADER_BYTES } };

		ret = nghttp2_submit_settings(conn->s, NGHTTP2_FLAG_NONE, set, 2);
	}
	if (ret) {
		nghttp2_session_del(conn->s);
		free(conn);
		return NULL;
	}
	*slot = conn;
	return conn;
}

int grpc_serve_fd(int fd, const struct grpc_method *methods, size_t nmethods, void *arg)
{
	struct conn *conn;

	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) {
		close(fd);
		return -EINVAL;
	}
	conn = conn_new(fd, false);
	if (!conn) {
		close(fd);
		return -EMFILE;
	}
	conn->methods = methods;
	conn->nmethods = nmethods;
	conn->arg = arg;
	conn->deadline = now_ms() + START_MS;
	return 0;
}

int grpc_call_unary(const char *sock_path, const char *method, const struct pb_buf *req, int timeout_ms,
		    grpc_done_fn done, void *arg)
{
	nghttp2_nv nva[] = { NV(":method", "POST"), NV(":scheme", "http"), NV(":path", method),
			     NV(":authority", "localhost"), NV("content-type", "application/grpc"),
			     NV("te", "trailers"), NV("user-agent", "unirdma-device-plugin") };
	nghttp2_data_provider prd = { .read_callback = read_out };
	struct grpc_call *c;
	struct conn *conn;
	int fd;
	int32_t id;

	fd = unix_connect(sock_path);
	if (fd < 0)
		return fd;
	conn = conn_new(fd, true);
	if (!conn) {
		close(fd);
		return -ENOMEM;
	}
	c = call_new(conn);
	if (!c) {
		conn->dead = true;
		return -ENOMEM;
	}
	put_frame(&c->out, req);
	c->finished = true;
	c->submitted = true;
	prd.source.ptr = c;
	id = nghttp2_submit_request(conn->s, NULL, nva, sizeof(nva) / sizeof(nva[0]), &prd, c);
	if (c->out.oom || id < 0) {
		conn->dead = true;
		return -ENOMEM;
	}
	c->id = id;
	c->done = done;
	c->done_arg = arg;
	conn->deadline = now_ms() + timeout_ms;
	return 0;
}

/* Writes what nghttp2 has for the peer until the socket is full. */
static void conn_flush(struct conn *conn)
{
	while (!conn->dead) {
		if (conn->pendlen) {
			ssize_t n = send(conn->fd, conn->pend, conn->pendlen, MSG_NOSIGNAL);

			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				if (errno != EAGAIN && errno != EWOULDBLOCK)
					conn->dead = true;
				return;
			}
			conn->pend += n;
			conn->pendlen -= (size_t)n;
		} else {
			ssize_t n = nghttp2_session_mem_send(conn->s, &conn->pend);

			if (n < 0) {
				conn->dead = true;
				return;
			}
			if (n == 0)
				break;
			conn->pendlen = (size_t)n;
		}
	}
	if (!conn->dead && !nghttp2_session_want_read(conn->s) && !nghttp2_session_want_write(conn->s))
		conn->dead = true;      /* both sides said goodbye */
}

static void conn_read(struct conn *conn)
{
	uint8_t buf[16384];
	ssize_t n, used;

	n = recv(conn->fd, buf, sizeof(buf), 0);
	if (n < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			conn->dead = true;
		return;
	}
	if (n == 0) {
		conn->dead = true;
		return;
	}
	used = nghttp2_session_mem_recv(conn->s, buf, (size_t)n);
	if (used < 0) {
		dp_log("%s connection: bad HTTP/2 (%s): closed", conn->client ? "client" : "server",
		       nghttp2_strerror((int)used));
		/* what nghttp2 queued (a GOAWAY) goes out once, best effort */
		conn_flush(conn);
		conn->dead = true;
	}
}

int grpc_pollfds(struct pollfd *pfd, int max)
{
	npolled = 0;
	for (int i = 0; i < MAX_CONNS; i++) {
		struct conn *conn = conns[i];

		if (!conn)
			continue;
		conn_flush(conn);
		if (conn->dead) {
			conns[i] = NULL;
			conn_free(conn);
			continue;
		}
		if (npolled == max)
			continue;
		pfd[npolled] = (struct pollfd){ .fd = conn->fd, .events = POLLIN | (conn->pendlen ? POLLOUT : 0) };
		polled[npolled++] = conn;
	}
	return npolled;
}

void grpc_handle(const struct pollfd *pfd, int n)
{
	for (int i = 0; i < n && i < npolled; i++) {
		struct conn *conn = polled[i];

		if (conn->dead)
			continue;
		if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))
			conn_read(conn);
		if (!conn->dead)
			conn_flush(conn);
	}
}

int grpc_tick(void)
{
	long long now = now_ms(), next = -1;

	for (int i = 0; i < MAX_CONNS; i++) {
		struct conn *conn = conns[i];

		if (!conn || conn->dead || !conn->deadline)
			continue;
		if (now >= conn->deadline) {
			if (conn->client && conn->calls) {
				client_done(conn->calls, GRPC_DEADLINE_EXCEEDED, "no answer in time", NULL, 0);
			} else if (!conn->client) {
				dp_log("server connection: no request within %d s: closed", START_MS / 1000);
			}
			conn->dead = true;
			next = 0;
		} else if (next < 0 || conn->deadline - now < next) {
			next = conn->deadline - now;
		}
	}
	return next > INT_MAX ? INT_MAX : (int)next;
}

void grpc_flush(void)
{
	for (int i = 0; i < MAX_CONNS; i++)
		if (conns[i])
			conn_flush(conns[i]);
}

void grpc_close_all(void)
{
	for (int i = 0; i < MAX_CONNS; i++) {
		if (conns[i]) {
			struct conn *conn = conns[i];

			conns[i] = NULL;
			conn_free(conn);
		}
	}
	npolled = 0;
}
