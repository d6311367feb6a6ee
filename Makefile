# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# unirdma build.  `make` builds everything into build/; `make demo` and `make test`
# install their own dependencies first (scripts/install-deps.sh, needs root).
#
#   make            daemon, CLI, libibverbs.so.1, tests
#   make demo       the main job: two containers, real verbs traffic through unirdmad
#   make test       the whole suite (tests/run-tests.sh)
#   make asan-test  the suite again with ASan+UBSan builds of everything
#   make CC=clang   any target with clang

CC      ?= gcc
BUILD   ?= build
OPT     ?= -O2 -g
SAN     ?=
WARN    := -Wall -Wextra -Werror
VERSION := 0.1.0
CFLAGS  += -DUNIRDMA_VERSION=\"$(VERSION)\" -std=gnu11 $(OPT) $(WARN) $(SAN) -D_GNU_SOURCE -Iinclude -Icommon -Idaemon -fno-strict-aliasing
LDFLAGS += $(SAN)

COMMON_SRC := $(wildcard common/*.c)
LIB_SRC    := $(wildcard lib/*.c)
DAEMON_SRC := $(wildcard daemon/*.c) $(wildcard engine/*.c)
CLI_SRC    := $(wildcard cli/*.c)
TEST_SRC   := $(wildcard tests/verbs/t_*.c)
TOOL_SRC   := $(wildcard tests/tools/*.c)

LIB_OBJ    := $(patsubst %.c,$(BUILD)/pic/%.o,$(LIB_SRC) $(COMMON_SRC))
DAEMON_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(DAEMON_SRC) $(COMMON_SRC))
CLI_OBJ    := $(patsubst %.c,$(BUILD)/obj/%.o,$(CLI_SRC) $(COMMON_SRC))
TESTS      := $(patsubst tests/verbs/%.c,$(BUILD)/tests/%,$(TEST_SRC))
UNIT_SRC   := $(wildcard tests/unit/u_*.c)
UNITS      := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
TOOLS      := $(patsubst tests/tools/%.c,$(BUILD)/tools/%,$(TOOL_SRC))

LIBIBVERBS := $(BUILD)/lib/libibverbs.so.1
DAEMON     := $(BUILD)/bin/unirdmad
CLI        := $(BUILD)/bin/unirdma

all: $(LIBIBVERBS) $(DAEMON) $(CLI) $(TESTS) $(UNITS) $(TOOLS)

$(BUILD)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC -MMD -MP -c $< -o $@

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(LIBIBVERBS): $(LIB_OBJ) lib/libibverbs.map
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,libibverbs.so.1 -Wl,--version-script=lib/libibverbs.map \
		-Wl,-z,defs -o $@ $(LIB_OBJ) -lpthread
	ln -sf libibverbs.so.1 $(BUILD)/lib/libibverbs.so

$(DAEMON): $(DAEMON_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(DAEMON_OBJ) -ljson-c -lmicrohttpd -lpthread

$(CLI): $(CLI_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) -ljson-c

# The C tests link against our library (so its symbol versions are checked at
# link time) and run with LD_LIBRARY_PATH=$(BUILD)/lib.
$(BUILD)/tests/%: tests/verbs/%.c tests/verbs/helpers.c tests/verbs/helpers.h $(LIBIBVERBS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests/verbs -o $@ $< tests/verbs/helpers.c $(LDFLAGS) \
		-L$(BUILD)/lib -l:libibverbs.so.1 -Wl,-rpath-link,$(BUILD)/lib -lpthread

# Unit tests: one daemon part linked on its own (tests/unit/u_NAME.c names
# what it links below).
$(BUILD)/tests/u_alloc: tests/unit/u_alloc.c daemon/alloc.c daemon/daemon.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ tests/unit/u_alloc.c daemon/alloc.c $(LDFLAGS)

# Test tools: one program per file, for the integration tests (hostile
# tenants, isolation probes, ...); they link against our library like the tests.
$(BUILD)/tools/%: tests/tools/%.c $(LIBIBVERBS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests/verbs -o $@ $< $(LDFLAGS) \
		-L$(BUILD)/lib -l:libibverbs.so.1 -Wl,-rpath-link,$(BUILD)/lib -lpthread

deps:
	@scripts/install-deps.sh

demo: deps all
	scripts/demo.sh

test: deps all
	tests/run-tests.sh

asan:
	$(MAKE) BUILD=build-asan SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" OPT="-O1 -g"

# The suite against ASan+UBSan builds of the daemon, CLI, library and tests.
# Debian's unmodified programs load our instrumented library, so the ASan
# runtime is preloaded for them; the daemon is also checked for leaks.
ASAN_RT = $(shell $(CC) -print-file-name=libasan.so)
asan-test: deps asan
	UNIRDMA_BUILD=build-asan UNIRDMA_EXEC_PRELOAD=$(ASAN_RT) \
	ASAN_OPTIONS=detect_leaks=0 \
	UNIRDMA_DAEMON_ASAN_OPTIONS=detect_leaks=1 \
	UBSAN_OPTIONS=print_stacktrace=1 \
	tests/run-tests.sh $(TESTS_FILTER)

clean:
	rm -rf build build-asan build-clang

.PHONY: all deps demo test asan asan-test clean

# Parts that bring their own rules (fuzzing, benchmarks) live in mk/*.mk.
-include $(wildcard mk/*.mk)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
