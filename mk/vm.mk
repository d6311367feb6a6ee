# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# VM tests (tests/vm/, tests/integration/vm.sh): the guest-side test program,
# linked against our libibverbs like the other test tools.  The guest image
# itself (kernel + initramfs) is built by tests/vm/build-image.sh when the
# VM tests run: it needs root, apt-get and a few seconds.
#
#   make vm-image    build $(BUILD)/vm/image/{vmlinux,base.cpio} now

VM_TOOL := $(BUILD)/vm/urd_vmtool

$(VM_TOOL): tests/vm/urd_vmtool.c $(LIBIBVERBS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(INC_TEST) -o $@ $< $(LDFLAGS) \
		-L$(BUILD)/lib -l:libibverbs.so.1 -Wl,-rpath-link,$(BUILD)/lib -lpthread

all: $(VM_TOOL)

vm-image: $(VM_TOOL) $(LIBIBVERBS)
	tests/vm/build-image.sh --build $(BUILD)

.PHONY: vm-image
