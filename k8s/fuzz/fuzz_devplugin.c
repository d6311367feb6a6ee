/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* fuzz_devplugin.c: libFuzzer target for what the device plugin parses from
 * its socket: HTTP/2 (nghttp2 and our callbacks), gRPC framing and the
 * protobuf of each method (k8s/grpc.c, k8s/pb.c, the handlers of
 * k8s/device-plugin.c, included here with its main renamed).
 *
 * The first input byte picks what the rest is:
 *   0          raw bytes a client sends after the HTTP/2 preface
 *   1..5       the request message of method 1..5 (GetDevicePluginOptions,
 *              ListAndWatch, GetPreferredAllocation, Allocate,
 *              PreStartContainer), sent as one DATA frame of a well-formed
 *              gRPC request (the bytes after the first 5 of them give the
 *              gRPC length prefix: inputs shorter than 5 are the body whole)
 * The server runs on one end of a socketpair, a client session of
 * nghttp2's own on the other.  Oracle: no crash, leak or UB (ASan, UBSan),
 * and in modes 1, 3, 4, 5 the request is answered: the stream ends with an
 * HTTP status other than 200 or with a grpc-status.  The devices are a1, a2
 * (Healthy) and b1 (Unhealthy); the daemon is not asked
 * (FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION).
 *
 * Build and run: make devplugin-fuzz; build/fuzz/fuzz_devplugin -max_len=70000 DIR */
#define main dp_main
#include "../device-plugin.c"
#undef main

#include <assert.h>
#include <nghttp2/nghttp2.h>

#define MAX_CONNS_FUZZ 4
#define NV(n, v) { (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE }

static struct {
	int http_status, grpc_status;
	bool closed;
} answer;

static int on_hdr(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t namelen,
		  const uint8_t *value, size_t valuelen, uint8_t flags, void *ud)
{
	(void)s, (void)f, (void)flags, (void)ud;
	if (namelen == 7 && !memcmp(name, ":status", 7))
		answer.http_status = valuelen == 3 ? atoi((const char[4]){ (char)value[0], (char)value[1],
									   (char)value[2], 0 })
						   : -1;
	if (namelen == 11 && !memcmp(name, "grpc-status", 11))
		answer.grpc_status = (int)valuelen;     /* present is enough */
	return 0;
}

static int on_close(nghttp2_session *s, int32_t id, uint32_t err, void *ud)
{
	(void)s, (void)err, (void)ud;
	if (id == 1)
		answer.closed = true;
	return 0;
}

struct body {
	const uint8_t *p;
	size_t len;
};

static ssize_t read_body(nghttp2_session *s, int32_t id, uint8_t *buf, size_t length, uint32_t *flags,
			 nghttp2_data_source *src, void *ud)
{
	struct body *b = src->ptr;
	size_t n = b->len < length ? b->len : length;

	(void)s, (void)id, (void)ud;
	memcpy(buf, b->p, n);
	b->p += n;
	b->len -= n;
	if (!b->len)
		*flags |= NGHTTP2_DATA_FLAG_EOF;
	return (ssize_t)n;
}

/* Moves bytes both ways until neither side has anything to say. */
static void pump(int cfd, nghttp2_session *client)
{
	for (int round = 0; round < 64; round++) {
		struct pollfd pfd[MAX_CONNS_FUZZ];
		uint8_t buf[65536];
		bool moved = false;
		int n = grpc_pollfds(pfd, MAX_CONNS_FUZZ);
		ssize_t r;

		for (int i = 0; i < n; i++)
			pfd[i].revents = POLLIN;        /* recv just says EAGAIN if nothing */
		grpc_handle(pfd, n);
		while ((r = recv(cfd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
			moved = true;
			if (client && nghttp2_session_mem_recv(client, buf, (size_t)r) < 0)
				client = NULL;
		}
		if (client) {
			const uint8_t *out;
			ssize_t len;

			while ((len = nghttp2_session_mem_send(client, &out)) > 0) {
				moved = true;
				if (send(cfd, out, (size_t)len, MSG_NOSIGNAL) != len)
					break;
			}
		}
		if (!moved && round > 2)
			return;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const paths[] = { NULL, "/v1beta1.DevicePlugin/GetDevicePluginOptions",
					     "/v1beta1.DevicePlugin/ListAndWatch",
					     "/v1beta1.DevicePlugin/GetPreferredAllocation",
					     "/v1beta1.DevicePlugin/Allocate", "/v1beta1.DevicePlugin/PreStartContainer" };
	static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
	nghttp2_session *client = NULL;
	int sv[2], mode;

	if (!size || size > 70000)
		return 0;
	mode = data[0];
	if (mode > 5)
		return 0;
	data++, size--;
	if (!dp.ndevs) {
		opt.state_dir = "/nonexistent";
		setup_names();
		dp.devs[0] = (struct dev){ "a1", true };
		dp.devs[1] = (struct dev){ "a2", true };
		dp.devs[2] = (struct dev){ "b1", false };
		dp.ndevs = 3;
		dp.daemon_up = true;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return 0;
	/* room for a whole input at once */
	setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &(int){ 1 << 20 }, sizeof(int));
	setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &(int){ 1 << 20 }, sizeof(int));
	if (grpc_serve_fd(sv[0], methods, sizeof(methods) / sizeof(methods[0]), NULL)) {
		close(sv[1]);
		return 0;
	}
	memset(&answer, 0, sizeof(answer));
	answer.grpc_status = -1;
	if (mode == 0) {
		if (send(sv[1], preface, sizeof(preface) - 1, MSG_NOSIGNAL) < 0 ||
		    send(sv[1], data, size, MSG_NOSIGNAL) < 0)
			goto out;
		pump(sv[1], NULL);
	} else {
		nghttp2_nv nva[] = { NV(":method", "POST"), NV(":scheme", "http"), NV(":path", paths[mode]),
				     NV(":authority", "localhost"), NV("content-type", "application/grpc"),
				     NV("te", "trailers") };
		uint8_t *msg = malloc(size + 5);
		struct body body = { msg, size + 5 };
		nghttp2_data_provider prd = { .source.ptr = &body, .read_callback = read_body };
		nghttp2_session_callbacks *cbs;

		if (!msg)
			goto out;
		if (size >= 5) {        /* the input's own prefix, as sent */
			memcpy(msg, data, size);
			body.len = size;
		} else {
			msg[0] = 0;
			msg[1] = msg[2] = 0;
			msg[3] = (uint8_t)(size >> 8);
			msg[4] = (uint8_t)size;
			memcpy(msg + 5, data, size);
		}
		nghttp2_session_callbacks_new(&cbs);
		nghttp2_session_callbacks_set_on_header_callback(cbs, on_hdr);
		nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_close);
		nghttp2_session_client_new(&client, cbs, NULL);
		nghttp2_session_callbacks_del(cbs);
		nghttp2_submit_settings(client, NGHTTP2_FLAG_NONE, NULL, 0);
		nghttp2_submit_request(client, NULL, nva, sizeof(nva) / sizeof(nva[0]), &prd, NULL);
		pump(sv[1], client);
		/* every unary request is answered, well-formed or not */
		if (mode != 2 && !(answer.closed && (answer.grpc_status >= 0 ||
						     (answer.http_status > 0 && answer.http_status != 200)))) {
			fprintf(stderr, "fuzz invariant violated: method %d not answered (HTTP %d, grpc-status %s)\n",
				mode, answer.http_status, answer.grpc_status >= 0 ? "present" : "none");
			abort();
		}
		nghttp2_session_del(client);
		free(msg);
	}
out:
	grpc_close_all();
	close(sv[1]);
	assert(dp.nwatchers == 0);
	return 0;
}
