/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* device.c - vRNIC discovery, the device list, opening and closing a context,
 * and the device/port/GID/P_Key queries.
 *
 * A vRNIC appears as $UNIRDMA_DEVDIR/<name>/region (default directory
 * /run/unirdma/dev), a file the daemon created; one device per region.  The
 * device list only reads the header page.  ibv_open_device maps the control
 * part, claims a mailbox slot with an OFD lock (the daemon's proof that the
 * context is alive: the kernel drops the lock when the process dies) and says
 * hello with URD_OP_OPEN_CTX.
 *
 * In a VM guest a vRNIC is an ivshmem PCI device whose BAR is the region;
 * lib/vm.c finds those and claims slots there by compare-and-swap instead.
 * Both kinds are listed when both exist.
 */
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fwd.h"
#include "priv.h"

#undef ibv_query_port

static const char *const DEFAULT_DEVDIR = "/run/unirdma/dev";

__attribute__((constructor)) static void urd_lib_init(void)
{
	urd_debug_enabled = getenv("UNIRDMA_DEBUG") != NULL;
}

/* ------------------------------------------------------------ discovery */

static bool hdr_usable(const struct urd_region_hdr *h, const char *path)
{
	if (h->magic != URD_MAGIC) {
		urd_dbg("%s: not a vRNIC region (bad magic)", path);
		return false;
	}
	if (h->abi_version != URD_ABI_VERSION) {
		urd_dbg("%s: region ABI version %u, this library speaks %u; skipped",
			path, h->abi_version, URD_ABI_VERSION);
		return false;
	}
	if (h->daemon_state == URD_STATE_DEAD ||
	    h->daemon_state == URD_STATE_DELETED) {
		urd_dbg("%s: daemon state %u; skipped", path, h->daemon_state);
		return false;
	}
	return true;
}

/* Read the header page of a region file.  0 or -errno. */
static int read_hdr(const char *path, struct urd_region_hdr *out)
{
	struct stat st;
	void *p;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    st.st_size < (off_t)URD_HDR_SIZE) {
		close(fd);
		return -ENODEV;
	}
	p = mmap(NULL, URD_HDR_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -errno;
	memcpy(out, p, sizeof(*out));
	munmap(p, URD_HDR_SIZE);
	return 0;
}

/* path: a region file, or (vm) a guest's ivshmem BAR (lib/vm.c). */
static struct urd_device *probe(const char *path, const char *entry, int index, bool vm)
{
	struct urd_region_hdr h;
	struct urd_device *dev;
	char name[IBV_SYSFS_NAME_MAX];

	dev = urd_calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	dev->vm = vm;
	if (snprintf(dev->region_path, sizeof(dev->region_path), "%s", path) >=
	    (int)sizeof(dev->region_path))
		goto fail;
	if (read_hdr(dev->region_path, &h)) {
		urd_dbg("%s: cannot read the region header", dev->region_path);
		goto fail;
	}
	if (!hdr_usable(&h, dev->region_path))
		goto fail;

	memcpy(name, h.name, sizeof(name) - 1);
	name[sizeof(name) - 1] = 0;
	if (!name[0])
		snprintf(name, sizeof(name), "%s", entry);

	struct ibv_device *d = &dev->vdev.device;

	d->node_type = IBV_NODE_CA;
	d->transport_type = IBV_TRANSPORT_IB;
	snprintf(d->name, sizeof(d->name), "%s", name);
	snprintf(d->dev_name, sizeof(d->dev_name), "uverbs%d", index);
	snprintf(d->dev_path, sizeof(d->dev_path),
		 "/sys/class/infiniband_verbs/uverbs%d", index);
	snprintf(d->ibdev_path, sizeof(d->ibdev_path),
		 "/sys/class/infiniband/%s", name);
	dev->vdev.ops = NULL;           /* never a provider's device */
	dev->vdev.refcount = 1;
	dev->refcnt = 1;
	dev->index = index;
	dev->node_guid = h.dev.node_guid;
	return dev;
fail:
	urd_free(dev);
	return NULL;
}

static int skip_dots(const struct dirent *e)
{
	return strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
}

struct ibv_device **ibv_get_device_list(int *num_devices)
{
	const char *devdir = getenv("UNIRDMA_DEVDIR");
	struct dirent **names = NULL;
	struct ibv_device **list;
	char **bars = NULL, path[PATH_MAX];
	int n, count = 0, nbars;

	if (!devdir || !*devdir)
		devdir = DEFAULT_DEVDIR;
	if (num_devices)
		*num_devices = 0;

	n = scandir(devdir, &names, skip_dots, alphasort);
	if (n < 0) {
		urd_dbg("%s: %s; no devices", devdir, strerror(errno));
		n = 0;
	}
	nbars = urd_vm_find_bars(&bars);        /* VM hook: ivshmem BARs in a guest */
	/* the list itself comes from malloc: programs free() it (qperf), as
	 * rdma-core's allows; nothing of ours writes it after we return it */
	list = calloc((size_t)n + (size_t)nbars + 1, sizeof(*list));
	if (!list) {
		for (int i = 0; i < n; i++)
			free(names[i]);
		free(names);
		for (int i = 0; i < nbars; i++)
			free(bars[i]);
		free(bars);
		errno = ENOMEM;
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		struct urd_device *dev = NULL;

		if (snprintf(path, sizeof(path), "%s/%s/region", devdir, names[i]->d_name) <
		    (int)sizeof(path))
			dev = probe(path, names[i]->d_name, count, false);
		if (dev)
			list[count++] = &dev->vdev.device;
		free(names[i]);
	}
	free(names);
	for (int i = 0; i < nbars; i++) {
		struct urd_device *dev = probe(bars[i], "ivshmem", count, true);

		if (dev)
			list[count++] = &dev->vdev.device;
		free(bars[i]);
	}
	free(bars);
	if (num_devices)
		*num_devices = count;
	return list;
}

void urd_device_put(struct urd_device *dev)
{
	if (__atomic_sub_fetch(&dev->refcnt, 1, __ATOMIC_ACQ_REL) == 0)
		urd_free(dev);
}

/* Devices stay alive while a context uses them (programs read
 * ctx->device->name after freeing the list). */
void ibv_free_device_list(struct ibv_device **list)
{
	if (!list)
		return;
	for (struct ibv_device **d = list; *d; d++)
		urd_device_put(to_udev(*d));
	free(list);
}

const char *ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

/* rdma-core returns the GUID in network byte order. */
__be64 ibv_get_device_guid(struct ibv_device *device)
{
	return htobe64(to_udev(device)->node_guid);
}

int ibv_get_device_index(struct ibv_device *device)
{
	return to_udev(device)->index;
}

/* ---------------------------------------------------- the ops table */

static void *compat_unsupported(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

static int close_xrcd_unsupported(struct ibv_xrcd *xrcd URD_UNUSED)
{
	return EOPNOTSUPP;
}

static int compat_query_port(struct ibv_context *c, uint8_t port,
			     struct _compat_ibv_port_attr *attr);

/* Binaries compiled against any verbs.h jump through these without a NULL
 * check (post_send, post_recv, post_srq_recv, poll_cq, req_notify_cq) or
 * after one; every slot is set. */
const struct ibv_context_ops urd_ctx_ops = {
	._compat_query_device = ibv_query_device,
	._compat_query_port = compat_query_port,
	._compat_alloc_pd = compat_unsupported,
	._compat_dealloc_pd = compat_unsupported,
	._compat_reg_mr = compat_unsupported,
	._compat_rereg_mr = compat_unsupported,
	._compat_dereg_mr = compat_unsupported,
	.alloc_mw = urd_alloc_mw,
	.bind_mw = urd_bind_mw,
	.dealloc_mw = urd_dealloc_mw,
	._compat_create_cq = compat_unsupported,
	.poll_cq = urd_poll_cq,
	.req_notify_cq = urd_req_notify_cq,
	._compat_cq_event = compat_unsupported,
	._compat_resize_cq = compat_unsupported,
	._compat_destroy_cq = compat_unsupported,
	._compat_create_srq = compat_unsupported,
	._compat_modify_srq = compat_unsupported,
	._compat_query_srq = compat_unsupported,
	._compat_destroy_srq = compat_unsupported,
	.post_srq_recv = urd_post_srq_recv,
	._compat_create_qp = compat_unsupported,
	._compat_query_qp = compat_unsupported,
	._compat_modify_qp = compat_unsupported,
	._compat_destroy_qp = compat_unsupported,
	.post_send = urd_post_send,
	.post_recv = urd_post_recv,
	._compat_create_ah = compat_unsupported,
	._compat_destroy_ah = compat_unsupported,
	._compat_attach_mcast = compat_unsupported,
	._compat_detach_mcast = compat_unsupported,
	._compat_async_event = compat_unsupported,
};

/* ------------------------------------------------------ open / close */

/* The first free slot: an F_OFD_SETLK write lock on byte i of the region,
 * taken through lock_fd, an fd that is never mmapped (a mapping would keep
 * the open file description, and with it the lock, alive).  -EBUSY when all
 * slots are taken. */
static int claim_slot(int lock_fd, uint32_t nslots, uint32_t *slot)
{
	for (uint32_t i = 0; i < nslots; i++) {
		struct flock fl = {
			.l_type = F_WRLCK,
			.l_whence = SEEK_SET,
			.l_start = i,
			.l_len = 1,
		};

		if (fcntl(lock_fd, F_OFD_SETLK, &fl) == 0) {
			*slot = i;
			return 0;
		}
		if (errno != EAGAIN && errno != EACCES)
			return -errno;
	}
	return -EBUSY;
}

/* Check the layout the header describes before any pointer is built from it. */
static int check_layout(const struct urd_region_hdr *h, off_t file_size)
{
	uint64_t cs = h->ctrl_size;

	if (h->magic != URD_MAGIC || h->abi_version != URD_ABI_VERSION)
		return -ENODEV;
	if (cs < URD_ARENA_OFF || cs > (uint64_t)file_size ||
	    cs % URD_PAGE_SIZE || cs > (1ull << 40))
		return -EPROTO;
	if (h->nslots == 0 || h->nslots > URD_MAX_CTX ||
	    urd_slot_off(h->nslots - 1) + URD_SLOT_SIZE > cs)
		return -EPROTO;
	if (h->db_off % URD_CACHELINE || h->db_off > cs ||
	    sizeof(struct urd_doorbells) > cs - h->db_off)
		return -EPROTO;
	return 0;
}

static void fill_comm(char comm[16])
{
	memset(comm, 0, 16);
	if (prctl(PR_GET_NAME, comm, 0, 0, 0))
		comm[0] = 0;
	comm[15] = 0;
}

static void ctx_free(struct urd_context *ctx)
{
	pthread_mutex_destroy(&ctx->ctrl_lock);
	pthread_mutex_destroy(&ctx->ev_lock);
	pthread_mutex_destroy(&ctx->vctx.context.mutex);
	urd_free(ctx);
}

static int open_ctx(struct urd_device *dev, struct urd_context **out)
{
	struct urd_open_ctx_req req = { 0 };
	struct urd_open_ctx_resp resp;
	struct urd_region_hdr h;
	struct urd_context *ctx;
	struct stat st;
	int fd, ret;

	fd = open(dev->region_path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ENODEV : -errno;
	if (fstat(fd, &st) || st.st_size < (off_t)URD_HDR_SIZE ||
	    (dev->vm ? urd_vm_read_hdr(fd, &h) :       /* VM hook: a BAR is mapped, not read */
	     pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))) {
		close(fd);
		return -ENODEV;
	}
	ret = check_layout(&h, st.st_size);
	if (ret) {
		urd_dbg("%s: unusable region layout", dev->region_path);
		close(fd);
		return ret;
	}
	if (h.daemon_state == URD_STATE_DEAD || h.daemon_state == URD_STATE_DELETED) {
		close(fd);
		return -ENODEV;
	}

	ctx = urd_calloc(1, sizeof(*ctx));
	if (!ctx) {
		close(fd);
		return -ENOMEM;
	}
	ctx->dev = dev;
	ctx->lock_fd = -1;
	ctx->ctrl_size = h.ctrl_size;
	ctx->vm = h.flags & URD_REGION_VM;
	pthread_mutex_init(&ctx->ctrl_lock, NULL);
	pthread_mutex_init(&ctx->ev_lock, NULL);
	pthread_mutex_init(&ctx->vctx.context.mutex, NULL);
	ctx->async_q.rfd = ctx->async_q.wfd = -1;

	ctx->region = mmap(NULL, h.ctrl_size, PROT_READ | PROT_WRITE, MAP_SHARED,
			   fd, 0);
	if (ctx->region == MAP_FAILED) {
		ret = -errno;
		ctx->region = NULL;
		goto err_free;
	}
	ctx->hdr = (struct urd_region_hdr *)ctx->region;
	ctx->db = (struct urd_doorbells *)(ctx->region + h.db_off);

	ctx->lock_fd = open(dev->region_path, O_RDWR | O_CLOEXEC);
	if (ctx->lock_fd < 0) {
		ret = -errno;
		goto err_unmap;
	}
	/* VM hook: no lock reaches the host; claim by compare-and-swap (vm.c) */
	ret = ctx->vm ? urd_vm_claim_slot(ctx, h.nslots, &ctx->slot_idx)
		      : claim_slot(ctx->lock_fd, h.nslots, &ctx->slot_idx);
	if (ret) {
		urd_dbg("%s: no free context slot (%d in use)", dev->region_path,
			h.nslots);
		goto err_lock;
	}
	ret = urd_evq_init(&ctx->async_q);
	if (ret)
		goto err_lock;

	for (int tries = 0;; tries++) {
		ctx->slot = (struct urd_slot_hdr *)(ctx->region + urd_slot_off(ctx->slot_idx));
		ctx->req_area = (uint8_t *)ctx->slot + URD_SLOT_REQ_OFF;
		ctx->resp_area = (uint8_t *)ctx->slot + URD_SLOT_RESP_OFF;
		/* Continue from whatever sequence the slot's previous owner left, so a
		 * stale req_seq can never be mistaken for our first request. */
		ctx->seq = urd_load_acquire(&ctx->slot->req_seq);
		ctx->async_cons = urd_load_acquire(&ctx->slot->async_prod);

		req.pid = (uint32_t)getpid();
		fill_comm(req.comm);
		ret = urd_ctrl(ctx, URD_OP_OPEN_CTX, &req, sizeof(req), &resp,
			       sizeof(resp), sizeof(resp));
		if (ret != -EBUSY || ctx->vm || tries >= 20)
			break;
		/* The daemon still holds the context of this slot's previous
		 * owner, who died a moment ago; it releases it once it sees the
		 * slot's lock free.  Let go of the slot, give it the time of a
		 * liveness round, and claim again (maybe another slot). */
		struct flock fl = { .l_type = F_UNLCK, .l_whence = SEEK_SET,
				    .l_start = ctx->slot_idx, .l_len = 1 };
		struct timespec ts = { 0, 150 * 1000 * 1000 };

		urd_dbg("%s: slot %u still holds a dead context; trying again",
			dev->region_path, ctx->slot_idx);
		fcntl(ctx->lock_fd, F_OFD_SETLK, &fl);
		nanosleep(&ts, NULL);
		ret = claim_slot(ctx->lock_fd, h.nslots, &ctx->slot_idx);
		if (ret)
			break;
	}
	if (ret) {
		urd_dbg("%s: OPEN_CTX failed: %s", dev->region_path, strerror(-ret));
		goto err_evq;
	}
	ctx->ctx_id = resp.ctx_id;
	/* Anything the daemon queued for a previous owner is not ours. */
	ctx->async_cons = urd_load_acquire(&ctx->slot->async_prod);

	ret = urd_mem_attach(ctx, fd);
	if (ret)
		goto err_close_ctx;
	close(fd);
	fd = -1;

	struct ibv_context *c = &ctx->vctx.context;

	c->device = &dev->vdev.device;
	c->ops = urd_ctx_ops;
	urd_fwd_install(ctx);         /* UNIRDMA_DATAPATH=forward: a benchmark baseline (bench/) */
	c->cmd_fd = ctx->lock_fd;
	c->async_fd = ctx->async_q.rfd;
	c->num_comp_vectors = 1;
	c->abi_compat = __VERBS_ABI_IS_EXTENDED;
	ctx->vctx.sz = sizeof(ctx->vctx);
	ctx->vctx.query_port = urd_query_port_ex;
	ctx->vctx.query_device_ex = urd_query_device_ex;
	ctx->vctx.create_cq_ex = urd_create_cq_ex;
	ctx->vctx.create_qp_ex = urd_create_qp_ex;
	ctx->vctx.get_srq_num = urd_get_srq_num;
	ctx->vctx.close_xrcd = close_xrcd_unsupported;

	ret = urd_events_start(ctx);
	if (ret)
		goto err_mem;
	urd_ctx_register(ctx);
	__atomic_add_fetch(&dev->refcnt, 1, __ATOMIC_ACQ_REL);
	*out = ctx;
	return 0;

err_mem:
	urd_mem_detach(ctx);
err_close_ctx:
	urd_ctrl_handle(ctx, URD_OP_CLOSE_CTX, 0);
err_evq:
	urd_evq_fini(&ctx->async_q);
err_lock:
	urd_vm_release_slot(ctx);       /* no-op unless a VM slot was claimed */
	close(ctx->lock_fd);
err_unmap:
	munmap(ctx->region, ctx->ctrl_size);
err_free:
	if (fd >= 0)
		close(fd);
	ctx_free(ctx);
	return ret;
}

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct urd_context *ctx;
	int ret;

	if (!device) {
		errno = EINVAL;
		return NULL;
	}
	ret = open_ctx(to_udev(device), &ctx);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	return &ctx->vctx.context;
}

/* Objects the application did not destroy die with the context at the
 * daemon (CLOSE_CTX); their library memory is not tracked here, as with
 * rdma-core.  Registered pages are moved back to private memory first. */
int ibv_close_device(struct ibv_context *context)
{
	struct urd_context *ctx = to_uctx(context);

	urd_ctx_unregister(ctx);
	urd_events_stop(ctx);
	urd_mem_detach(ctx);
	if (!urd_ctx_dead(ctx))
		urd_ctrl_handle(ctx, URD_OP_CLOSE_CTX, 0);
	urd_vm_release_slot(ctx);       /* VM: give the slot back (no-op otherwise) */
	urd_evq_fini(&ctx->async_q);
	if (ctx->lock_fd >= 0)
		close(ctx->lock_fd);
	munmap(ctx->region, ctx->ctrl_size);
	urd_device_put(ctx->dev);
	ctx_free(ctx);
	return 0;
}

struct ibv_context *ibv_import_device(int cmd_fd URD_UNUSED)
{
	errno = EOPNOTSUPP;
	return NULL;
}

/* ----------------------------------------------------------- queries */

static int clamp_int(uint32_t v)
{
	return v > INT32_MAX ? INT32_MAX : (int)v;
}

int ibv_query_device(struct ibv_context *context,
		     struct ibv_device_attr *attr)
{
	struct urd_context *ctx = to_uctx(context);
	struct urd_dev_attr d;

	memcpy(&d, &ctx->hdr->dev, sizeof(d));
	memset(attr, 0, sizeof(*attr));
	memcpy(attr->fw_ver, d.fw_ver, sizeof(attr->fw_ver) - 1);
	attr->node_guid = htobe64(d.node_guid);
	attr->sys_image_guid = htobe64(d.sys_image_guid);
	attr->max_mr_size = d.max_mr_size;
	attr->page_size_cap = d.page_size_cap;
	attr->vendor_id = d.vendor_id;
	attr->vendor_part_id = d.vendor_part_id;
	attr->hw_ver = d.hw_ver;
	attr->max_qp = clamp_int(d.max_qp);
	attr->max_qp_wr = clamp_int(d.max_qp_wr);
	attr->device_cap_flags = d.device_cap_flags;
	attr->max_sge = clamp_int(d.max_sge);
	attr->max_sge_rd = clamp_int(d.max_sge_rd);
	attr->max_cq = clamp_int(d.max_cq);
	attr->max_cqe = clamp_int(d.max_cqe);
	attr->max_mr = clamp_int(d.max_mr);
	attr->max_pd = clamp_int(d.max_pd);
	attr->max_qp_rd_atom = clamp_int(d.max_qp_rd_atom);
	attr->max_res_rd_atom = clamp_int(d.max_res_rd_atom);
	attr->max_qp_init_rd_atom = clamp_int(d.max_qp_init_rd_atom);
	attr->atomic_cap = (enum ibv_atomic_cap)d.atomic_cap;
	attr->max_srq = clamp_int(d.max_srq);
	attr->max_srq_wr = clamp_int(d.max_srq_wr);
	attr->max_srq_sge = clamp_int(d.max_srq_sge);
	attr->max_ah = clamp_int(d.max_ah);
	attr->max_mw = URD_MAX_MW;
	attr->max_mcast_grp = URD_MAX_MCAST_ATTACH;
	attr->max_mcast_qp_attach = URD_MAX_MCAST_QP;
	attr->max_total_mcast_qp_attach = URD_MAX_MCAST_ATTACH;
	attr->max_pkeys = d.max_pkeys;
	attr->local_ca_ack_delay = d.local_ca_ack_delay;
	attr->phys_port_cnt = d.phys_port_cnt;
	return 0;
}

/* Extended query: honour attr_size, the size of the caller's struct (older
 * binaries pass a smaller one, newer ones a larger one). */
int urd_query_device_ex(struct ibv_context *c,
			const struct ibv_query_device_ex_input *input,
			struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex full;

	if (input && input->comp_mask)
		return EINVAL;
	if (attr_size < sizeof(attr->orig_attr))
		return EINVAL;
	memset(&full, 0, sizeof(full));
	ibv_query_device(c, &full.orig_attr);
	full.device_cap_flags_ex = full.orig_attr.device_cap_flags;
	full.phys_port_cnt_ex = full.orig_attr.phys_port_cnt;
	if (attr_size > sizeof(full)) {
		memset((char *)attr + sizeof(full), 0, attr_size - sizeof(full));
		attr_size = sizeof(full);
	}
	memcpy(attr, &full, attr_size);
	return 0;
}

static void fill_port(struct urd_context *ctx, struct ibv_port_attr *pa)
{
	struct urd_port_attr p;

	memcpy(&p, &ctx->hdr->port, sizeof(p));
	memset(pa, 0, sizeof(*pa));
	pa->state = urd_ctx_dead(ctx) ? IBV_PORT_DOWN : (enum ibv_port_state)p.state;
	pa->max_mtu = (enum ibv_mtu)p.max_mtu;
	pa->active_mtu = (enum ibv_mtu)p.active_mtu;
	pa->gid_tbl_len = URD_GID_TBL_LEN;      /* abi.h: 0, 1, 3 the GID, 2 empty */
	pa->port_cap_flags = p.port_cap_flags;
	pa->max_msg_sz = p.max_msg_sz;
	pa->pkey_tbl_len = 1;
	pa->lid = 0;
	pa->sm_lid = 0;
	pa->max_vl_num = 1;
	pa->active_width = p.active_width;
	pa->active_speed = p.active_speed;
	pa->phys_state = p.phys_state;
	pa->link_layer = p.link_layer;
}

int urd_query_port_ex(struct ibv_context *c, uint8_t port_num,
		      struct ibv_port_attr *attr, size_t attr_len)
{
	struct ibv_port_attr full;

	if (port_num != 1)
		return EINVAL;
	fill_port(to_uctx(c), &full);
	if (attr_len > sizeof(full)) {
		memset((char *)attr + sizeof(full), 0, attr_len - sizeof(full));
		attr_len = sizeof(full);
	}
	memcpy(attr, &full, attr_len);
	return 0;
}

/* The struct that binaries built before port_cap_flags2 existed pass to the
 * exported ibv_query_port (verbs.h only declares it). */
struct _compat_ibv_port_attr {
	enum ibv_port_state state;
	enum ibv_mtu max_mtu;
	enum ibv_mtu active_mtu;
	int gid_tbl_len;
	uint32_t port_cap_flags;
	uint32_t max_msg_sz;
	uint32_t bad_pkey_cntr;
	uint32_t qkey_viol_cntr;
	uint16_t pkey_tbl_len;
	uint16_t lid;
	uint16_t sm_lid;
	uint8_t lmc;
	uint8_t max_vl_num;
	uint8_t sm_sl;
	uint8_t subnet_timeout;
	uint8_t init_type_reply;
	uint8_t active_width;
	uint8_t active_speed;
	uint8_t phys_state;
	uint8_t link_layer;
	uint8_t flags;
};

static int compat_query_port(struct ibv_context *c, uint8_t port,
			     struct _compat_ibv_port_attr *attr)
{
	return urd_query_port_ex(c, port, (struct ibv_port_attr *)attr,
				 sizeof(*attr));
}

int ibv_query_port(struct ibv_context *context, uint8_t port_num,
		   struct _compat_ibv_port_attr *port_attr)
{
	return compat_query_port(context, port_num, port_attr);
}

/* man ibv_query_gid: 0 on success, -1 on error.  An empty entry reads as
 * the zero GID, as rdma-core reads it from sysfs. */
int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index,
		  union ibv_gid *gid)
{
	struct urd_context *ctx = to_uctx(context);

	if (port_num != 1 || index < 0 || (uint32_t)index >= URD_GID_TBL_LEN) {
		errno = EINVAL;
		return -1;
	}
	if (urd_gid_index_ok((uint32_t)index))
		memcpy(gid->raw, ctx->hdr->port.gid, sizeof(gid->raw));
	else
		memset(gid->raw, 0, sizeof(gid->raw));
	return 0;
}

static bool zero_gid(const union ibv_gid *g)
{
	static const uint8_t z[16];

	return !memcmp(g->raw, z, sizeof(z));
}

static void fill_gid_entry(struct urd_context *ctx, struct ibv_gid_entry *e, uint32_t index)
{
	memset(e, 0, sizeof(*e));
	memcpy(e->gid.raw, ctx->hdr->port.gid, sizeof(e->gid.raw));
	e->gid_index = index;
	e->port_num = 1;
	e->gid_type = IBV_GID_TYPE_ROCE_V2;
	e->ndev_ifindex = 0;
}

/* man ibv_query_gid_ex: 0 or an errno; ENODATA for an empty entry. */
int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num,
		      uint32_t gid_index, struct ibv_gid_entry *entry,
		      uint32_t flags, size_t entry_size)
{
	struct ibv_gid_entry e;

	if (flags || entry_size < sizeof(e) || port_num != 1 || gid_index >= URD_GID_TBL_LEN)
		return EINVAL;
	if (!urd_gid_index_ok(gid_index))
		return ENODATA;
	fill_gid_entry(to_uctx(context), &e, gid_index);
	if (zero_gid(&e.gid))
		return ENODATA;
	memset(entry, 0, entry_size);
	memcpy(entry, &e, sizeof(e));
	return 0;
}

/* man ibv_query_gid_table: the number of valid entries, or a negative errno. */
ssize_t _ibv_query_gid_table(struct ibv_context *context,
			     struct ibv_gid_entry *entries, size_t max_entries,
			     uint32_t flags, size_t entry_size)
{
	struct ibv_gid_entry e;
	ssize_t n = 0;

	if (flags || entry_size < sizeof(e))
		return -EINVAL;
	for (uint32_t i = 0; i < URD_GID_TBL_LEN; i++) {
		if (!urd_gid_index_ok(i))
			continue;
		fill_gid_entry(to_uctx(context), &e, i);
		if (zero_gid(&e.gid))
			return 0;
		if ((size_t)n >= max_entries)
			return -EINVAL;
		memset((char *)entries + (size_t)n * entry_size, 0, entry_size);
		memcpy((char *)entries + (size_t)n * entry_size, &e, sizeof(e));
		n++;
	}
	return n;
}

/* One P_Key, the default full-membership 0xffff.  -1 on error. */
int ibv_query_pkey(struct ibv_context *context URD_UNUSED, uint8_t port_num, int index,
		   __be16 *pkey)
{
	if (port_num != 1 || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*pkey = htobe16(0xffff);
	return 0;
}

int ibv_get_pkey_index(struct ibv_context *context URD_UNUSED, uint8_t port_num,
		       __be16 pkey)
{
	if (port_num != 1 || pkey != htobe16(0xffff)) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}
