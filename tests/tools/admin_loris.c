/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* admin_loris: a hostile client of unirdmad's admin socket.
 *
 *   admin_loris SOCKET dribble INTERVAL_MS SECONDS   sends '{' then one byte
 *                                                    (a space) per INTERVAL_MS
 *   admin_loris SOCKET idle 0 SECONDS                connects and sends nothing
 *
 * It runs until the daemon closes the connection or SECONDS pass, then
 * prints one line:
 *   RESULT closed_after_ms=N sent=B answer=TEXT     the daemon ended it
 *   RESULT open_after_ms=N sent=B                   still open at the end
 *   RESULT connect_failed errno=E                   could not connect
 * Exit status 0 in all three cases (the test judges the line). */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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

	if (argc != 5 || (strcmp(argv[2], "dribble") && strcmp(argv[2], "idle"))) {
		fprintf(stderr, "usage: admin_loris SOCKET dribble|idle INTERVAL_MS SECONDS\n");
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
