/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* VM vRNICs: the same region served to a QEMU guest as an ivshmem-plain BAR,
 * with the guest's RAM shared with the daemon (vhost-user style).
 *
 * What differs from a container vRNIC, and nothing else does:
 * - The region file is only the control part (URD_REGION_CTRL_SIZE, a power
 *   of two: the BAR); hdr.mem_off = hdr.mem_size = 0; hdr.flags has
 *   URD_REGION_VM (no futex reaches a guest: both sides poll).
 * - DIR/guest-ram is the guest's RAM (DIR: the vRNIC's own tmpfs, sized for
 *   the control part and the RAM, vrnic.c): created, sized and mapped
 *   MAP_SHARED here; QEMU maps it too, through
 *     -object memory-backend-file,id=urd-ram,share=on,mem-path=FILE,size=S
 *     -machine pc,memory-backend=urd-ram,max-ram-below-4g=3G -m S
 *   (`unirdma vm-args NAME` prints the whole set).
 * - REG_MR segments are guest-physical addresses.  vm_translate() maps each
 *   one through the machine's RAM layout to the daemon's mapping of
 *   guest-ram and refuses anything that is not entirely guest RAM: that is
 *   the bounds check.  The MR's segment table then works for the engine as
 *   for any MR.  MEM_ALLOC and MEM_FREE are refused.  The segments must be
 *   page-granular and not share a page; contiguous ones are merged; the
 *   pages count against max_mem_bytes (mr.c vm_segments, which runs
 *   without the big lock).
 * - Liveness: a guest process claims a slot by a compare-and-swap of the
 *   slot's vm_owner word and keeps its heartbeat word ticking (its event
 *   thread, every millisecond).  A slot whose owner or heartbeat did not
 *   change for VM_DEAD_MS is dead: its context is released (peers' QPs go to
 *   the error state) and the slot is freed.  When QEMU exits (poweroff,
 *   kill), every heartbeat of the VM stops, so everything the VM held is
 *   released within VM_DEAD_MS; no process knowledge of QEMU is needed.
 *
 * RAM layout of QEMU's `pc` machine (hw/i386/pc_piix.c): RAM below the
 * 32-bit PCI hole is GPA [0, lowmem) = file [0, lowmem); the rest is GPA
 * [4 GiB, 4 GiB + ram - lowmem) = file [lowmem, ram).  QEMU computes lowmem
 * from max-ram-below-4g and version-dependent rules; we pin it instead:
 * max-ram-below-4g=3G (GiB aligned, so QEMU keeps it as given) gives lowmem =
 * min(ram, 3 GiB).  GPAs in [lowmem, 4 GiB) (the PCI hole, where the BAR
 * itself lives) are never RAM.
 *
 * Known limit: a guest process that dies with pinned pages frees them to the
 * guest kernel at once, while its MRs live at the daemon until the
 * heartbeat timeout; a peer's RDMA WRITE in that window lands in whatever
 * the guest reused the pages for.  Only that VM's own RAM can be hit (a
 * guest kernel driver holding the pages would close the window).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "daemon.h"
#include "futex.h"
#include "log.h"
#include "unirdma/barrier.h"

#define GIB              (1ull << 30)
#define VM_LOWMEM_MAX    (3 * GIB)           /* = max-ram-below-4g of vm-args */
#define VM_RAM_MIN_MB    16ull
#define VM_RAM_MAX_MB    (1ull << 20)        /* 1 TiB */
#define VM_DEAD_MS_DEFAULT 1000

struct urd_vm {
	uint64_t ram_bytes;
	uint64_t lowmem;                /* RAM below 4 GiB */
	uint8_t *ram;                   /* the daemon's mapping of guest-ram */
	char ram_path[600];
	uint64_t dead_ns;
	struct {
		uint32_t owner;
		uint64_t hb;
		uint64_t since;         /* when owner or hb last changed */
	} slot[URD_MAX_CTX];
};

static uint64_t dead_ms(void)
{
	const char *e = getenv("UNIRDMA_VM_DEAD_MS");   /* tests under heavy load */
	long v = e ? strtol(e, NULL, 10) : 0;

	return v >= 100 && v <= 600000 ? (uint64_t)v : VM_DEAD_MS_DEFAULT;
}

int vm_parse_cfg(struct json_object *req, struct urd_vm_cfg *cfg, char *err, size_t errlen)
{
	struct json_object *vm, *v;

	memset(cfg, 0, sizeof(*cfg));
	if (!json_object_object_get_ex(req, "vm", &vm))
		return 0;
	if (!json_object_is_type(vm, json_type_object)) {
		snprintf(err, errlen, "\"vm\" must be an object: {\"ram_mb\": N}");
		return -EINVAL;
	}
	json_object_object_foreach(vm, k, val) {
		(void)val;
		if (strcmp(k, "ram_mb")) {
			snprintf(err, errlen, "unknown field \"%s\" in \"vm\"", k);
			return -EINVAL;
		}
	}
	if (!json_object_object_get_ex(vm, "ram_mb", &v) || !json_object_is_type(v, json_type_int) ||
	    json_object_get_int64(v) < (int64_t)VM_RAM_MIN_MB ||
	    json_object_get_int64(v) > (int64_t)VM_RAM_MAX_MB) {
		snprintf(err, errlen, "\"vm.ram_mb\" must be an integer from %llu to %llu",
			 VM_RAM_MIN_MB, VM_RAM_MAX_MB);
		return -EINVAL;
	}
	cfg->ram_bytes = (uint64_t)json_object_get_int64(v) << 20;
	return 0;
}

/* Creates and maps DIR/guest-ram; vr->dir is new and empty. */
int vm_prepare(struct urd_vrnic *vr, const struct urd_vm_cfg *cfg)
{
	struct urd_vm *vm;
	int fd, ret;

	if (!cfg->ram_bytes || cfg->ram_bytes % (1ull << 20))
		return -EINVAL;
	vm = calloc(1, sizeof(*vm));
	if (!vm)
		return -ENOMEM;
	vm->ram_bytes = cfg->ram_bytes;
	vm->lowmem = vm->ram_bytes < VM_LOWMEM_MAX ? vm->ram_bytes : VM_LOWMEM_MAX;
	vm->dead_ns = dead_ms() * 1000000ull;
	snprintf(vm->ram_path, sizeof(vm->ram_path), "%s/guest-ram", vr->dir);
	fd = open(vm->ram_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0660);
	if (fd < 0) {
		ret = -errno;
		goto err_free;
	}
	if (ftruncate(fd, (off_t)vm->ram_bytes)) {
		ret = -errno;
		goto err_file;
	}
	vm->ram = mmap(NULL, vm->ram_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
	if (vm->ram == MAP_FAILED) {
		ret = -errno;
		goto err_file;
	}
	/* QEMU (or anyone who can open the file) may truncate it: the engine's
	 * next access then finds a zero page instead of killing the daemon */
	guard_add(vm->ram, vm->ram_bytes);
	close(fd);
	for (uint32_t i = 0; i < URD_MAX_CTX; i++)
		vm->slot[i].since = urd_now_ns();
	vr->vm = vm;
	return 0;

err_file:
	close(fd);
	unlink(vm->ram_path);
err_free:
	free(vm);
	return ret;
}

/* Called by init_header before the magic is published. */
void vm_init_header(struct urd_vrnic *vr)
{
	struct urd_region_hdr *h = vr->hdr;

	h->flags |= URD_REGION_VM;
	h->mem_off = 0;
	h->mem_size = 0;
	h->dev.max_mr_size = vr->vm->ram_bytes;
}

void vm_release(struct urd_vrnic *vr)
{
	struct urd_vm *vm = vr->vm;

	if (!vm)
		return;
	guard_remove(vm->ram);
	munmap(vm->ram, vm->ram_bytes);
	/* QEMU keeps its own mapping while it runs; the name goes */
	unlink(vm->ram_path);
	free(vm);
	vr->vm = NULL;
}

uint32_t vm_guard_faults(const struct urd_vrnic *vr)
{
	return guard_faults(vr->vm->ram);
}

uint64_t vm_ram_bytes(const struct urd_vrnic *vr)
{
	return vr->vm->ram_bytes;
}

/* Guest-physical [gpa, gpa + len) -> the daemon's address of its first byte.
 * The whole range must be guest RAM in one piece of the layout. */
int vm_translate(struct urd_vrnic *vr, uint64_t gpa, uint64_t len, uint8_t **ptr)
{
	const struct urd_vm *vm = vr->vm;
	uint64_t off;

	if (!len || gpa + len < gpa)
		return -EINVAL;
	if (gpa < vm->lowmem) {
		if (len > vm->lowmem - gpa)
			return -EINVAL;         /* runs into the PCI hole */
		off = gpa;
	} else if (gpa >= 4 * GIB) {
		uint64_t high = vm->ram_bytes - vm->lowmem;

		if (gpa - 4 * GIB >= high || len > high - (gpa - 4 * GIB))
			return -EINVAL;         /* beyond the end of RAM */
		off = vm->lowmem + (gpa - 4 * GIB);
	} else {
		return -EINVAL;                 /* the PCI hole: not RAM */
	}
	*ptr = vm->ram + off;
	return 0;
}

/* URD_REG_MR_INDIRECT: the MR's segment table lies in guest RAM, in the
 * pieces the request lists.  Copy it out (the guest may rewrite it while we
 * look) into *table; its entries are validated by REG_MR like any segment.
 * Runs without the big lock (mr.c mr_prepare).  The copy (up to 16 MiB)
 * is mmapped so that it goes back to the system when freed: the daemon's RSS
 * must not keep what a tenant made it copy once. */
int vm_copy_seg_table(struct urd_vrnic *vr, const struct urd_mr_seg *pieces, uint32_t npieces,
		      struct urd_mr_seg **table, uint32_t *nsegs)
{
	uint64_t bytes = 0, pos = 0;
	uint8_t *t;

	for (uint32_t i = 0; i < npieces; i++) {
		if (pieces[i].len > (uint64_t)URD_MR_MAX_SEGS_INDIRECT * sizeof(struct urd_mr_seg) ||
		    bytes + pieces[i].len > (uint64_t)URD_MR_MAX_SEGS_INDIRECT * sizeof(struct urd_mr_seg))
			return -EINVAL;
		bytes += pieces[i].len;
	}
	if (!bytes || bytes % sizeof(struct urd_mr_seg))
		return -EINVAL;
	t = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t == MAP_FAILED)
		return -ENOMEM;
	for (uint32_t i = 0; i < npieces; i++) {
		uint8_t *p;

		if (vm_translate(vr, pieces[i].off, pieces[i].len, &p)) {
			munmap(t, bytes);
			return -EINVAL;
		}
		memcpy(t + pos, p, pieces[i].len);
		pos += pieces[i].len;
	}
	*table = (struct urd_mr_seg *)t;
	*nsegs = (uint32_t)(bytes / sizeof(struct urd_mr_seg));
	return 0;
}

void vm_free_seg_table(struct urd_mr_seg *table, uint32_t nsegs)
{
	if (table)
		munmap(table, (size_t)nsegs * sizeof(*table));
}

/* A slot whose owner word and heartbeat have not moved for the timeout.
 * vm->slot[] is the control thread's own state. */
bool vm_slot_stalled(struct urd_vrnic *vr, uint32_t slot)
{
	return urd_now_ns() - vr->vm->slot[slot].since >= vr->vm->dead_ns;
}

/* Every LIVENESS period, in the control thread, WITHOUT the big lock: the
 * words are the tenant's, vm->slot[] is ours, and which slots have a context
 * comes from the atomic ctx_mask.  Returns the slots to release. */
uint64_t vm_liveness_scan(struct urd_vrnic *vr)
{
	struct urd_vm *vm = vr->vm;
	uint64_t now = urd_now_ns(), dead = 0;
	uint64_t live = __atomic_load_n(&vr->ctx_mask, __ATOMIC_ACQUIRE);

	for (uint32_t i = 0; i < URD_MAX_CTX; i++) {
		struct urd_slot_hdr *s = (struct urd_slot_hdr *)(vr->map + urd_slot_off(i));
		uint32_t owner = urd_load_acquire(&s->vm_owner);
		uint64_t hb = urd_load_acquire(&s->heartbeat);

		if (owner != vm->slot[i].owner || hb != vm->slot[i].hb) {
			vm->slot[i].owner = owner;
			vm->slot[i].hb = hb;
			vm->slot[i].since = now;
			continue;
		}
		if ((!owner && !(live >> i & 1)) || now - vm->slot[i].since < vm->dead_ns)
			continue;
		dead |= 1ull << i;
	}
	return dead;
}

/* Big lock held. */
void vm_liveness_reap(struct urd_vrnic *vr, uint32_t i)
{
	struct urd_vm *vm = vr->vm;
	struct urd_slot_hdr *s = (struct urd_slot_hdr *)(vr->map + urd_slot_off(i));
	uint32_t owner = vm->slot[i].owner;
	uint64_t now = urd_now_ns();

	if (vr->ctx[i]) {
		log_info("vrnic %s: VM context %u (slot %u) silent for %llu ms; releasing its resources",
			 vr->name, vr->ctx[i]->id, i,
			 (unsigned long long)((now - vm->slot[i].since) / 1000000));
		ctx_destroy(vr->ctx[i]);
	}
	/* free the slot for the next guest process (unless one claimed
	 * it meanwhile: that one changed the word) */
	__atomic_compare_exchange_n(&s->vm_owner, &owner, 0, false, __ATOMIC_SEQ_CST,
				    __ATOMIC_SEQ_CST);
	vm->slot[i].owner = 0;
	vm->slot[i].since = now;
}

struct json_object *vm_json(const struct urd_vrnic *vr)
{
	const struct urd_vm *vm = vr->vm;
	struct json_object *o = json_object_new_object();
	char path[640];

	json_object_object_add(o, "ram_bytes", json_object_new_int64((int64_t)vm->ram_bytes));
	json_object_object_add(o, "machine", json_object_new_string("pc"));
	json_object_object_add(o, "max_ram_below_4g", json_object_new_int64((int64_t)VM_LOWMEM_MAX));
	json_object_object_add(o, "lowmem_bytes", json_object_new_int64((int64_t)vm->lowmem));
	json_object_object_add(o, "highmem_bytes", json_object_new_int64((int64_t)(vm->ram_bytes - vm->lowmem)));
	json_object_object_add(o, "guest_ram", json_object_new_string(vm->ram_path));
	snprintf(path, sizeof(path), "%s/region", vr->dir);
	json_object_object_add(o, "region", json_object_new_string(path));
	json_object_object_add(o, "region_bytes", json_object_new_int64((int64_t)URD_REGION_CTRL_SIZE));
	json_object_object_add(o, "heartbeat_timeout_ms", json_object_new_int64((int64_t)(vm->dead_ns / 1000000)));
	return o;
}
