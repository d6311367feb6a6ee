/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* admin_loris: a hostile client of unirdmad's admin socket.
 *
 *   admin_loris SOCKET dribble INTERVAL_MS SECONDS   sends '{' then one byte
 *                                                    (a space) per INTERVAL_MS
 *   admin_loris SOCKET idle 0 SECONDS                connects and sends nothing
 *   admin_loris SOCKET regroup GID                   (run as root) becomes nobody
 *       without groups but keeps CAP_SETGID, connects, then joins group GID and
 *       sends a vrnic.list: what counts must be the credentials at connect()
 *       (SO_PEERCRED/SO_PEERGROUPS), not what /proc/PID says later (a PID
 *       that a process with other credentials may hold by then)
 *
 * It runs until the daemon closes the connection or SECONDS pass, then
 * prints one line:
 *   RESULT closed_after_ms=N sent=B answer=TEXT     the daemon ended it
 *   RESULT open_after_ms=N sent=B                   still open at the end
 *   RESULT connect_failed errno=E                   could not connect
 *   RESULT answer=TEXT                              regroup: the daemon's answer
 * Exit status 0 in all three cases (the test judges the line). */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int connect_to(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -1;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static int regroup(const char *path, gid_t gid)
{
	static const char req[] = "{\"cmd\":\"vrnic.list\"}\n";
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct cap[2];
	const struct passwd *pw = getpwnam("nobody");
	const struct group *gr = getgrnam("nogroup");
	uid_t uid = pw ? pw->pw_uid : 65534;
	gid_t ngid = gr ? gr->gr_gid : 65534;
	char answer[4096];
	size_t alen = 0;
	ssize_t n;
	int fd;

	memset(cap, 0, sizeof(cap));
	cap[0].permitted = cap[0].effective = 1u << CAP_SETGID;
	if (setgroups(0, NULL) || setresgid(ngid, ngid, ngid) || prctl(PR_SET_KEEPCAPS, 1L, 0L, 0L, 0L) ||
	    setresuid(uid, uid, uid) || syscall(SYS_capset, &h, cap)) {
		perror("admin_loris: dropping to nobody with CAP_SETGID");
		return 1;
	}
	fd = connect_to(path);
	if (fd < 0) {
		printf("RESULT connect_failed errno=%d\n", errno);
		return 0;
	}
	/* now this process is in the group; the connection was made without */
	if (setgroups(1, &gid)) {
		perror("admin_loris: setgroups");
		return 1;
	}
	if (send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) < 0 && errno != EPIPE)
		perror("admin_loris: send");
	while (alen < sizeof(answer) - 1 && (n = recv(fd, answer + alen, sizeof(answer) - 1 - alen, 0)) > 0)
		alen += (size_t)n;
	while (alen && (answer[alen - 1] == '\n'))
		alen--;
	answer[alen] = 0;
	printf("RESULT answer=%s\n", alen ? answer : "-");
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char answer[512];
	size_t alen = 0;
	long long t0, end, next;
	long interval, secs;
	int fd, sent = 0;
	bool dribble;

	if (argc == 4 && !strcmp(argv[2], "regroup"))
		return regroup(argv[1], (gid_t)atol(argv[3]));
	if (argc != 5 || (strcmp(argv[2], "dribble") && strcmp(argv[2], "idle"))) {
		fprintf(stderr, "usage: admin_loris SOCKET dribble|idle INTERVAL_MS SECONDS\n"
				"       admin_loris SOCKET regroup GID\n");
		return 2;
	}
	dribble = !strcmp(argv[2], "dribble");
	interval = atol(argv[3]);
	secs = atol(argv[4]);
	if (strlen(argv[1]) >= sizeof(sa.sun_path) || (dribble && interval <= 0) || secs <= 0) {
		fprintf(stderr, "admin_loris: bad arguments\n");
		return 2;
	}
	memcpy(sa.sun_path, argv[1], strlen(argv[1]) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		printf("RESULT connect_failed errno=%d\n", errno);
		return 0;
	}
	t0 = now_ms();
	end = t0 + secs * 1000;
	next = t0;
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		long long now = now_ms(), wait;
		ssize_t n;

		if (dribble && now >= next) {
			if (send(fd, sent ? " " : "{", 1, MSG_NOSIGNAL) == 1)
				sent++;
			next = now + interval;
		}
		if (now >= end) {
			printf("RESULT open_after_ms=%lld sent=%d\n", now - t0, sent);
			return 0;
		}
		wait = (dribble && next < end ? next : end) - now;
		if (poll(&p, 1, (int)wait) <= 0)
			continue;
		n = recv(fd, answer + alen, sizeof(answer) - 1 - alen, 0);
		if (n > 0 && alen + (size_t)n < sizeof(answer) - 1) {
			alen += (size_t)n;
			continue;
		}
		if (n > 0)
			alen += (size_t)n;
		answer[alen] = 0;
		if (alen && answer[alen - 1] == '\n')
			answer[--alen] = 0;
		printf("RESULT closed_after_ms=%lld sent=%d answer=%s\n", now_ms() - t0, sent, alen ? answer : "-");
		return 0;
	}
}
