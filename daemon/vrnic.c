/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* vRNIC lifecycle: the region file, its header, and the allocators for the
 * ring arena and the container memory window. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "daemon.h"
#include "directory.h"
#include "log.h"
#include "futex.h"
#include "unirdma/barrier.h"

#define URD_MEMWIN_DEFAULT (16ull << 30)

/* false in in-process harnesses (fuzzers) that drive ctrl_dispatch and the
 * engine themselves, single-threaded. */
bool urd_vrnic_threads = true;

/* ------------------------------------------------------------------ names */

static bool valid_name(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > URD_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(s[i] == '-' || s[i] == '_' || (s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')))
			return false;
	return s[0] != '-';
}

static int parse_ip_prefix(const char *s, uint32_t *ip, uint8_t *prefix)
{
	char buf[64];
	char *slash, *end;
	struct in_addr a;
	long p = 24;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash) {
		*slash = 0;
		errno = 0;
		p = strtol(slash + 1, &end, 10);
		if (errno || *end || end == slash + 1 || p < 1 || p > 32)
			return -EINVAL;
	}
	if (inet_pton(AF_INET, buf, &a) != 1)
		return -EINVAL;
	*ip = a.s_addr;
	*prefix = (uint8_t)p;
	return 0;
}

struct urd_vrnic *vrnic_find(struct urd_daemon *d, const char *name)
{
	for (int i = 0; i < URD_MAX_VRNICS; i++)
		if (d->vrnics[i] && !strcmp(d->vrnics[i]->name, name))
			return d->vrnics[i];
	return NULL;
}

/* ---------------------------------------------------------------- limits */

void vrnic_default_limits(struct urd_limits *l)
{
	l->max_ctx = URD_MAX_CTX;
	l->max_pd = 65536;
	l->max_mr = 65536;
	l->max_cq = 16384;
	l->max_qp = URD_MAX_QP_SLOTS;
	l->max_srq = 4096;
	l->max_mem_bytes = URD_MEMWIN_DEFAULT;
	l->max_qp_wr = URD_MAX_WR;
	l->max_cqe = URD_MAX_CQE;
	l->max_srq_wr = URD_MAX_WR;
}

/* The vRNIC's tmpfs holds what its tenants may make the host store: the
 * control part and the registered-memory quota (or a VM's RAM). */
static int mount_fs(struct urd_vrnic *vr, uint64_t bytes, unsigned int files)
{
	char opts[128];

	/* huge=within_size: the engine's view of a region is one aligned
	 * mapping, so 2 MiB pages spare it a TLB miss every 4 KiB of a copy.
	 * Kernels without THP for tmpfs refuse the option: mount without.
	 * nr_inodes: the root and our files, none to spare for planting. */
	snprintf(opts, sizeof(opts), "size=%llu,nr_inodes=%u,mode=0755,uid=0,gid=0,huge=within_size",
		 (unsigned long long)bytes, files + 1);
	if (mount("unirdma-vrnic", vr->dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts)) {
		*strrchr(opts, ',') = '\0';
		if (mount("unirdma-vrnic", vr->dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts))
			return -errno;
	}
	vr->own_mount = true;
	vr->fs_bytes = bytes;
	return 0;
}

/* A new memory quota: the file system follows.  Below what the tenant
 * already stores the kernel refuses; then it stays at what is stored (the
 * quota still stops new registrations), never above the old size. */
static void vrnic_resize_fs(struct urd_vrnic *vr, uint64_t bytes)
{
	char opts[64];

	for (int tries = 0; tries < 3; tries++) {
		struct statfs st;
		uint64_t used;

		snprintf(opts, sizeof(opts), "size=%llu", (unsigned long long)bytes);
		if (!mount(NULL, vr->dir, NULL, MS_REMOUNT | MS_NOSUID | MS_NODEV | MS_NOEXEC, opts)) {
			vr->fs_bytes = bytes;
			return;
		}
		if (errno != EINVAL || statfs(vr->dir, &st))
			break;
		used = (uint64_t)(st.f_blocks - st.f_bfree) * (uint64_t)st.f_bsize;
		used = (used + (2u << 20) - 1) & ~(uint64_t)((2u << 20) - 1);
		if (used <= bytes || used >= vr->fs_bytes)
			break;
		bytes = used;
	}
	log_warn("vrnic %s: its file system stays at %llu bytes (%s)", vr->name,
		 (unsigned long long)vr->fs_bytes, strerror(errno));
}

/* Validate and apply; the advertised device attributes follow the quotas so
 * that well-behaved programs size themselves within them. */
int vrnic_set_limits(struct urd_vrnic *vr, const struct urd_limits *l)
{
	struct urd_limits hard;
	struct urd_dev_attr *dev = &vr->hdr->dev;

	vrnic_default_limits(&hard);
	hard.max_mem_bytes = vr->memwin.size;
	if (!l->max_ctx || l->max_ctx > hard.max_ctx || !l->max_pd || l->max_pd > hard.max_pd ||
	    !l->max_mr || l->max_mr > hard.max_mr || !l->max_cq || l->max_cq > hard.max_cq ||
	    !l->max_qp || l->max_qp > hard.max_qp || l->max_srq > hard.max_srq ||
	    !l->max_mem_bytes || l->max_mem_bytes > hard.max_mem_bytes ||
	    !l->max_qp_wr || l->max_qp_wr > hard.max_qp_wr || !l->max_cqe || l->max_cqe > hard.max_cqe ||
	    !l->max_srq_wr || l->max_srq_wr > hard.max_srq_wr)
		return -EINVAL;
	if (vr->own_mount && !vr->vm && l->max_mem_bytes != vr->lim.max_mem_bytes)
		vrnic_resize_fs(vr, URD_REGION_CTRL_SIZE + l->max_mem_bytes);
	vr->lim = *l;
	dev->max_qp = l->max_qp;
	dev->max_cq = l->max_cq;
	dev->max_mr = l->max_mr;
	dev->max_pd = l->max_pd;
	dev->max_srq = l->max_srq;
	dev->max_qp_wr = l->max_qp_wr;
	dev->max_cqe = l->max_cqe;
	dev->max_srq_wr = l->max_srq_wr;
	/* max_mr_size stays the window: a registration over the memory quota is
	 * "not enough resources" (ENOMEM), not an invalid length */
	return 0;
}

void vrnic_set_grhless_av(struct urd_vrnic *vr, bool on)
{
	vr->grhless_av = on;
	if (on)
		__atomic_fetch_or(&vr->hdr->flags, URD_REGION_GRHLESS_AV, __ATOMIC_RELEASE);
	else
		__atomic_fetch_and(&vr->hdr->flags, ~(uint32_t)URD_REGION_GRHLESS_AV, __ATOMIC_RELEASE);
}

int vrnic_set_qos(struct urd_vrnic *vr, uint64_t rate_bytes, uint64_t burst_bytes,
		  uint64_t rate_ops, uint64_t burst_ops)
{
	struct urd_qos *q = &vr->qos;

	/* a burst smaller than one large message still works (it borrows);
	 * default bursts: 10 ms worth, at least 64 KiB / 16 ops */
	if (rate_bytes && !burst_bytes)
		burst_bytes = rate_bytes / 100 > 65536 ? rate_bytes / 100 : 65536;
	if (rate_ops && !burst_ops)
		burst_ops = rate_ops / 100 > 16 ? rate_ops / 100 : 16;
	q->rate_bytes = rate_bytes;
	q->burst_bytes = rate_bytes ? burst_bytes : 0;
	q->rate_ops = rate_ops;
	q->burst_ops = rate_ops ? burst_ops : 0;
	q->tok_bytes = (double)q->burst_bytes;
	q->tok_ops = (double)q->burst_ops;
	q->last_ns = 0;
	return 0;
}

/* ------------------------------------------------------------- the region */

/* The address as tenants read it: GID 0 ::ffff:A.B.C.D and the vIP. */
static void write_addr(struct urd_vrnic *vr)
{
	struct urd_port_attr *port = &vr->hdr->port;

	memset(port->gid, 0, 10);
	port->gid[10] = 0xff;
	port->gid[11] = 0xff;
	memcpy(&port->gid[12], &vr->vip, 4);
	port->vip = vr->vip;
}

static void init_header(struct urd_vrnic *vr, uint64_t file_size)
{
	struct urd_region_hdr *h = vr->hdr;
	struct urd_dev_attr *dev = &h->dev;
	struct urd_port_attr *port = &h->port;
	uint32_t ip = ntohl(vr->vip);

	memset(h, 0, sizeof(*h));
	h->abi_version = URD_ABI_VERSION;
	h->hdr_size = URD_HDR_SIZE;
	h->region_size = file_size;
	h->ctrl_size = URD_REGION_CTRL_SIZE;
	h->slots_off = URD_SLOTS_OFF;
	h->nslots = URD_MAX_CTX;
	h->slot_size = URD_SLOT_SIZE;
	h->db_off = URD_DB_OFF;
	h->arena_off = URD_ARENA_OFF;
	h->arena_size = URD_ARENA_SIZE;
	h->mem_off = URD_REGION_CTRL_SIZE;
	h->mem_size = file_size - URD_REGION_CTRL_SIZE;
	h->vrnic_id = vr->id;
	snprintf(h->name, sizeof(h->name), "%s", vr->name);
	snprintf(h->tenant, sizeof(h->tenant), "%s", vr->tenant);

	snprintf(dev->fw_ver, sizeof(dev->fw_ver), "unirdma-%u", URD_ABI_VERSION);
	/* node GUID: 0x02 (locally administered) + the vIP, like an EUI-64 from a MAC */
	dev->node_guid = 0x0200000000000000ull | ((uint64_t)vr->id << 32) | ip;  /* host order */
	dev->sys_image_guid = dev->node_guid;
	dev->max_mr_size = h->mem_size;
	dev->page_size_cap = URD_PAGE_SIZE;
	dev->vendor_id = 0xffffff;
	dev->vendor_part_id = 0;
	dev->hw_ver = 1;
	dev->max_qp = URD_MAX_QP_SLOTS;
	dev->max_qp_wr = URD_MAX_WR;
	dev->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_SHUTDOWN_PORT |
				IBV_DEVICE_PORT_ACTIVE_EVENT | IBV_DEVICE_SYS_IMAGE_GUID | IBV_DEVICE_N_NOTIFY_CQ |
				IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B;
	dev->max_sge = URD_MAX_SGE;
	dev->max_sge_rd = URD_MAX_SGE;
	dev->max_cq = 16384;
	dev->max_cqe = URD_MAX_CQE;
	dev->max_mr = 65536;
	dev->max_pd = 65536;
	dev->max_qp_rd_atom = 128;
	dev->max_res_rd_atom = 128 * URD_MAX_QP_SLOTS;
	dev->max_qp_init_rd_atom = 128;
	dev->atomic_cap = IBV_ATOMIC_HCA;
	dev->max_srq = 4096;
	dev->max_srq_wr = URD_MAX_WR;
	dev->max_srq_sge = URD_MAX_SGE;
	dev->max_ah = 65536;
	dev->max_inline_data = URD_MAX_INLINE;
	dev->max_pkeys = 1;
	dev->local_ca_ack_delay = 15;
	dev->phys_port_cnt = 1;

	port->state = IBV_PORT_ACTIVE;
	port->max_mtu = IBV_MTU_4096;
	port->active_mtu = engine_port_mtu(vr->d);      /* the underlay's, as rxe */
	port->gid_tbl_len = URD_GID_TBL_LEN;
	port->port_cap_flags = 0x04010000; /* CM supported | IP based GIDs */
	port->max_msg_sz = URD_MAX_MSG;
	port->pkey_tbl_len = 1;
	port->active_width = 2;             /* 4x */
	port->active_speed = 32;            /* EDR-ish: 25 Gb/s per lane */
	port->phys_state = 5;               /* LinkUp */
	port->link_layer = IBV_LINK_LAYER_ETHERNET;
	write_addr(vr);
	if (vr->vm)
		vm_init_header(vr);     /* VM hook: no window, URD_REGION_VM (vm.c) */

	h->daemon_epoch = vr->d->epoch;
	urd_store_release(&h->daemon_state, URD_STATE_RUNNING);
	/* magic last: a reader that sees it sees a complete header */
	urd_store_release(&h->magic, URD_MAGIC);
}

/* The header must be in the file, not only in our mapping: a page the
 * guard replaced (guard.c) or a write lost to a full file system would
 * hand tenants an all-zero header that claims nothing. */
static int verify_header(struct urd_vrnic *vr)
{
	struct urd_region_hdr h;

	if (guard_faults(vr->map) ||
	    pread(vr->fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    h.magic != URD_MAGIC || h.region_size != vr->hdr->region_size ||
	    h.vrnic_id != vr->id || h.daemon_epoch != vr->d->epoch || strncmp(h.name, vr->name, sizeof(h.name))) {
		log_err("vrnic %s: its header did not reach the region file; not created", vr->name);
		return -EIO;
	}
	return 0;
}

int vrnic_create(struct urd_daemon *d, const char *name, const char *tenant,
		 const char *ip_prefix, struct urd_vrnic **out)
{
	return vrnic_create_ex(d, name, tenant, ip_prefix, NULL, out);
}

/* Whether another vRNIC than vr holds ip where vr would clash with it: in
 * vr's tenant, or anywhere on this host once the wire is on (there an
 * address is a GID: one vRNIC per address whatever its tenant). */
static bool addr_taken(const struct urd_daemon *d, const struct urd_vrnic *vr, uint32_t ip)
{
	for (int i = 0; i < URD_MAX_VRNICS; i++) {
		const struct urd_vrnic *o = d->vrnics[i];

		if (o && o != vr && o->vip == ip && (!strcmp(o->tenant, vr->tenant) || engine_wire_on(d)))
			return true;
	}
	return false;
}

int vrnic_check_addr(const struct urd_vrnic *vr, const char *ip_prefix, uint32_t *ip, uint8_t *prefix)
{
	int ret = parse_ip_prefix(ip_prefix, ip, prefix);

	if (ret)
		return ret;
	if (!strchr(ip_prefix, '/'))
		*prefix = vr->prefix;   /* an address alone keeps the prefix */
	if (vr->nctx)
		return -EBUSY;
	if (addr_taken(vr->d, vr, *ip))
		return -EADDRINUSE;
	return 0;
}

void vrnic_set_addr(struct urd_vrnic *vr, uint32_t ip, uint8_t prefix)
{
	if (ip != vr->vip) {
		underlay_addr_del(vr);
		vr->vip = ip;
		write_addr(vr);
		underlay_addr_add(vr);
		directory_vrnic_added(vr->d, vr);       /* publishes the new GID, withdraws the old */
	}
	vr->prefix = prefix;
	log_info("vrnic %s: address now %s/%u", vr->name, inet_ntoa((struct in_addr){ vr->vip }), vr->prefix);
}

int vrnic_create_ex(struct urd_daemon *d, const char *name, const char *tenant,
		    const char *ip_prefix, const struct urd_vm_cfg *vm, struct urd_vrnic **out)
{
	struct urd_vrnic *vr;
	char path[600];
	/* VM hook: a VM's region is only the control part (the BAR) */
	uint64_t size = URD_REGION_CTRL_SIZE + (vm ? 0 : URD_MEMWIN_DEFAULT);
	unsigned long long rnd;
	int slot = -1, ret;

	if (!valid_name(name) || !valid_name(tenant))
		return -EINVAL;
	if (vrnic_find(d, name))
		return -EEXIST;
	for (int i = 0; i < URD_MAX_VRNICS; i++)
		if (!d->vrnics[i]) {
			slot = i;
			break;
		}
	if (slot < 0)
		return -ENOSPC;
	vr = calloc(1, sizeof(*vr));
	if (!vr)
		return -ENOMEM;
	vr->d = d;
	vr->fd = -1;
	vr->id = (uint32_t)slot + 1;
	snprintf(vr->name, sizeof(vr->name), "%s", name);
	snprintf(vr->tenant, sizeof(vr->tenant), "%s", tenant);
	ret = parse_ip_prefix(ip_prefix, &vr->vip, &vr->prefix);
	if (ret)
		goto err_free;
	if (addr_taken(d, vr, vr->vip)) {
		ret = -EADDRINUSE;
		goto err_free;
	}
	/* Every incarnation gets a place of its own that nobody can guess or
	 * hold on to: a tenant that kept the old directory (a bind mount, an
	 * open descriptor) keeps the dead incarnation, never the new one. */
	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd)) {
		ret = -EAGAIN;
		goto err_free;
	}
	snprintf(vr->dir, sizeof(vr->dir), "%s/vrnics/%s.%016llx", d->state_dir, name,
		 (unsigned long long)rnd);
	if (mkdir(vr->dir, 0700)) {
		ret = -errno;
		log_err("vrnic %s: mkdir %s: %s", name, vr->dir, strerror(errno));
		goto err_free;
	}
	/* In-process harnesses (fuzzers) run unprivileged and own their files. */
	if (urd_vrnic_threads) {
		/* region, and for a VM guest-ram */
		ret = mount_fs(vr, URD_REGION_CTRL_SIZE + (vm ? vm->ram_bytes : URD_MEMWIN_DEFAULT), vm ? 2 : 1);
		if (ret) {
			log_err("vrnic %s: cannot mount its tmpfs on %s: %s", name, vr->dir, strerror(-ret));
			goto err_dir;
		}
	}
	snprintf(path, sizeof(path), "%s/region", vr->dir);
	vr->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0660);
	if (vr->fd < 0) {
		ret = -errno;
		goto err_dir;
	}
	{
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
				    .l_start = URD_DAEMON_LOCK_BYTE, .l_len = 1 };

		if (fcntl(vr->fd, F_OFD_SETLK, &fl)) {
			ret = -errno;
			goto err_file;
		}
	}
	if (ftruncate(vr->fd, (off_t)size)) {
		ret = -errno;
		goto err_file;
	}
	/* The pages the daemon writes without asking (header, mailboxes,
	 * doorbells) exist before any tenant can fill the file system; rings
	 * get theirs when allocated (arena.fd). */
	if (fallocate(vr->fd, 0, 0, URD_DB_OFF + URD_DB_SIZE)) {
		ret = -errno;
		log_err("vrnic %s: cannot allocate its control pages: %s", name, strerror(errno));
		goto err_file;
	}
	vr->map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, vr->fd, 0);
	if (vr->map == MAP_FAILED) {
		ret = -errno;
		goto err_file;
	}
	vr->map_size = size;
	guard_add(vr->map, size);
	vr->hdr = (struct urd_region_hdr *)vr->map;
	vr->db = (struct urd_doorbells *)(vr->map + URD_DB_OFF);
	if (vm) {               /* VM hook: guest RAM (vm.c) */
		ret = vm_prepare(vr, vm);
		if (ret)
			goto err_map;
	}
	ret = alloc_init(&vr->arena, URD_ARENA_OFF, URD_ARENA_SIZE);
	if (ret)
		goto err_map;
	vr->arena.fd = vr->fd;
	/* a VM has no window (MEM_ALLOC is refused); the guest RAM size stands
	 * in so that the registered-bytes quota ranges over it */
	ret = alloc_init(&vr->memwin, 0, vr->vm ? vm_ram_bytes(vr) : size - URD_REGION_CTRL_SIZE);
	if (ret)
		goto err_arena;
	init_header(vr, size);
	ret = verify_header(vr);
	if (ret)
		goto err_mem;
	vrnic_default_limits(&vr->lim);
	vr->lim.max_mem_bytes = vr->memwin.size;
	urd_vrnic_slot_set(d, (uint32_t)slot, vr);
	ret = urd_vrnic_threads ? pthread_create(&vr->ctrl_thread, NULL, ctrl_thread_main, vr) : 0;
	if (ret) {
		urd_vrnic_slot_set(d, (uint32_t)slot, NULL);
		ret = -ret;
		goto err_mem;
	}
	underlay_addr_add(vr);
	log_info("vrnic %s created: tenant %s, ip %s/%u, region %s", name, tenant,
		 inet_ntoa((struct in_addr){ vr->vip }), vr->prefix, path);
	directory_vrnic_added(d, vr);   /* publish its GID in the cluster */
	*out = vr;
	return 0;

err_mem:
	alloc_fini(&vr->memwin);
err_arena:
	alloc_fini(&vr->arena);
err_map:
	vm_release(vr);
	guard_remove(vr->map);
	munmap(vr->map, size);
err_file:
	close(vr->fd);
	unlink(path);
err_dir:
	if (vr->own_mount)
		umount2(vr->dir, MNT_DETACH);
	rmdir(vr->dir);
err_free:
	free(vr);
	return ret;
}

/* Big lock held: no more contexts, tenants see final_state, every waiter on
 * the region (mailboxes, event threads, the control thread) wakes up. */
static void vrnic_stop_serving(struct urd_vrnic *vr, uint32_t final_state)
{
	vr->deleting = true;
	for (uint32_t i = 0; i < URD_MAX_CTX; i++)
		if (vr->ctx[i])
			ctx_destroy(vr->ctx[i]);
	urd_store_release(&vr->hdr->daemon_state, final_state);
	for (uint32_t i = 0; i < URD_MAX_CTX; i++) {
		struct urd_slot_hdr *s = (struct urd_slot_hdr *)(vr->map + urd_slot_off(i));

		urd_fetch_add(&s->event_seq, 1);
		urd_futex_wake_all(&s->event_seq);
		urd_futex_wake_all(&s->resp_seq);
	}
	vr->stop = true;
	urd_fetch_add(&vr->hdr->ctrl_bell, 1);
	urd_futex_wake_all(&vr->hdr->ctrl_bell);
}

void vrnic_fail(struct urd_vrnic *vr, const char *why)
{
	if (vr->failed)
		return;
	vr->failed = true;
	log_err("vrnic %s (tenant %s) FAILED: %s; it is no longer served (its tenants get a fatal "
		"device error, its peers' QPs go to the error state); delete it to free the name",
		vr->name, vr->tenant, why);
	/* DEAD, not DELETED: tenants raise IBV_EVENT_DEVICE_FATAL.  The
	 * control thread ends by itself; vrnic_teardown joins it. */
	vrnic_stop_serving(vr, URD_STATE_DEAD);
}

/* ------------------------------------------------------- fault monitor */

static pthread_t monitor_thread;
static int monitor_stop, monitor_started;

static void *monitor_main(void *arg)
{
	struct urd_daemon *d = arg;

	pthread_setname_np(pthread_self(), "urd-guard");
	while (!__atomic_load_n(&monitor_stop, __ATOMIC_ACQUIRE)) {
		/* the handler only counts and kicks; the lock is taken here */
		if (!guard_wait(-1) || __atomic_load_n(&monitor_stop, __ATOMIC_ACQUIRE))
			continue;
		pthread_mutex_lock(&d->lock);
		for (int i = 0; i < URD_MAX_VRNICS; i++) {
			struct urd_vrnic *vr = d->vrnics[i];

			if (!vr || vr->failed)
				continue;
			if (guard_faults(vr->map))
				vrnic_fail(vr, "the daemon faulted on its region (the tenant truncated it, "
					   "or punched holes in it and filled its file system)");
			else if (vr->vm && vm_guard_faults(vr))
				vrnic_fail(vr, "the daemon faulted on its guest RAM (truncated, or holes "
					   "punched and the file system filled)");
		}
		pthread_mutex_unlock(&d->lock);
	}
	return NULL;
}

int vrnic_monitor_start(struct urd_daemon *d)
{
	int ret = pthread_create(&monitor_thread, NULL, monitor_main, d);

	if (ret)
		return -ret;
	monitor_started = 1;
	return 0;
}

void vrnic_monitor_stop(void)
{
	if (!monitor_started)
		return;
	__atomic_store_n(&monitor_stop, 1, __ATOMIC_RELEASE);
	guard_kick();
	pthread_join(monitor_thread, NULL);
	monitor_started = 0;
}

/* Called with the big lock held; drops and retakes it to join the control thread. */
static void vrnic_teardown(struct urd_daemon *d, struct urd_vrnic *vr, uint32_t final_state)
{
	char path[600];

	vrnic_stop_serving(vr, final_state);
	underlay_addr_del(vr);
	for (int i = 0; i < URD_MAX_VRNICS; i++)
		if (d->vrnics[i] == vr)
			urd_vrnic_slot_set(d, (uint32_t)i, NULL);
	directory_vrnic_removed(d, vr);
	if (urd_vrnic_threads) {
		pthread_mutex_unlock(&d->lock);
		pthread_join(vr->ctrl_thread, NULL);
		pthread_mutex_lock(&d->lock);
	}
	guard_remove(vr->map);
	munmap(vr->map, vr->map_size);
	close(vr->fd);
	vm_release(vr);         /* VM hook: guest RAM mapping and file */
	/* Tenants keep their mappings; the names go.  The tmpfs is detached:
	 * whatever still holds it (a mapping, a bind mount, a file a tenant
	 * planted) holds this dead incarnation only, and the directory never
	 * comes back (a new vRNIC of this name gets another). */
	snprintf(path, sizeof(path), "%s/region", vr->dir);
	unlink(path);
	if (vr->own_mount && umount2(vr->dir, MNT_DETACH))
		log_warn("vrnic %s: unmounting %s: %s", vr->name, vr->dir, strerror(errno));
	if (rmdir(vr->dir) && errno != ENOENT)
		log_warn("vrnic %s: %s left behind: %s", vr->name, vr->dir, strerror(errno));
	alloc_fini(&vr->arena);
	alloc_fini(&vr->memwin);
	log_info("vrnic %s %s", vr->name, final_state == URD_STATE_DELETED ? "deleted" : "stopped");
	free(vr);
}

int vrnic_delete(struct urd_daemon *d, const char *name)
{
	struct urd_vrnic *vr = vrnic_find(d, name);

	if (!vr)
		return -ENOENT;
	vrnic_teardown(d, vr, URD_STATE_DELETED);
	return 0;
}

/* Daemon shutdown: tenants see DEAD (IBV_EVENT_DEVICE_FATAL).  Region files are
 * removed too: a restarted daemon starts from a clean state directory. */
void vrnic_destroy_all(struct urd_daemon *d)
{
	for (int i = 0; i < URD_MAX_VRNICS; i++)
		if (d->vrnics[i])
			vrnic_teardown(d, d->vrnics[i], URD_STATE_DEAD);
}
