# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# libFuzzer targets for the daemon's parsers of untrusted input (tests/fuzz/).
#
#   make fuzz-build     build/fuzz/fuzz_ctrl, fuzz_wqe, fuzz_roce, fuzz_dir, fuzz_cm
#                       (clang, -fsanitize=fuzzer,address,undefined)
#   make fuzz           run each target for FUZZ_SECONDS (default 600) from the
#                       repo corpus tests/fuzz/corpus/<target>/; new inputs go
#                       to a scratch corpus FUZZ_WORK/corpus/<target>/ (default
#                       build/fuzz/work), crashes to FUZZ_WORK/artifacts/.  The
#                       repo corpus is only read.
#   make fuzz-merge     fold the scratch corpus into the repo corpus, keeping
#                       only inputs that add coverage (libFuzzer -merge=1):
#                         build/fuzz/fuzz_ctrl -merge=1 tests/fuzz/corpus/ctrl build/fuzz/work/corpus/ctrl
#                       Review `git status tests/fuzz/corpus` before committing;
#                       keep the corpus small (tens of files, under 1 MB).
#   make fuzz-seeds     rewrite the hand-made seeds (tests/fuzz/corpus/<t>/seed-*)
#                       from the harnesses' seed writers
#                       (UNIRDMA_FUZZ_WRITE_SEEDS=DIR build/fuzz/fuzz_<t>)
#
# Reproduce a crash: build/fuzz/fuzz_wqe CRASH-FILE (runs that one input).
# The suite runs each target for 6 s: tests/integration/fuzz.sh.

FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 600
FUZZ_JOBS    ?= 1
FUZZ_TARGETS := ctrl wqe roce dir cm
FUZZ_LIBS    ?= -ljson-c -lmicrohttpd -lcurl -lpthread   # what the daemon links with (top Makefile)
FUZZ_BUILD   := $(BUILD)/fuzz
FUZZ_WORK    ?= $(FUZZ_BUILD)/work
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS  := -DUNIRDMA_VERSION=\"$(VERSION)\" -std=gnu11 -O1 -g $(WARN) -D_GNU_SOURCE \
		-Iinclude -Icommon -Icore -Iengine -Idaemon -Itests/fuzz -fno-strict-aliasing $(FUZZ_SAN)

# The daemon without main() (the harness is the process; it runs the engine's
# passes itself through engine_pass(), engine/engine.h).
FUZZ_SRC     := $(filter-out daemon/main.c,$(DAEMON_SRC)) $(ENGINE_SRC) $(CORE_SRC) $(COMMON_SRC) \
		tests/fuzz/harness.c tests/fuzz/check.c
FUZZ_OBJ     := $(patsubst %.c,$(FUZZ_BUILD)/obj/%.o,$(FUZZ_SRC))
FUZZ_BINS    := $(patsubst %,$(FUZZ_BUILD)/fuzz_%,$(FUZZ_TARGETS))

$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

# The invariant checker is the oracle, not code under test: no coverage
# instrumentation (still ASan and UBSan).
$(FUZZ_BUILD)/obj/tests/fuzz/check.o: tests/fuzz/check.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@

$(FUZZ_BUILD)/fuzz_%: $(FUZZ_BUILD)/obj/tests/fuzz/fuzz_%.o $(FUZZ_OBJ)
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(FUZZ_LIBS)

# The CM codec (lib/rdmacm/cm_mad.c) is a library part with no daemon
# under it: fuzz_cm links the codec alone.
FUZZ_CM_OBJ  := $(FUZZ_BUILD)/obj/lib/rdmacm/cm_mad.o
$(FUZZ_BUILD)/obj/tests/fuzz/fuzz_cm.o: FUZZ_CFLAGS += -Ilib/rdmacm
$(FUZZ_BUILD)/fuzz_cm: $(FUZZ_BUILD)/obj/tests/fuzz/fuzz_cm.o $(FUZZ_CM_OBJ)
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^

fuzz-build: $(FUZZ_BINS)

# keep the objects (make would delete them as intermediates of the chain)
.SECONDARY: $(FUZZ_OBJ) $(FUZZ_CM_OBJ) $(patsubst %,$(FUZZ_BUILD)/obj/tests/fuzz/fuzz_%.o,$(FUZZ_TARGETS))

fuzz: fuzz-build
	@set -e; for t in $(FUZZ_TARGETS); do \
		mkdir -p $(FUZZ_WORK)/corpus/$$t $(FUZZ_WORK)/artifacts; \
		echo "== fuzz_$$t for $(FUZZ_SECONDS)s (new inputs: $(FUZZ_WORK)/corpus/$$t)"; \
		$(FUZZ_BUILD)/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=4096 \
			$(if $(filter-out 1,$(FUZZ_JOBS)),-jobs=$(FUZZ_JOBS) -workers=$(FUZZ_JOBS)) -print_final_stats=1 \
			-artifact_prefix=$(FUZZ_WORK)/artifacts/$$t- \
			$(FUZZ_WORK)/corpus/$$t tests/fuzz/corpus/$$t; \
	done

fuzz-merge: fuzz-build
	@set -e; for t in $(FUZZ_TARGETS); do \
		[ -d $(FUZZ_WORK)/corpus/$$t ] || continue; \
		$(FUZZ_BUILD)/fuzz_$$t -merge=1 tests/fuzz/corpus/$$t $(FUZZ_WORK)/corpus/$$t; \
	done
	@du -sh tests/fuzz/corpus

fuzz-seeds: fuzz-build
	@set -e; for t in $(FUZZ_TARGETS); do \
		mkdir -p tests/fuzz/corpus/$$t; \
		UNIRDMA_FUZZ_WRITE_SEEDS=tests/fuzz/corpus/$$t $(FUZZ_BUILD)/fuzz_$$t; \
	done

.PHONY: fuzz-build fuzz fuzz-merge fuzz-seeds
