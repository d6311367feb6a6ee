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
# One spelling of every path in the tree: the dependency files (.d) name
# their objects as the compile saw them, and the suite runs make with an
# absolute BUILD (tests/run-tests.sh) where a person types a relative one;
# with two spellings, a changed header rebuilt only one of them (a stale
# fuzz_dir once crashed on its own seeds after engine/wire.h changed).
override BUILD := $(abspath $(BUILD))
OPT     ?= -O2 -g
SAN     ?=
WARN    := -Wall -Wextra -Werror
VERSION := 0.1.0
CFLAGS  += -DUNIRDMA_VERSION=\"$(VERSION)\" -std=gnu11 $(OPT) $(WARN) $(SAN) -D_GNU_SOURCE -fno-strict-aliasing
LDFLAGS += $(SAN)

# The include path is the wall between the parts (core/objects.h says who may
# call whom; tests/check-layering.sh checks the calls): each part sees only
# the directories below it.
INC_LIB    := -Iinclude -Icommon
# core/ sees engine/ only for engine.h (the engine state in its objects)
INC_CORE   := -Iinclude -Icommon -Icore -Iengine
INC_ENGINE := -Iinclude -Icommon -Icore -Iengine
INC_DAEMON := -Iinclude -Icommon -Icore -Iengine -Idaemon
INC_CLI    := -Iinclude -Icommon
INC_TEST   := -Iinclude -Icommon -Itests/verbs
INC_K8S    := -Ik8s

COMMON_SRC := $(wildcard common/*.c)
LIB_SRC    := $(wildcard lib/*.c)
CORE_SRC   := $(wildcard core/*.c)
ENGINE_SRC := $(wildcard engine/*.c)
DAEMON_SRC := $(wildcard daemon/*.c)
CLI_SRC    := $(wildcard cli/*.c)
TEST_SRC   := $(wildcard tests/verbs/t_*.c)
TOOL_SRC   := $(wildcard tests/tools/*.c)
K8S_SRC    := $(wildcard k8s/*.c)

LIB_OBJ    := $(patsubst %.c,$(BUILD)/pic/%.o,$(LIB_SRC) $(COMMON_SRC))
ENGINE_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(ENGINE_SRC) $(CORE_SRC) $(COMMON_SRC))
DAEMON_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(DAEMON_SRC))
CLI_OBJ    := $(patsubst %.c,$(BUILD)/obj/%.o,$(CLI_SRC) $(COMMON_SRC))
TESTS      := $(patsubst tests/verbs/%.c,$(BUILD)/tests/%,$(TEST_SRC))
UNIT_SRC   := $(wildcard tests/unit/u_*.c)
UNITS      := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
TOOLS      := $(patsubst tests/tools/%.c,$(BUILD)/tools/%,$(TOOL_SRC))
K8S_OBJ    := $(patsubst %.c,$(BUILD)/obj/%.o,$(K8S_SRC))

LIBIBVERBS := $(BUILD)/lib/libibverbs.so.1
# The engine, the object model's services and common/, linkable without the
# control plane (unit tests link it alone).
ENGINE_LIB := $(BUILD)/engine/libunirdma-engine.a
DAEMON     := $(BUILD)/bin/unirdmad
CLI        := $(BUILD)/bin/unirdma
# The kubelet device plugin (k8s/): a program of its own, no part of the
# daemon's, only its admin socket (JSON) and kubelet's gRPC (nghttp2).
DEVPLUGIN  := $(BUILD)/bin/unirdma-device-plugin

all: $(LIBIBVERBS) $(DAEMON) $(CLI) $(ENGINE_LIB) $(TESTS) $(UNITS) $(TOOLS) $(DEVPLUGIN)

engine: $(ENGINE_LIB)

$(BUILD)/pic/%.o: INC = $(INC_LIB) -include lib/glibc-baseline.h
# a tree built before the header existed has .d files that do not name it
$(LIB_OBJ): lib/glibc-baseline.h
$(BUILD)/obj/common/%.o: INC = $(INC_LIB)
$(BUILD)/obj/core/%.o: INC = $(INC_CORE)
$(BUILD)/obj/engine/%.o: INC = $(INC_ENGINE)
$(BUILD)/obj/daemon/%.o: INC = $(INC_DAEMON)
$(BUILD)/obj/cli/%.o: INC = $(INC_CLI)
$(BUILD)/obj/k8s/%.o: INC = $(INC_K8S)

$(BUILD)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(INC) -fPIC -MMD -MP -c $< -o $@

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(INC) -MMD -MP -c $< -o $@

$(ENGINE_LIB): $(ENGINE_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@
	$(AR) rcs $@ $(ENGINE_OBJ)

$(LIBIBVERBS): $(LIB_OBJ) lib/libibverbs.map
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,libibverbs.so.1 -Wl,--version-script=lib/libibverbs.map \
		-Wl,-z,defs -o $@ $(LIB_OBJ) -Wl,--no-as-needed -l:libpthread.so.0 -Wl,--as-needed -lpthread
	ln -sf libibverbs.so.1 $(BUILD)/lib/libibverbs.so

$(DAEMON): $(DAEMON_OBJ) $(ENGINE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(DAEMON_OBJ) $(ENGINE_LIB) -ljson-c -lmicrohttpd -lcurl -lpthread

$(CLI): $(CLI_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) -ljson-c
	ln -sf unirdma $(BUILD)/bin/unirdma-cni  # the CNI plugin (cli/cni.c)

$(DEVPLUGIN): $(K8S_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(K8S_OBJ) -lnghttp2 -ljson-c

# libFuzzer target for what the device plugin parses from its socket
# (k8s/fuzz/fuzz_devplugin.c says how to run it; devplugin.sh, case fuzz).
DEVPLUGIN_FUZZ := $(BUILD)/fuzz/fuzz_devplugin
$(DEVPLUGIN_FUZZ): k8s/fuzz/fuzz_devplugin.c $(K8S_SRC) $(wildcard k8s/*.h)
	@mkdir -p $(dir $@)
	$(or $(FUZZ_CC),clang) -DUNIRDMA_VERSION=\"$(VERSION)\" -std=gnu11 -O1 -g $(WARN) -D_GNU_SOURCE \
		-DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined -fno-omit-frame-pointer $(INC_K8S) -o $@ \
		k8s/fuzz/fuzz_devplugin.c k8s/grpc.c k8s/pb.c -lnghttp2 -ljson-c
devplugin-fuzz: $(DEVPLUGIN_FUZZ)

# The C tests link against our library (so its symbol versions are checked at
# link time) and run with LD_LIBRARY_PATH=$(BUILD)/lib.
# Their helpers are compiled once, not once per test.
TEST_HELPERS := $(BUILD)/obj/tests/verbs/helpers.o
$(TEST_HELPERS): tests/verbs/helpers.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(INC_TEST) -MMD -MP -c $< -o $@
$(BUILD)/tests/%: tests/verbs/%.c tests/verbs/helpers.h $(TEST_HELPERS) $(LIBIBVERBS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(INC_TEST) -o $@ $< $(TEST_HELPERS) $(LDFLAGS) \
		-L$(BUILD)/lib -l:libibverbs.so.1 -Wl,-rpath-link,$(BUILD)/lib -lpthread

# Unit tests: the engine library (engine, core, common) without the control
# plane; a unit test that links must not need anything from daemon/.
$(BUILD)/tests/u_%: tests/unit/u_%.c tests/unit/unit.h $(ENGINE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(INC_ENGINE) -o $@ $< $(ENGINE_LIB) $(LDFLAGS) -lpthread

# RoCEv2 packet tools (tests/tools/roce_*.c: roce_inject, roce_pcapcheck):
# the codec (common/roce.c) and libc only, no verbs library.
$(BUILD)/tools/roce_%: tests/tools/roce_%.c common/roce.h $(BUILD)/obj/common/roce.o
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(INC_LIB) -o $@ $< $(BUILD)/obj/common/roce.o $(LDFLAGS) -lpthread

# Test tools: one program per file, for the integration tests (hostile
# tenants, isolation probes, ...); they link against our library like the tests.
$(BUILD)/tools/%: tests/tools/%.c $(LIBIBVERBS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(INC_TEST) -o $@ $< $(LDFLAGS) \
		-L$(BUILD)/lib -l:libibverbs.so.1 -Wl,-rpath-link,$(BUILD)/lib -lpthread

deps:
	@scripts/install-deps.sh

# The suite's builds use every CPU (a serial build of everything took about
# a minute of CI's time on 2 cores, -j2 about half); `make` alone stays serial unless given -j.
JOBS ?= $(shell nproc 2>/dev/null || echo 1)

demo: deps
	$(MAKE) -j$(JOBS) all
	scripts/demo.sh

test: deps
	$(MAKE) -j$(JOBS) all
	tests/run-tests.sh

asan:
	$(MAKE) -j$(JOBS) BUILD=build-asan SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" OPT="-O1 -g"

# The suite against ASan+UBSan builds of the daemon, CLI, library and tests.
# Debian's unmodified programs load our instrumented library, so the ASan
# runtime is preloaded for them; the daemon is also checked for leaks.
# Left out: the fuzz cases (their targets are always built with ASan+UBSan, so
# `make test` already ran them so), the checks that do not use the build
# under test (datapath:clang builds the tree with clang into a directory of
# its own; check-license reads the sources), and the two-host suites
# (multihost, rxe_interop: minutes of perftest traffic that the wire_verbs
# and hostile cases cover under ASan).
ASAN_RT = $(shell $(CC) -print-file-name=libasan.so)
asan-test: deps asan
	UNIRDMA_BUILD=build-asan UNIRDMA_EXEC_PRELOAD=$(ASAN_RT) \
	ASAN_OPTIONS=detect_leaks=0 \
	UNIRDMA_DAEMON_ASAN_OPTIONS=detect_leaks=1 \
	UBSAN_OPTIONS=print_stacktrace=1 \
	UNIRDMA_TEST_EXCLUDE="fuzz: datapath:clang check-license multihost: rxe_interop: $(UNIRDMA_TEST_EXCLUDE)" \
	tests/run-tests.sh $(TESTS_FILTER)

clean:
	rm -rf build build-asan build-clang

.PHONY: all engine deps demo test asan asan-test clean devplugin-fuzz

# Parts that bring their own rules (fuzzing, benchmarks) live in mk/*.mk.
-include $(wildcard mk/*.mk)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
