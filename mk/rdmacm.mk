# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Our librdmacm.so.1 (lib/rdmacm/): rdma_cm over our libibverbs, the IB CM
# on each vRNIC's QP1 (include/unirdma/cm.h says how the daemon shares QP1).
# It exports rdma-core 44's default-version symbols (lib/rdmacm/librdmacm.map,
# checked by tests/check-exports.sh) and links against our libibverbs.so.1.

RDMACM_SRC := $(wildcard lib/rdmacm/*.c)
RDMACM_OBJ := $(patsubst %.c,$(BUILD)/pic/%.o,$(RDMACM_SRC))
LIBRDMACM  := $(BUILD)/lib/librdmacm.so.1

$(RDMACM_OBJ): INC = $(INC_LIB) -Ilib/rdmacm -include lib/glibc-baseline.h
$(RDMACM_OBJ): lib/glibc-baseline.h

$(LIBRDMACM): $(RDMACM_OBJ) lib/rdmacm/librdmacm.map $(LIBIBVERBS)
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,librdmacm.so.1 -Wl,--version-script=lib/rdmacm/librdmacm.map \
		-Wl,-z,defs -o $@ $(RDMACM_OBJ) -L$(BUILD)/lib -l:libibverbs.so.1 \
		-Wl,--no-as-needed -l:libpthread.so.0 -Wl,--as-needed -lpthread
	ln -sf librdmacm.so.1 $(BUILD)/lib/librdmacm.so

all: $(LIBRDMACM)

# The codec's unit test: lib/rdmacm/cm_mad.c alone.
$(BUILD)/tests/u_cm_mad: tests/unit/u_cm_mad.c tests/unit/unit.h lib/rdmacm/cm_mad.c lib/rdmacm/cm_mad.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(INC_LIB) -Ilib/rdmacm -o $@ tests/unit/u_cm_mad.c lib/rdmacm/cm_mad.c $(LDFLAGS)
