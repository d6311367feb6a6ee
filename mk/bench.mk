# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Benchmarks (bench/README.md): `make bench` runs the quick comparison (under
# 5 minutes), `make bench-full` every sweep.  Both install their dependencies
# first (scripts/install-deps.sh), need root (containers, apt-get), build what
# they use and write a report into results/<date>-<mode>/.
#
#   make bench BENCH_ARGS="--out DIR --reps N ..."   options of bench/run.sh

BENCH_SRC   := $(wildcard bench/*.c)
BENCH_PROGS := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))
BENCH_ARGS  ?=

# The verbs benchmark links against our libibverbs like the tests; the floor
# programs need no RDMA at all.
$(BUILD)/bench/urd_floor: bench/urd_floor.c bench/util.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(LDFLAGS)

$(BUILD)/bench/%: bench/%.c bench/util.h $(LIBIBVERBS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(LDFLAGS) \
		-L$(BUILD)/lib -l:libibverbs.so.1 -Wl,-rpath-link,$(BUILD)/lib -lpthread

bench-build: $(LIBIBVERBS) $(DAEMON) $(CLI) $(BENCH_PROGS)

bench: deps bench-build
	UNIRDMA_BUILD=$(BUILD) bench/run.sh --quick $(BENCH_ARGS)

bench-full: deps bench-build
	UNIRDMA_BUILD=$(BUILD) bench/run.sh --full $(BENCH_ARGS)

.PHONY: bench bench-full bench-build
