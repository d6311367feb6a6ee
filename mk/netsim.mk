# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The multi-host tests' network tools (tests/netsim/): roce_relay reorders and
# duplicates RoCE packets through a netfilter queue (libnetfilter-queue-dev).
# Without the library it is not built and the tests that need it skip.

NFQ_LIBS := $(shell pkg-config --libs libnetfilter_queue 2>/dev/null)
ifneq ($(NFQ_LIBS),)
ROCE_RELAY := $(BUILD)/tools/roce_relay

$(ROCE_RELAY): tests/netsim/roce_relay.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(LDFLAGS) $(NFQ_LIBS)

all: $(ROCE_RELAY)
endif
