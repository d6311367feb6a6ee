/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* admin.c: client side of unirdmad's admin protocol.
 *
 * One exchange per connection on STATE_DIR/admin.sock: the client sends one
 * JSON object and '\n', the daemon answers one JSON object and '\n', then
 * closes. Answers are {"ok":true,...} or {"ok":false,"errno":N,"error":"..."}. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "futex.h"          /* urd_now_ns */

#define ADMIN_TIMEOUT_MS 30000
#define ADMIN_MAX_ANSWER (4 << 20)

const char *admin_socket_path(void)
{
	static char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/admin.sock", cli.state_dir);
	return path;
}

static long long now_ms(void)
{
	return (long long)(urd_now_ns() / 1000000);
}

/* Connects to the admin socket; a path too long for sun_path goes through
 * the state directory's descriptor. Returns an fd or -errno. */
static int admin_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = admin_socket_path();
	int fd, dirfd = -1, err;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		dirfd = open(cli.state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dirfd < 0)
			return -errno;
		snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/admin.sock", dirfd);
	} else {
		memcpy(sa.sun_path, path, strlen(path) + 1);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = -errno;
		goto close_dir;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
		close(fd);
		goto close_dir;
	}
	if (dirfd >= 0)
		close(dirfd);
	return fd;
close_dir:
	if (dirfd >= 0)
		close(dirfd);
	return err;
}

bool admin_reachable(void)
{
	int fd = admin_connect();

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

static int send_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads up to the first '\n' (or EOF). Returns a malloc'd NUL-terminated
 * line without the '\n' in *out, or -errno (-ETIMEDOUT, -EPROTO on EOF
 * before any byte, -EMSGSIZE when too long). */
static int recv_line(int fd, char **out)
{
	long long deadline = now_ms() + ADMIN_TIMEOUT_MS;
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap), *nl;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	if (!buf)
		return -ENOMEM;
	for (;;) {
		long long left = deadline - now_ms();
		ssize_t n;
		int pr;

		if (left <= 0) {
			free(buf);
			return -ETIMEDOUT;
		}
		pr = poll(&pfd, 1, (int)left);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0) {
			free(buf);
			return -errno;
		}
		if (pr == 0)
			continue;
		if (cap - len < 2) {
			char *nb;

			if (cap >= ADMIN_MAX_ANSWER) {
				free(buf);
				return -EMSGSIZE;
			}
			nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(buf);
			return -errno;
		}
		buf[len + (size_t)n] = '\0';
		nl = memchr(buf + len, '\n', (size_t)n);
		len += (size_t)n;
		if (nl) {
			*nl = '\0';
			break;
		}
		if (n == 0) {
			if (len == 0) {
				free(buf);
				return -EPROTO;
			}
			break;
		}
	}
	*out = buf;
	return 0;
}

static void unreachable(const char *what, const char *why)
{
	cli_err("%s: cannot reach unirdmad at %s: %s", what, admin_socket_path(), why);
	fprintf(stderr, "unirdma: is the daemon running? Start it with: unirdmad --state-dir %s\n",
		cli.state_dir);
}

int admin_request(const char *what, struct json_object *req, bool echo_json,
		  struct json_object **resp)
{
	const char *text = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
	struct json_object *ans, *okv;
	char *msg, *line = NULL;
	size_t tlen = strlen(text);
	int fd, err;

	*resp = NULL;
	fd = admin_connect();
	if (fd < 0) {
		unreachable(what, strerror(-fd));
		return CLI_EXIT_UNREACHABLE;
	}
	msg = malloc(tlen + 2);
	if (!msg) {
		close(fd);
		cli_err("%s: out of memory", what);
		return CLI_EXIT_UNREACHABLE;
	}
	memcpy(msg, text, tlen);
	memcpy(msg + tlen, "\n", 2);
	err = send_all(fd, msg, tlen + 1);
	free(msg);
	/* a daemon that refuses us answers at once and may close before our
	 * request is out: its answer is still there to read */
	if (!err || err == -EPIPE || err == -ECONNRESET)
		err = recv_line(fd, &line);
	close(fd);
	if (err) {
		unreachable(what, err == -EPROTO ? "connection closed without an answer"
						 : strerror(-err));
		return CLI_EXIT_UNREACHABLE;
	}
	if (echo_json) {
		printf("%s\n", line);
		fflush(stdout);
	}
	ans = json_tokener_parse(line);
	if (!ans || !json_object_is_type(ans, json_type_object) ||
	    !json_object_object_get_ex(ans, "ok", &okv) ||
	    !json_object_is_type(okv, json_type_boolean)) {
		cli_err("%s: unirdmad gave an answer that is not a valid reply: %.200s", what, line);
		json_object_put(ans);
		free(line);
		return CLI_EXIT_UNREACHABLE;
	}
	free(line);
	if (!json_object_get_boolean(okv)) {
		long long e = jint(ans, "errno");
		const char *text_err = jstr(ans, "error");

		if (e > 0)
			cli_err("%s: %s (%s)", what, text_err, strerror((int)e));
		else
			cli_err("%s: %s", what, text_err);
		json_object_put(ans);
		return CLI_EXIT_DAEMON;
	}
	*resp = ans;
	return CLI_EXIT_OK;
}

const char *jstr(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) || !v)
		return "?";
	return json_object_get_string(v);
}

long long jint(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) || !v)
		return -1;
	if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
		return -1;
	return (long long)json_object_get_int64(v);
}
