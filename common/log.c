/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Timestamped log lines on stderr. */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "log.h"

int urd_log_level = URD_LOG_INFO;

void urd_log(int level, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warn", "info", "debug" };
	struct timespec ts;
	char buf[1024];
	va_list ap;

	if (level > urd_log_level)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%ld.%03ld unirdmad %s: %s\n", (long)ts.tv_sec, ts.tv_nsec / 1000000L,
		names[level < 0 ? 0 : level > 3 ? 3 : level], buf);
}
