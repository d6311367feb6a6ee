/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* cma.c: the rdma_cm API over our libibverbs - devices, event channels,
 * ids, address and route resolution (local: a vRNIC's GID 0 is
 * ::ffff:<its IPv4>, and the container's eth0 has that address), QPs and
 * the calls that start CM exchanges (cm_agent.c runs them).  Behaves as
 * rdma-core's librdmacm over a RoCE device. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/random.h>
#include <sys/socket.h>

#include <rdma/rdma_verbs.h>

#include "cma.h"

struct cma_global g_cma = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
	.wake = { -1, -1 },
};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static int err(int e) { errno = e; return -1; }

uint64_t cma_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

uint32_t cma_random(void)
{
	uint32_t v;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint32_t)cma_now_ms() * 2654435761u ^ (uint32_t)getpid();
	return v;
}

void cma_gid_of_ip(union ibv_gid *gid, uint32_t ip)
{
	memset(gid, 0, sizeof(*gid));
	gid->raw[10] = 0xff;
	gid->raw[11] = 0xff;
	memcpy(&gid->raw[12], &ip, 4);
}

static bool gid_is_v4(const union ibv_gid *g)
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return !memcmp(g->raw, pfx, sizeof(pfx));
}

static void scan_devices(void)
{
	const char *dbg = getenv("UNIRDMA_CM_DEBUG");
	struct ibv_device **list;
	int n, i;

	cm_debug = dbg ? atoi(dbg) : 0;
	list = ibv_get_device_list(&n);
	if (!list) {
		g_cma.init_err = errno ? errno : ENODEV;
		return;
	}
	for (i = 0; i < n && g_cma.ndev < CMA_MAX_DEVS; i++) {
		struct cma_dev *d = &g_cma.devs[g_cma.ndev];
		struct ibv_device_attr da;
		struct ibv_port_attr pa;

		d->verbs = ibv_open_device(list[i]);
		if (!d->verbs)
			continue;
		if (ibv_query_device(d->verbs, &da) || ibv_query_port(d->verbs, 1, &pa) ||
		    ibv_query_gid(d->verbs, 1, 0, &d->gid)) {
			ibv_close_device(d->verbs);
			d->verbs = NULL;
			continue;
		}
		d->guid = be64toh(da.node_guid);
		d->mtu = pa.active_mtu ? pa.active_mtu : IBV_MTU_1024;
		d->max_rd_atom = da.max_qp_rd_atom > 255 ? 255 : (uint8_t)da.max_qp_rd_atom;
		d->max_init_rd_atom = da.max_qp_init_rd_atom > 255 ? 255 : (uint8_t)da.max_qp_init_rd_atom;
		if (gid_is_v4(&d->gid))
			memcpy(&d->ip, &d->gid.raw[12], 4);
		g_cma.ndev++;
	}
	ibv_free_device_list(list);
	if (!g_cma.ndev)
		g_cma.init_err = ENODEV;
}

int cma_init(void)
{
	pthread_once(&init_once, scan_devices);
	return g_cma.init_err;
}

struct cma_dev *cma_dev_by_ip(uint32_t ip)
{
	int i;

	for (i = 0; i < g_cma.ndev; i++)
		if (g_cma.devs[i].ip && g_cma.devs[i].ip == ip)
			return &g_cma.devs[i];
	return NULL;
}

static struct cma_dev *dev_of_verbs(struct ibv_context *v)
{
	int i;

	for (i = 0; i < g_cma.ndev; i++)
		if (g_cma.devs[i].verbs == v)
			return &g_cma.devs[i];
	return NULL;
}

static struct ibv_pd *dev_pd(struct cma_dev *d)
{
	if (!d->pd)
		d->pd = ibv_alloc_pd(d->verbs);
	return d->pd;
}

/* An id that gets a device gets its default PD too, as rdma-core's
 * ucma_get_device does: programs create their QPs on id->pd with
 * ibv_create_qp (UCX's rdmacm CM makes its placeholder QP that way). */
void cma_set_dev(struct cma_id *c, struct cma_dev *d)
{
	c->dev = d;
	c->id.verbs = d->verbs;
	c->id.port_num = 1;
	if (!c->id.pd)
		c->id.pd = dev_pd(d);   /* NULL if that fails: rdma_create_qp tries again */
}

struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **v;
	int i;

	if (num_devices)
		*num_devices = 0;
	if (cma_init() && !g_cma.ndev) {
		/* rdma-core returns an empty list when there is no device */
		v = calloc(1, sizeof(*v));
		return v;
	}
	v = calloc((size_t)g_cma.ndev + 1, sizeof(*v));
	if (!v)
		return NULL;
	for (i = 0; i < g_cma.ndev; i++)
		v[i] = g_cma.devs[i].verbs;
	if (num_devices)
		*num_devices = g_cma.ndev;
	return v;
}

void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}

/* ---- event channels ---------------------------------------------------- */

struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct cma_chan *c;
	int p[2];

	if (cma_init() && !g_cma.ndev) {
		errno = ENODEV;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	if (pipe2(p, O_CLOEXEC)) {
		free(c);
		return NULL;
	}
	/* the write end never blocks the CM thread (64 KiB of pending events) */
	fcntl(p[1], F_SETFL, O_NONBLOCK);
	c->ch.fd = p[0];
	c->wfd = p[1];
	return &c->ch;
}

void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct cma_chan *c = chan_of(channel);
	struct cma_event *e;

	if (!c)
		return;
	bool busy;

	pthread_mutex_lock(&g_cma.lock);
	while ((e = c->head)) {
		c->head = e->next;
		free(e);
	}
	c->tail = NULL;
	c->closed = true;
	busy = c->readers > 0;
	pthread_mutex_unlock(&g_cma.lock);
	/* A thread still waiting in rdma_get_cm_event keeps the channel (its
	 * read end and memory): it sees the write end close and then blocks
	 * for good, as a read of a kernel channel does (rdma_get_cm_event). */
	close(c->wfd);
	if (!busy) {
		close(c->ch.fd);
		free(c);
	}
}

struct cma_event *cma_event_new(struct cma_id *id, enum rdma_cm_event_type type, int status)
{
	struct cma_event *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->ev.id = &id->id;
	e->ev.event = type;
	e->ev.status = status;
	e->owner = id;
	return e;
}

void cma_queue(struct cma_id *owner, struct cma_event *e)
{
	struct cma_chan *ch = chan_of(owner->id.channel);
	char b = 'e';

	if (!e)
		return;
	e->owner = owner;
	e->next = NULL;
	if (ch->tail)
		ch->tail->next = e;
	else
		ch->head = e;
	ch->tail = e;
	if (write(ch->wfd, &b, 1) != 1) {
		/* pipe full (16k events): the reader still finds it after the next byte */
	}
}

static void chan_unlink(struct cma_chan *ch, struct cma_event *prev, struct cma_event *e)
{
	if (prev)
		prev->next = e->next;
	else
		ch->head = e->next;
	if (ch->tail == e)
		ch->tail = prev;
}

int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct cma_chan *ch = chan_of(channel);
	struct cma_event *e;
	char b;

	if (!ch || !event)
		return err(EINVAL);
	pthread_mutex_lock(&g_cma.lock);
	ch->readers++;
	pthread_mutex_unlock(&g_cma.lock);
	for (;;) {
		ssize_t n = read(ch->ch.fd, &b, 1);

		if (n < 0) {
			int e0 = errno;

			if (e0 == EINTR)
				continue;
			pthread_mutex_lock(&g_cma.lock);
			ch->readers--;
			pthread_mutex_unlock(&g_cma.lock);
			return err(e0);         /* EAGAIN on an O_NONBLOCK channel */
		}
		pthread_mutex_lock(&g_cma.lock);
		if (n == 0 || ch->closed) {
			/* Another thread destroyed the channel while this one
			 * waited (rdma_destroy_event_channel left it to us).  A
			 * kernel channel's read stays blocked then (the waiting
			 * read holds the file), and programs rely on it: rping's
			 * CM thread still waits when main destroys the channel
			 * and returns, and exits the process on an error.  Block
			 * for good too. */
			pthread_mutex_unlock(&g_cma.lock);
			for (;;)
				pause();
		}
		e = ch->head;
		if (e) {
			chan_unlink(ch, NULL, e);
			e->owner->delivered++;
			ch->readers--;
		}
		pthread_mutex_unlock(&g_cma.lock);
		if (e) {
			/* as rdma-core: the QP goes to ERR when the application
			 * takes the event, in its own thread, never from the CM
			 * thread (the QP is the application's to destroy) */
			if (e->ev.event == RDMA_CM_EVENT_REJECTED || e->ev.event == RDMA_CM_EVENT_UNREACHABLE ||
			    e->ev.event == RDMA_CM_EVENT_CONNECT_ERROR)
				cma_qp_to_err(cma_of(e->ev.id));
			*event = &e->ev;
			return 0;
		}
	}
}

int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct cma_event *e = (struct cma_event *)event;

	if (!e)
		return err(EINVAL);
	pthread_mutex_lock(&g_cma.lock);
	e->owner->delivered--;
	pthread_cond_broadcast(&g_cma.cond);
	pthread_mutex_unlock(&g_cma.lock);
	free(e);
	return 0;
}

const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const names[] = {
		[RDMA_CM_EVENT_ADDR_RESOLVED] = "RDMA_CM_EVENT_ADDR_RESOLVED",
		[RDMA_CM_EVENT_ADDR_ERROR] = "RDMA_CM_EVENT_ADDR_ERROR",
		[RDMA_CM_EVENT_ROUTE_RESOLVED] = "RDMA_CM_EVENT_ROUTE_RESOLVED",
		[RDMA_CM_EVENT_ROUTE_ERROR] = "RDMA_CM_EVENT_ROUTE_ERROR",
		[RDMA_CM_EVENT_CONNECT_REQUEST] = "RDMA_CM_EVENT_CONNECT_REQUEST",
		[RDMA_CM_EVENT_CONNECT_RESPONSE] = "RDMA_CM_EVENT_CONNECT_RESPONSE",
		[RDMA_CM_EVENT_CONNECT_ERROR] = "RDMA_CM_EVENT_CONNECT_ERROR",
		[RDMA_CM_EVENT_UNREACHABLE] = "RDMA_CM_EVENT_UNREACHABLE",
		[RDMA_CM_EVENT_REJECTED] = "RDMA_CM_EVENT_REJECTED",
		[RDMA_CM_EVENT_ESTABLISHED] = "RDMA_CM_EVENT_ESTABLISHED",
		[RDMA_CM_EVENT_DISCONNECTED] = "RDMA_CM_EVENT_DISCONNECTED",
		[RDMA_CM_EVENT_DEVICE_REMOVAL] = "RDMA_CM_EVENT_DEVICE_REMOVAL",
		[RDMA_CM_EVENT_MULTICAST_JOIN] = "RDMA_CM_EVENT_MULTICAST_JOIN",
		[RDMA_CM_EVENT_MULTICAST_ERROR] = "RDMA_CM_EVENT_MULTICAST_ERROR",
		[RDMA_CM_EVENT_ADDR_CHANGE] = "RDMA_CM_EVENT_ADDR_CHANGE",
		[RDMA_CM_EVENT_TIMEWAIT_EXIT] = "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};

	if ((unsigned)event < sizeof(names) / sizeof(names[0]) && names[event])
		return names[event];
	return "UNKNOWN EVENT";
}

/* ---- ids ----------------------------------------------------------------- */

static enum ibv_qp_type qpt_of_ps(enum rdma_port_space ps)
{
	return ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB ? IBV_QPT_UD : IBV_QPT_RC;
}

int cma_create_channel_for(struct cma_id *c)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();

	if (!ch)
		return -errno;
	c->id.channel = ch;
	c->sync = true;
	return 0;
}

struct cma_id *cma_id_alloc(struct rdma_event_channel *ch, void *context,
			    enum rdma_port_space ps, enum ibv_qp_type qpt)
{
	struct cma_id *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->id.channel = ch;
	c->id.context = context;
	c->id.ps = ps;
	c->id.qp_type = qpt;
	c->id.route.path_rec = &c->path;
	c->state = CS_IDLE;
	c->next_all = g_cma.ids;
	g_cma.ids = c;
	return c;
}

static void id_unlink(struct cma_id *c)
{
	struct cma_id **pp;

	for (pp = &g_cma.ids; *pp; pp = &(*pp)->next_all)
		if (*pp == c) {
			*pp = c->next_all;
			return;
		}
}

static int create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
		     enum rdma_port_space ps, enum ibv_qp_type qpt)
{
	struct cma_id *c;
	int e;

	if (!id)
		return err(EINVAL);
	if (cma_init() && !g_cma.ndev)
		return err(ENODEV);
	if (ps != RDMA_PS_TCP && ps != RDMA_PS_UDP && ps != RDMA_PS_IPOIB && ps != RDMA_PS_IB)
		return err(EINVAL);
	pthread_mutex_lock(&g_cma.lock);
	c = cma_id_alloc(channel, context, ps, qpt);
	pthread_mutex_unlock(&g_cma.lock);
	if (!c)
		return err(ENOMEM);
	if (!channel && (e = cma_create_channel_for(c))) {
		pthread_mutex_lock(&g_cma.lock);
		id_unlink(c);
		pthread_mutex_unlock(&g_cma.lock);
		free(c);
		return err(-e);
	}
	*id = &c->id;
	return 0;
}

int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
		   enum rdma_port_space ps)
{
	return create_id(channel, id, context, ps, qpt_of_ps(ps));
}

/* rdma_create_ep (ep.c) makes ids with the QP type of its rdma_addrinfo */
int cma_create_id_qpt(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
		      enum rdma_port_space ps, enum ibv_qp_type qpt);
int cma_create_id_qpt(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
		      enum rdma_port_space ps, enum ibv_qp_type qpt)
{
	return create_id(channel, id, context, ps, qpt);
}

/* Waits (lock not held) until c delivered all its events and they were acked. */
static void wait_acked(struct cma_id *c)
{
	while (c->delivered > 0)
		pthread_cond_wait(&g_cma.cond, &g_cma.lock);
}

/* Drops c's queued, undelivered events (lock held); a CONNECT_REQUEST
 * queued for a listener takes its new id with it. */
static void purge_events(struct cma_id *c);

static void free_id(struct cma_id *c);

static void stop_listen(struct cma_id *c)
{
	int i;

	for (i = 0; i < g_cma.ndev; i++)
		if (c->listen_devs & (1ull << i)) {
			if (urd_cm_listen && g_cma.devs[i].agent_ok)
				urd_cm_listen(g_cma.devs[i].qp, ((uint64_t)c->id.ps << 16) | c->port, 0);
		}
	c->listen_devs = 0;
}

/* The CM side of tearing c down (lock held): tell the peer. */
void cma_teardown_conn(struct cma_id *c)
{
	union ibv_gid *dgid = &c->id.route.addr.addr.ibaddr.dgid;

	cm_disarm(c);
	switch (c->state) {
	case CS_REQ_RCVD:
		cm_send_rej(c->dev, dgid, c->local_comm_id, c->remote_comm_id, CM_MSG_REQ,
			    CM_REJ_CONSUMER_DEFINED, NULL, 0);
		if (c->listen)
			c->listen->pending--;
		break;
	case CS_REQ_SENT:
		cm_send_rej(c->dev, dgid, c->local_comm_id, 0, CM_MSG_REQ, CM_REJ_TIMEOUT, NULL, 0);
		break;
	case CS_REP_SENT:
	case CS_REP_RCVD:
	case CS_ESTABLISHED:
		cm_send_dreq(c);
		cm_disarm(c);
		break;
	case CS_SIDR_RCVD:
		cm_send_sidr_rep(c, CM_SIDR_REJECT, 0, NULL, 0);
		if (c->listen)
			c->listen->pending--;
		break;
	default:
		break;
	}
	c->state = CS_IDLE;
}

static void purge_events(struct cma_id *c)
{
	struct cma_chan *ch = chan_of(c->id.channel);
	struct cma_event *e, *prev = NULL, *next;

	if (!ch)
		return;
	for (e = ch->head; e; e = next) {
		next = e->next;
		if (e->owner == c || e->ev.id == &c->id) {
			struct cma_id *child = cma_of(e->ev.id);

			chan_unlink(ch, prev, e);
			if (e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST && child != c) {
				cma_teardown_conn(child);
				id_unlink(child);
				free_id(child);
			}
			free(e);
			continue;
		}
		prev = e;
	}
}

static void free_id(struct cma_id *c)
{
	struct cma_mc *m;

	while ((m = c->mcs)) {
		c->mcs = m->next;
		free(m);
	}
	free(c->ep_attr);
	free(c);
}

int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct cma_id *c = cma_of(id), *o;
	struct rdma_event_channel *priv_ch = NULL;

	if (!c)
		return err(EINVAL);
	if (c->sync && id->event) {
		rdma_ack_cm_event(id->event);
		id->event = NULL;
	}
	pthread_mutex_lock(&g_cma.lock);
	wait_acked(c);
	if (c->state == CS_LISTEN)
		stop_listen(c);
	cma_teardown_conn(c);
	purge_events(c);
	for (o = g_cma.ids; o; o = o->next_all)
		if (o->listen == c)
			o->listen = NULL;
	id_unlink(c);
	if (c->sync)
		priv_ch = id->channel;
	pthread_mutex_unlock(&g_cma.lock);
	if (priv_ch)
		rdma_destroy_event_channel(priv_ch);
	free_id(c);
	return 0;
}

/* Waits for the event the last call on a synchronous id produces and turns
 * its status into the call's result, as rdma-core does. */
int cma_complete(struct cma_id *c)
{
	struct rdma_cm_event *ev;

	if (!c->sync)
		return 0;
	if (c->id.event) {
		rdma_ack_cm_event(c->id.event);
		c->id.event = NULL;
	}
	if (rdma_get_cm_event(c->id.channel, &ev))
		return -1;
	c->id.event = ev;
	if (ev->status) {
		if (ev->event == RDMA_CM_EVENT_REJECTED)
			return err(ECONNREFUSED);
		return err(ev->status < 0 ? -ev->status : ev->status);
	}
	return 0;
}

int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	struct cma_id *c = cma_of(id);
	struct rdma_event_channel *old, *fresh = NULL;
	struct cma_chan *och, *nch;
	struct cma_event *e, *prev = NULL, *next;
	bool was_sync;

	if (!c)
		return err(EINVAL);
	if (!channel) {
		fresh = rdma_create_event_channel();
		if (!fresh)
			return -1;
		channel = fresh;
	}
	if (c->sync && id->event) {
		rdma_ack_cm_event(id->event);
		id->event = NULL;
	}
	pthread_mutex_lock(&g_cma.lock);
	wait_acked(c);
	old = id->channel;
	och = chan_of(old);
	nch = chan_of(channel);
	was_sync = c->sync;
	id->channel = channel;
	c->sync = fresh != NULL;
	for (e = och->head; e; e = next) {
		next = e->next;
		if (e->owner == c) {
			chan_unlink(och, prev, e);
			cma_queue(c, e);
			continue;
		}
		prev = e;
	}
	(void)nch;
	pthread_mutex_unlock(&g_cma.lock);
	if (was_sync)
		rdma_destroy_event_channel(old);
	return 0;
}

/* ---- addresses ------------------------------------------------------------ */

/* The IPv4 address (network order) of sa, a v4-mapped IPv6 one included;
 * 0 for a wildcard.  -EAFNOSUPPORT for anything else. */
static int ip_of(const struct sockaddr *sa, uint32_t *ip, uint16_t *port)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)sa;

		*ip = s->sin_addr.s_addr;
		*port = ntohs(s->sin_port);
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)sa;

		*port = ntohs(s->sin6_port);
		if (IN6_IS_ADDR_UNSPECIFIED(&s->sin6_addr)) {
			*ip = 0;
			return 0;
		}
		if (IN6_IS_ADDR_V4MAPPED(&s->sin6_addr)) {
			memcpy(ip, &s->sin6_addr.s6_addr[12], 4);
			return 0;
		}
	}
	return -EAFNOSUPPORT;
}

static void set_sin(struct sockaddr_storage *ss, uint32_t ip, uint16_t port)
{
	struct sockaddr_in *s = (struct sockaddr_in *)ss;

	memset(ss, 0, sizeof(*ss));
	s->sin_family = AF_INET;
	s->sin_addr.s_addr = ip;
	s->sin_port = htons(port);
}

static bool port_taken(struct cma_id *self, enum rdma_port_space ps, uint16_t port, struct cma_dev *dev)
{
	struct cma_id *o;

	for (o = g_cma.ids; o; o = o->next_all) {
		if (o == self || o->id.ps != ps || o->port != port || o->state == CS_IDLE)
			continue;
		if (o->passive)
			continue;       /* accepted ids share their listener's port, even after it is gone */
		if (dev && o->dev && o->dev != dev)
			continue;
		if (self->reuseaddr && o->reuseaddr && o->state != CS_LISTEN)
			continue;
		return true;
	}
	return false;
}

/* Binds c (lock held): dev NULL and ip 0 is the wildcard. */
static int bind_locked(struct cma_id *c, struct cma_dev *dev, uint32_t ip, uint16_t port,
		       const struct sockaddr *as)
{
	int tries;

	if (!port) {
		for (tries = 0; tries < 1000; tries++) {
			port = (uint16_t)(32768 + cma_random() % 28232);
			if (!port_taken(c, c->id.ps, port, dev))
				break;
		}
	} else if (port_taken(c, c->id.ps, port, dev)) {
		return -EADDRINUSE;
	}
	c->src_ip = ip;
	c->port = port;
	if (as && as->sa_family == AF_INET6 && !ip) {
		struct sockaddr_in6 *s6 = &c->id.route.addr.src_sin6;

		memset(&c->id.route.addr.src_storage, 0, sizeof(c->id.route.addr.src_storage));
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
	} else {
		set_sin(&c->id.route.addr.src_storage, ip, port);
	}
	c->dev = dev;
	if (dev) {
		cma_set_dev(c, dev);
		c->id.route.addr.addr.ibaddr.sgid = dev->gid;
		c->id.route.addr.addr.ibaddr.pkey = htobe16(0xffff);
	}
	c->state = CS_BOUND;
	return 0;
}

int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct cma_id *c = cma_of(id);
	struct cma_dev *dev = NULL;
	uint32_t ip;
	uint16_t port;
	int ret;

	if (!c || !addr)
		return err(EINVAL);
	if (ip_of(addr, &ip, &port))
		return err(EAFNOSUPPORT);
	pthread_mutex_lock(&g_cma.lock);
	if (c->state != CS_IDLE) {
		ret = -EINVAL;
	} else if (ip && (ntohl(ip) >> 24) == 127) {
		/* loopback (libfabric's verbs provider binds "localhost" to
		 * find its devices): no vRNIC has it; bound to none, as a
		 * wildcard, and the address kept as given */
		ret = bind_locked(c, NULL, 0, port, addr);
		if (!ret)
			set_sin(&c->id.route.addr.src_storage, ip, c->port);
	} else if (ip && !(dev = cma_dev_by_ip(ip))) {
		ret = -EADDRNOTAVAIL;   /* no vRNIC has this address */
	} else {
		ret = bind_locked(c, dev, ip, port, addr);
	}
	if (!ret) {
		/* A bound id is about to listen, and programs tell their
		 * peer to connect as soon as they know the port (qperf
		 * -cm1 sends it before it calls rdma_listen).  With the CM
		 * agent running, a REQ that beats rdma_listen is held for
		 * it (cm_agent.c); without one the daemon rejects it at
		 * once.  A failure here is rdma_listen's to report. */
		int i;

		for (i = 0; i < g_cma.ndev; i++)
			if (!dev || dev == &g_cma.devs[i])
				(void)cm_agent_start(&g_cma.devs[i]);
	}
	pthread_mutex_unlock(&g_cma.lock);
	return ret ? err(-ret) : 0;
}

/* The source address the kernel would use towards dst. */
static int route_src(uint32_t dst, uint32_t *src)
{
	struct sockaddr_in d = { .sin_family = AF_INET, .sin_port = htons(4791) }, s;
	socklen_t len = sizeof(s);
	int fd, ret = 0;

	d.sin_addr.s_addr = dst;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&d, sizeof(d)) || getsockname(fd, (struct sockaddr *)&s, &len))
		ret = -errno;
	else
		*src = s.sin_addr.s_addr;
	close(fd);
	return ret;
}

void cma_set_ibaddr(struct cma_id *c, const union ibv_gid *dgid)
{
	struct rdma_ib_addr *ib = &c->id.route.addr.addr.ibaddr;

	ib->sgid = c->dev->gid;
	ib->dgid = *dgid;
	ib->pkey = htobe16(0xffff);
}

/* Finds c's device for destination dst (lock held): binds c when needed. */
static int resolve_locked(struct cma_id *c, uint32_t dst)
{
	uint32_t src = c->src_ip;
	struct cma_dev *dev;
	int ret;

	if (!src && (ret = route_src(dst, &src)))
		return ret;
	dev = cma_dev_by_ip(src);
	if (!dev)
		return -ENODEV;         /* the route leaves through an address no vRNIC has */
	if (c->dev && c->dev != dev)
		return -EINVAL;
	if (c->state == CS_IDLE) {
		ret = bind_locked(c, dev, src, 0, NULL);
		if (ret)
			return ret;
	} else {
		uint16_t port = c->port;

		cma_set_dev(c, dev);
		c->src_ip = src;
		set_sin(&c->id.route.addr.src_storage, src, port);
	}
	return 0;
}

int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr, struct sockaddr *dst_addr,
		      int timeout_ms)
{
	struct cma_id *c = cma_of(id);
	struct cma_event *e;
	union ibv_gid dgid;
	uint32_t dst;
	uint16_t dport;
	int ret;

	(void)timeout_ms;
	if (!c || !dst_addr)
		return err(EINVAL);
	if (ip_of(dst_addr, &dst, &dport) || !dst)
		return err(EAFNOSUPPORT);
	if (src_addr && c->state == CS_IDLE && rdma_bind_addr(id, src_addr))
		return -1;
	pthread_mutex_lock(&g_cma.lock);
	if (c->state != CS_IDLE && c->state != CS_BOUND && c->state != CS_ADDR_RESOLVED) {
		pthread_mutex_unlock(&g_cma.lock);
		return err(EINVAL);
	}
	ret = resolve_locked(c, dst);
	if (ret) {
		e = cma_event_new(c, RDMA_CM_EVENT_ADDR_ERROR, ret);
	} else {
		set_sin(&c->id.route.addr.dst_storage, dst, dport);
		cma_gid_of_ip(&dgid, dst);
		cma_set_ibaddr(c, &dgid);
		c->state = CS_ADDR_RESOLVED;
		e = cma_event_new(c, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	}
	if (!e) {
		pthread_mutex_unlock(&g_cma.lock);
		return err(ENOMEM);
	}
	cma_queue(c, e);
	pthread_mutex_unlock(&g_cma.lock);
	return cma_complete(c);
}

void cma_fill_path(struct cma_id *c, enum ibv_mtu mtu)
{
	struct ibv_sa_path_rec *p = &c->path;
	struct rdma_ib_addr *ib = &c->id.route.addr.addr.ibaddr;

	memset(p, 0, sizeof(*p));
	p->dgid = ib->dgid;
	p->sgid = ib->sgid;
	p->dlid = 0;
	p->slid = 0;
	p->raw_traffic = 0;
	p->flow_label = 0;
	p->hop_limit = CMA_HOP_LIMIT;
	p->traffic_class = c->tos;
	p->reversible = htobe32(1);
	p->numb_path = 1;
	p->pkey = htobe16(0xffff);
	p->sl = 0;
	p->mtu_selector = 2;            /* exactly */
	p->mtu = mtu;
	p->rate_selector = 2;
	p->rate = IBV_RATE_100_GBPS;
	p->packet_life_time_selector = 2;
	p->packet_life_time = CMA_PKT_LIFE;
	p->preference = 0;
	c->mtu = mtu;
	c->id.route.path_rec = p;
	c->id.route.num_paths = 1;
}

int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct cma_id *c = cma_of(id);
	struct cma_event *e;

	(void)timeout_ms;
	if (!c)
		return err(EINVAL);
	pthread_mutex_lock(&g_cma.lock);
	if (c->state != CS_ADDR_RESOLVED && c->state != CS_ROUTE_RESOLVED) {
		pthread_mutex_unlock(&g_cma.lock);
		return err(EINVAL);
	}
	cma_fill_path(c, c->dev->mtu);
	c->state = CS_ROUTE_RESOLVED;
	e = cma_event_new(c, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	if (!e) {
		pthread_mutex_unlock(&g_cma.lock);
		return err(ENOMEM);
	}
	cma_queue(c, e);
	pthread_mutex_unlock(&g_cma.lock);
	return cma_complete(c);
}

__be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	const struct sockaddr *sa = &id->route.addr.src_addr;

	if (sa->sa_family == AF_INET)
		return id->route.addr.src_sin.sin_port;
	if (sa->sa_family == AF_INET6)
		return id->route.addr.src_sin6.sin6_port;
	return 0;
}

__be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	const struct sockaddr *sa = &id->route.addr.dst_addr;

	if (sa->sa_family == AF_INET)
		return id->route.addr.dst_sin.sin_port;
	if (sa->sa_family == AF_INET6)
		return id->route.addr.dst_sin6.sin6_port;
	return 0;
}

int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval, size_t optlen)
{
	struct cma_id *c = cma_of(id);

	if (!c || !optval)
		return err(EINVAL);
	if (level == RDMA_OPTION_ID) {
		switch (optname) {
		case RDMA_OPTION_ID_TOS:
			if (optlen != sizeof(uint8_t))
				return err(EINVAL);
			c->tos = *(uint8_t *)optval;
			c->tos_set = true;
			c->path.traffic_class = c->tos;
			return 0;
		case RDMA_OPTION_ID_REUSEADDR:
			if (optlen != sizeof(int))
				return err(EINVAL);
			c->reuseaddr = *(int *)optval;
			return 0;
		case RDMA_OPTION_ID_AFONLY:
			if (optlen != sizeof(int))
				return err(EINVAL);
			c->afonly = *(int *)optval;
			return 0;
		case RDMA_OPTION_ID_ACK_TIMEOUT:
			if (optlen != sizeof(uint8_t))
				return err(EINVAL);
			c->ack_timeout = *(uint8_t *)optval & 0x1f;
			c->ack_timeout_set = true;
			return 0;
		}
		return err(ENOSYS);
	}
	if (level == RDMA_OPTION_IB && optname == RDMA_OPTION_IB_PATH) {
		/* a path from the application: the only path is the one we computed */
		return 0;
	}
	return err(ENOSYS);
}

/* ---- QPs ------------------------------------------------------------------ */

static uint8_t ack_timeout_of(struct cma_id *c)
{
	unsigned t = c->ack_timeout_set ? c->ack_timeout : c->path.packet_life_time + 1u;

	return t > 31 ? 31 : (uint8_t)t;
}

void cm_fill_ud_ah(struct cma_id *c, struct ibv_ah_attr *ah, const union ibv_gid *dgid)
{
	memset(ah, 0, sizeof(*ah));
	ah->is_global = 1;
	ah->grh.dgid = *dgid;
	ah->grh.sgid_index = 0;
	ah->grh.hop_limit = CMA_HOP_LIMIT;
	ah->grh.traffic_class = c->tos;
	ah->port_num = c->id.port_num ? c->id.port_num : 1;
}

/* The attributes of the transition to a->qp_state, as the kernel's
 * ib_cm_init_qp_attr / cma_ib_init_qp_attr give them; 0 or -errno. */
int cma_qp_attr(struct cma_id *c, struct ibv_qp_attr *a, int *mask)
{
	enum ibv_qp_state s = a->qp_state;
	bool ud = c->id.qp_type == IBV_QPT_UD;
	bool rc = c->id.qp_type == IBV_QPT_RC || c->id.qp_type == IBV_QPT_XRC_SEND ||
		  c->id.qp_type == IBV_QPT_XRC_RECV;

	if (!c->dev)
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	a->qp_state = s;
	switch (s) {
	case IBV_QPS_INIT:
		a->pkey_index = 0;
		a->port_num = c->id.port_num ? c->id.port_num : 1;
		*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (ud) {
			a->qkey = RDMA_UDP_QKEY;
			*mask |= IBV_QP_QKEY;
		} else {
			a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
			if (rc && c->resp_res)
				a->qp_access_flags |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
			*mask |= IBV_QP_ACCESS_FLAGS;
		}
		return 0;
	case IBV_QPS_RTR:
		*mask = IBV_QP_STATE;
		if (ud)
			return 0;
		if (!c->remote_qpn)
			return -EINVAL;         /* no peer yet */
		cm_fill_ud_ah(c, &a->ah_attr, &c->id.route.addr.addr.ibaddr.dgid);
		a->path_mtu = c->mtu;
		a->dest_qp_num = c->remote_qpn;
		/* The PSNs as Linux's rdma_cm uses the CM's Starting PSN fields
		 * (rdma_init_qp_attr: rq_psn = id_priv->seq_num, the value it
		 * sent): each side advertises the PSN it will RECEIVE from, and
		 * sends from the one its peer advertised.  c->sq_psn is ours
		 * (sent in our REQ or REP), c->rq_psn the peer's.  rxe NAKs
		 * with a sequence error otherwise (rxe_interop:rxe_rping_*). */
		a->rq_psn = c->sq_psn;
		*mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		if (rc) {
			a->max_dest_rd_atomic = c->resp_res;
			a->min_rnr_timer = 12;
			*mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
		return 0;
	case IBV_QPS_RTS:
		a->sq_psn = ud ? 0 : c->rq_psn;        /* the peer's advertised PSN (RTR's note) */
		*mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		if (rc) {
			a->timeout = ack_timeout_of(c);
			a->retry_cnt = c->retry_cnt;
			a->rnr_retry = c->rnr_retry;
			a->max_rd_atomic = c->init_depth;
			*mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		}
		return 0;
	default:
		*mask = IBV_QP_STATE;
		return 0;
	}
}

static int qp_move(struct cma_id *c, enum ibv_qp_state s)
{
	struct ibv_qp_attr a = { .qp_state = s };
	int mask, ret;

	ret = cma_qp_attr(c, &a, &mask);
	if (ret)
		return ret;
	ret = ibv_modify_qp(c->id.qp, &a, mask);
	return ret > 0 ? -ret : (ret < 0 ? -EINVAL : 0);
}

/* INIT again (the access flags now that the responder resources are
 * known, as rdma-core does), then RTR and RTS. */
int cma_qp_rtr_rts(struct cma_id *c)
{
	int ret;

	if (!c->id.qp)
		return 0;
	(void)qp_move(c, IBV_QPS_INIT);
	ret = qp_move(c, IBV_QPS_RTR);
	if (!ret)
		ret = qp_move(c, IBV_QPS_RTS);
	return ret;
}

int cma_qp_to_err(struct cma_id *c)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	if (!c->id.qp)
		return 0;
	return ibv_modify_qp(c->id.qp, &a, IBV_QP_STATE) ? -EINVAL : 0;
}

int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr, int *qp_attr_mask)
{
	struct cma_id *c = cma_of(id);
	int ret;

	if (!c || !qp_attr || !qp_attr_mask)
		return err(EINVAL);
	pthread_mutex_lock(&g_cma.lock);
	ret = cma_qp_attr(c, qp_attr, qp_attr_mask);
	pthread_mutex_unlock(&g_cma.lock);
	return ret ? err(-ret) : 0;
}

static int create_cqs(struct rdma_cm_id *id, uint32_t send_size, uint32_t recv_size)
{
	if (recv_size) {
		id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
		if (!id->recv_cq_channel)
			goto err_out;
		id->recv_cq = ibv_create_cq(id->verbs, (int)recv_size, id, id->recv_cq_channel, 0);
		if (!id->recv_cq)
			goto err_out;
	}
	if (send_size) {
		id->send_cq_channel = ibv_create_comp_channel(id->verbs);
		if (!id->send_cq_channel)
			goto err_out;
		id->send_cq = ibv_create_cq(id->verbs, (int)send_size, id, id->send_cq_channel, 0);
		if (!id->send_cq)
			goto err_out;
	}
	return 0;
err_out:
	return -1;
}

static void destroy_cqs(struct rdma_cm_id *id)
{
	if (id->send_cq) {
		ibv_destroy_cq(id->send_cq);
		id->send_cq = NULL;
	}
	if (id->send_cq_channel) {
		ibv_destroy_comp_channel(id->send_cq_channel);
		id->send_cq_channel = NULL;
	}
	if (id->recv_cq) {
		ibv_destroy_cq(id->recv_cq);
		id->recv_cq = NULL;
	}
	if (id->recv_cq_channel) {
		ibv_destroy_comp_channel(id->recv_cq_channel);
		id->recv_cq_channel = NULL;
	}
}

struct ibv_pd *cma_default_pd(struct rdma_cm_id *id);
struct ibv_pd *cma_default_pd(struct rdma_cm_id *id)
{
	struct cma_dev *d;
	struct ibv_pd *pd = NULL;

	pthread_mutex_lock(&g_cma.lock);
	d = dev_of_verbs(id->verbs);
	if (d)
		pd = dev_pd(d);
	pthread_mutex_unlock(&g_cma.lock);
	return pd;
}

int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	struct cma_id *c = cma_of(id);
	struct ibv_qp *qp;
	bool made_cqs = false;
	int ret;

	if (!c || !attr || !id->verbs)
		return err(EINVAL);
	if (id->qp)
		return err(EINVAL);
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		attr->pd = id->pd ? id->pd : cma_default_pd(id);
		if (!attr->pd)
			return err(ENOMEM);
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
	}
	if (attr->pd->context != id->verbs)
		return err(EINVAL);
	if (!attr->srq && id->srq)
		attr->srq = id->srq;
	if (!attr->send_cq || !attr->recv_cq) {
		if ((!attr->send_cq && !id->send_cq) || (!attr->recv_cq && !id->recv_cq)) {
			if (create_cqs(id, attr->send_cq || id->send_cq ? 0 : attr->cap.max_send_wr ? attr->cap.max_send_wr : 1,
				       attr->recv_cq || id->recv_cq ? 0 : attr->cap.max_recv_wr ? attr->cap.max_recv_wr : 1)) {
				destroy_cqs(id);
				return -1;
			}
			made_cqs = true;
		}
		if (!attr->send_cq)
			attr->send_cq = id->send_cq;
		if (!attr->recv_cq)
			attr->recv_cq = id->recv_cq;
	}
	qp = ibv_create_qp_ex(id->verbs, attr);
	if (!qp) {
		ret = errno;
		if (made_cqs)
			destroy_cqs(id);
		return err(ret ? ret : ENOMEM);
	}
	pthread_mutex_lock(&g_cma.lock);
	id->qp = qp;
	id->pd = attr->pd;
	ret = qp_move(c, IBV_QPS_INIT);
	if (!ret && id->qp_type == IBV_QPT_UD) {
		ret = qp_move(c, IBV_QPS_RTR);
		if (!ret)
			ret = qp_move(c, IBV_QPS_RTS);
	}
	if (ret)
		id->qp = NULL;
	pthread_mutex_unlock(&g_cma.lock);
	if (ret) {
		ibv_destroy_qp(qp);
		if (made_cqs)
			destroy_cqs(id);
		return err(-ret);
	}
	return 0;
}

int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex ax;
	int ret;

	if (!id || !qp_init_attr)
		return err(EINVAL);
	memset(&ax, 0, sizeof(ax));
	memcpy(&ax, qp_init_attr, sizeof(*qp_init_attr));
	ax.comp_mask = IBV_QP_INIT_ATTR_PD;
	ax.pd = pd;
	ret = rdma_create_qp_ex(id, &ax);
	if (!ret) {
		qp_init_attr->send_cq = ax.send_cq;
		qp_init_attr->recv_cq = ax.recv_cq;
		qp_init_attr->srq = ax.srq;
		qp_init_attr->cap = ax.cap;
	}
	return ret;
}

void rdma_destroy_qp(struct rdma_cm_id *id)
{
	struct ibv_qp *qp;

	pthread_mutex_lock(&g_cma.lock);
	qp = id->qp;
	id->qp = NULL;
	pthread_mutex_unlock(&g_cma.lock);
	if (qp)
		ibv_destroy_qp(qp);
	destroy_cqs(id);
}

int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq *srq;

	if (!id || !attr || !id->verbs)
		return err(EINVAL);
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE)) {
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_TYPE;
		attr->srq_type = IBV_SRQT_BASIC;
	}
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) {
		attr->pd = id->pd ? id->pd : cma_default_pd(id);
		if (!attr->pd)
			return err(ENOMEM);
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
	}
	if (attr->srq_type == IBV_SRQT_XRC && (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !attr->cq)) {
		if (!id->recv_cq && create_cqs(id, 0, attr->attr.max_wr ? attr->attr.max_wr : 1))
			return -1;
		attr->cq = id->recv_cq;
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_CQ;
	}
	srq = ibv_create_srq_ex(id->verbs, attr);
	if (!srq)
		return -1;
	id->pd = attr->pd;
	id->srq = srq;
	return 0;
}

int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex ax;
	int ret;

	if (!id || !attr)
		return err(EINVAL);
	memset(&ax, 0, sizeof(ax));
	ax.srq_context = attr->srq_context;
	ax.attr = attr->attr;
	ax.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
	ax.srq_type = IBV_SRQT_BASIC;
	ax.pd = pd;
	if (id->qp_type == IBV_QPT_XRC_RECV)
		ax.srq_type = IBV_SRQT_XRC;
	ret = rdma_create_srq_ex(id, &ax);
	if (!ret)
		attr->attr = ax.attr;
	return ret;
}

void rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (id->srq) {
		ibv_destroy_srq(id->srq);
		id->srq = NULL;
	}
	if (id->qp_type == IBV_QPT_XRC_RECV)
		destroy_cqs(id);
}

/* ---- listening and connecting ------------------------------------------- */

int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct cma_id *c = cma_of(id), *o;
	uint64_t sid;
	int i, ret = 0;

	if (!c)
		return err(EINVAL);
	if (!urd_cm_listen || !urd_cm_agent)
		return err(ENOSYS);
	pthread_mutex_lock(&g_cma.lock);
	if (c->state == CS_IDLE)
		ret = bind_locked(c, NULL, 0, 0, NULL);
	if (!ret && c->state != CS_BOUND)
		ret = -EINVAL;
	if (ret)
		goto out;
	sid = ((uint64_t)c->id.ps << 16) | c->port;
	for (o = g_cma.ids; o; o = o->next_all)
		if (o != c && o->state == CS_LISTEN && o->id.ps == c->id.ps && o->port == c->port &&
		    (!o->dev || !c->dev || o->dev == c->dev)) {
			ret = -EADDRINUSE;
			goto out;
		}
	for (i = 0; i < g_cma.ndev; i++) {
		struct cma_dev *d = &g_cma.devs[i];

		if (c->dev && c->dev != d)
			continue;
		ret = cm_agent_start(d);
		if (!ret)
			ret = urd_cm_listen(d->qp, sid, 1);
		if (ret) {
			stop_listen(c);
			goto out;
		}
		c->listen_devs |= 1ull << i;
	}
	c->backlog = backlog > 0 ? backlog : 1024;
	c->state = CS_LISTEN;
	cm_listen_added();
	if (cm_debug)
		fprintf(stderr, "rdmacm: listening on service 0x%llx\n", (unsigned long long)sid);
out:
	pthread_mutex_unlock(&g_cma.lock);
	return ret ? err(-ret) : 0;
}

static void conn_defaults(struct cma_id *c, const struct rdma_conn_param *p)
{
	uint8_t rr = p ? p->responder_resources : RDMA_MAX_RESP_RES;
	uint8_t id = p ? p->initiator_depth : RDMA_MAX_INIT_DEPTH;

	c->resp_res = rr > c->dev->max_rd_atom ? c->dev->max_rd_atom : rr;
	c->init_depth = id > c->dev->max_init_rd_atom ? c->dev->max_init_rd_atom : id;
	c->retry_cnt = p ? (p->retry_count > 7 ? 7 : p->retry_count) : 7;
	c->rnr_retry = p ? (p->rnr_retry_count > 7 ? 7 : p->rnr_retry_count) : 7;
	c->flow_control = p ? p->flow_control : 1;
	c->srq_flag = p ? p->srq : 0;
}

int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct cma_id *c = cma_of(id);
	int ret;

	if (!c)
		return err(EINVAL);
	pthread_mutex_lock(&g_cma.lock);
	if (c->state != CS_ROUTE_RESOLVED) {
		ret = -EINVAL;
		goto out;
	}
	ret = cm_agent_start(c->dev);
	if (ret)
		goto out;
	if (id->qp_type == IBV_QPT_UD) {
		ret = cm_send_sidr_req(c, conn_param);
	} else {
		conn_defaults(c, conn_param);
		ret = cm_send_req(c, conn_param);
	}
out:
	pthread_mutex_unlock(&g_cma.lock);
	if (ret)
		return err(-ret);
	return cma_complete(c);
}

int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct cma_id *c = cma_of(id);
	int ret;
	bool wait = false;

	if (!c)
		return err(EINVAL);
	pthread_mutex_lock(&g_cma.lock);
	if (id->qp_type == IBV_QPT_UD) {
		if (c->state != CS_SIDR_RCVD) {
			ret = -EINVAL;
			goto out;
		}
		ret = cm_send_sidr_rep(c, CM_SIDR_SUCCESS,
				       id->qp ? id->qp->qp_num : conn_param ? conn_param->qp_num : 0,
				       conn_param ? conn_param->private_data : NULL,
				       conn_param ? conn_param->private_data_len : 0);
		if (!ret) {
			c->state = CS_UD_CONNECTED;
			if (c->listen)
				c->listen->pending--;
		}
		goto out;
	}
	if (c->state != CS_REQ_RCVD) {
		ret = -EINVAL;
		goto out;
	}
	if (conn_param) {
		if (conn_param->responder_resources != RDMA_MAX_RESP_RES)
			c->resp_res = conn_param->responder_resources;
		if (conn_param->initiator_depth != RDMA_MAX_INIT_DEPTH)
			c->init_depth = conn_param->initiator_depth;
		c->flow_control = conn_param->flow_control;
		c->srq_flag = conn_param->srq;
	}
	if (c->resp_res > c->dev->max_rd_atom)
		c->resp_res = c->dev->max_rd_atom;
	if (c->init_depth > c->dev->max_init_rd_atom)
		c->init_depth = c->dev->max_init_rd_atom;
	c->sq_psn = cma_random() & 0xffffff;
	ret = cma_qp_rtr_rts(c);
	if (ret) {
		cm_send_rej(c->dev, &id->route.addr.addr.ibaddr.dgid, c->local_comm_id, c->remote_comm_id,
			    CM_MSG_REQ, CM_REJ_CONSUMER_DEFINED, NULL, 0);
		c->state = CS_ERROR;
		if (c->listen)
			c->listen->pending--;
		goto out;
	}
	ret = cm_send_rep(c, conn_param);
	if (!ret) {
		if (c->listen)
			c->listen->pending--;
		wait = true;
	}
out:
	pthread_mutex_unlock(&g_cma.lock);
	if (ret)
		return err(-ret);
	return wait ? cma_complete(c) : 0;
}

static int reject(struct rdma_cm_id *id, const void *pdata, uint8_t len)
{
	struct cma_id *c = cma_of(id);
	int ret = 0;

	if (!c)
		return err(EINVAL);
	pthread_mutex_lock(&g_cma.lock);
	if (c->state == CS_REQ_RCVD) {
		if (len > CM_REJ_PDATA) {
			ret = -EINVAL;
		} else {
			cm_send_rej(c->dev, &id->route.addr.addr.ibaddr.dgid, c->local_comm_id,
				    c->remote_comm_id, CM_MSG_REQ, CM_REJ_CONSUMER_DEFINED, pdata, len);
			c->state = CS_IDLE;
			if (c->listen)
				c->listen->pending--;
		}
	} else if (c->state == CS_SIDR_RCVD) {
		ret = cm_send_sidr_rep(c, CM_SIDR_REJECT, 0, pdata, len);
		c->state = CS_IDLE;
		if (c->listen)
			c->listen->pending--;
	} else {
		ret = -EINVAL;
	}
	pthread_mutex_unlock(&g_cma.lock);
	return ret ? err(-ret) : 0;
}

int rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	return reject(id, private_data, private_data_len);
}

/* ECE: stored and echoed locally; not carried on the wire (our CM sends
 * the REQ/REP without ECE, as a peer without ECE support does), so the
 * remote ECE is always zeros. */
int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	return reject(id, private_data, private_data_len);
}

int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	if (!id || !ece || ece->comp_mask)
		return err(EINVAL);
	cma_of(id)->ece = *ece;
	return 0;
}

int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	if (!id || !ece)
		return err(EINVAL);
	memset(ece, 0, sizeof(*ece));
	return 0;
}

int rdma_establish(struct rdma_cm_id *id)
{
	struct cma_id *c = cma_of(id);
	int ret;

	if (!c || id->qp)
		return err(EINVAL);
	pthread_mutex_lock(&g_cma.lock);
	if (c->state != CS_REP_RCVD) {
		ret = -EINVAL;
	} else {
		ret = cm_send_rtu(c);
		if (!ret)
			c->state = CS_ESTABLISHED;
	}
	pthread_mutex_unlock(&g_cma.lock);
	return ret ? err(-ret) : 0;
}

int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	(void)event;
	return id ? 0 : err(EINVAL);
}

static bool event_queued_for(struct cma_id *c)
{
	struct cma_event *e;

	for (e = chan_of(c->id.channel)->head; e; e = e->next)
		if (e->owner == c)
			return true;
	return false;
}

int rdma_disconnect(struct rdma_cm_id *id)
{
	struct cma_id *c = cma_of(id);
	int ret = 0;
	bool wait = false;

	if (!c)
		return err(EINVAL);
	pthread_mutex_lock(&g_cma.lock);
	switch (c->state) {
	case CS_ESTABLISHED:
	case CS_REP_SENT:
	case CS_REP_RCVD:
		cma_qp_to_err(c);
		ret = cm_send_dreq(c);
		if (!ret) {
			c->state = CS_DREQ_SENT;
			wait = true;
		}
		break;
	case CS_DREQ_SENT:
		wait = event_queued_for(c);
		break;
	case CS_DISCONNECTED:
		cma_qp_to_err(c);
		wait = event_queued_for(c);
		break;
	case CS_UD_CONNECTED:
	case CS_SIDR_REQ_SENT:
		break;
	default:
		ret = -EINVAL;
	}
	pthread_mutex_unlock(&g_cma.lock);
	if (ret)
		return err(-ret);
	return wait ? cma_complete(c) : 0;
}

/* ---- multicast (RoCE: the MGID of IPv4 group a.b.c.d is ::ffff:a.b.c.d) ---- */

static int join(struct rdma_cm_id *id, struct sockaddr *addr, void *context, bool sendonly)
{
	struct cma_id *c = cma_of(id);
	struct cma_event *e;
	struct cma_mc *m;
	uint32_t grp;
	uint16_t port;
	int ret;

	if (!c || !addr)
		return err(EINVAL);
	if (ip_of(addr, &grp, &port) || !IN_MULTICAST(ntohl(grp)))
		return err(EINVAL);
	m = calloc(1, sizeof(*m));
	if (!m)
		return err(ENOMEM);
	pthread_mutex_lock(&g_cma.lock);
	if (!c->dev) {
		ret = resolve_locked(c, grp);
		if (ret)
			goto fail;
		if (c->state == CS_BOUND)
			c->state = CS_ADDR_RESOLVED;
	}
	memcpy(&m->addr, addr, addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
							  : sizeof(struct sockaddr_in));
	cma_gid_of_ip(&m->mgid, grp);
	m->context = context;
	if (id->qp && !sendonly) {
		ret = ibv_attach_mcast(id->qp, &m->mgid, 0);
		if (ret) {
			ret = -ret;
			goto fail;
		}
		m->attached = true;
	}
	m->next = c->mcs;
	c->mcs = m;
	if (cm_debug)
		fprintf(stderr, "rdmacm: joined multicast group %s\n",
			inet_ntop(AF_INET, &grp, (char[INET_ADDRSTRLEN]){ 0 }, INET_ADDRSTRLEN));
	e = cma_event_new(c, RDMA_CM_EVENT_MULTICAST_JOIN, 0);
	if (e) {
		cm_fill_ud_ah(c, &e->ev.param.ud.ah_attr, &m->mgid);
		e->ev.param.ud.qp_num = 0xffffff;
		e->ev.param.ud.qkey = RDMA_UDP_QKEY;
		e->ev.param.ud.private_data = context;
		cma_queue(c, e);
	}
	pthread_mutex_unlock(&g_cma.lock);
	return cma_complete(c);
fail:
	pthread_mutex_unlock(&g_cma.lock);
	free(m);
	return err(-ret);
}

int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	return join(id, addr, context, false);
}

int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *mc_join_attr,
			   void *context)
{
	if (!mc_join_attr || !(mc_join_attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS) ||
	    !(mc_join_attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) ||
	    mc_join_attr->join_flags >= RDMA_MC_JOIN_FLAG_RESERVED)
		return err(EINVAL);
	return join(id, mc_join_attr->addr, context,
		    mc_join_attr->join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER);
}

int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct cma_id *c = cma_of(id);
	struct cma_mc **pp, *m = NULL;
	uint32_t grp;
	uint16_t port;

	if (!c || !addr || ip_of(addr, &grp, &port))
		return err(EINVAL);
	pthread_mutex_lock(&g_cma.lock);
	for (pp = &c->mcs; *pp; pp = &(*pp)->next) {
		uint32_t g2;
		uint16_t p2;

		if (!ip_of((struct sockaddr *)&(*pp)->addr, &g2, &p2) && g2 == grp) {
			m = *pp;
			*pp = m->next;
			break;
		}
	}
	pthread_mutex_unlock(&g_cma.lock);
	if (!m)
		return err(EADDRNOTAVAIL);
	if (m->attached && id->qp)
		ibv_detach_mcast(id->qp, &m->mgid, 0);
	free(m);
	return 0;
}
