/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Logging for the daemon and the CLI (the library logs only with UNIRDMA_DEBUG). */
#ifndef UNIRDMA_LOG_H
#define UNIRDMA_LOG_H

enum urd_log_level { URD_LOG_ERR = 0, URD_LOG_WARN, URD_LOG_INFO, URD_LOG_DEBUG };

extern int urd_log_level;
void urd_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_err(...)   urd_log(URD_LOG_ERR, __VA_ARGS__)
#define log_warn(...)  urd_log(URD_LOG_WARN, __VA_ARGS__)
#define log_info(...)  urd_log(URD_LOG_INFO, __VA_ARGS__)
#define log_debug(...) do { if (urd_log_level >= URD_LOG_DEBUG) urd_log(URD_LOG_DEBUG, __VA_ARGS__); } while (0)

#endif
