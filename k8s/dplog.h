/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* dplog.h: the device plugin's log: one timestamped line per event on
 * stderr (device-plugin.c; the fuzz harness brings its own). */
#ifndef UNIRDMA_K8S_DPLOG_H
#define UNIRDMA_K8S_DPLOG_H

void dp_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
