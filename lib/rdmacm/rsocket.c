/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* rsocket.c: the rsockets entry points (<rdma/rsocket.h>).
 *
 * rsockets (sockets over RDMA) are not implemented in this round: rsocket()
 * fails with EOPNOTSUPP, so no rsocket descriptor ever exists, and every
 * other call is given an ordinary file descriptor and passes it to the libc
 * call of the same name.  That is what the rdmacm-utils programs need: all
 * of them import rpoll through their common code, and Debian's binaries are
 * linked BIND_NOW, so each symbol must exist.  The iomap calls, which only
 * make sense on an rsocket, fail with EOPNOTSUPP. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <unistd.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <rdma/rsocket.h>

int rsocket(int domain, int type, int protocol)
{
	(void)domain;
	(void)type;
	(void)protocol;
	errno = EOPNOTSUPP;
	return -1;
}

int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	return bind(socket, addr, addrlen);
}

int rlisten(int socket, int backlog)
{
	return listen(socket, backlog);
}

int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	return accept(socket, addr, addrlen);
}

int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	return connect(socket, addr, addrlen);
}

int rshutdown(int socket, int how)
{
	return shutdown(socket, how);
}

int rclose(int socket)
{
	return close(socket);
}

ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	return recv(socket, buf, len, flags);
}

ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags, struct sockaddr *src_addr,
		  socklen_t *addrlen)
{
	return recvfrom(socket, buf, len, flags, src_addr, addrlen);
}

ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	return recvmsg(socket, msg, flags);
}

ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	return send(socket, buf, len, flags);
}

ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
		const struct sockaddr *dest_addr, socklen_t addrlen)
{
	return sendto(socket, buf, len, flags, dest_addr, addrlen);
}

ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	return sendmsg(socket, msg, flags);
}

ssize_t rread(int socket, void *buf, size_t count)
{
	return read(socket, buf, count);
}

ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	return readv(socket, iov, iovcnt);
}

ssize_t rwrite(int socket, const void *buf, size_t count)
{
	return write(socket, buf, count);
}

ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	return writev(socket, iov, iovcnt);
}

int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	return poll(fds, nfds, timeout);
}

int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds, struct timeval *timeout)
{
	return select(nfds, readfds, writefds, exceptfds, timeout);
}

int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	return getpeername(socket, addr, addrlen);
}

int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	return getsockname(socket, addr, addrlen);
}

int rsetsockopt(int socket, int level, int optname, const void *optval, socklen_t optlen)
{
	if (level == SOL_RDMA) {
		errno = ENOTSOCK;       /* an rsocket option on a plain descriptor */
		return -1;
	}
	return setsockopt(socket, level, optname, optval, optlen);
}

int rgetsockopt(int socket, int level, int optname, void *optval, socklen_t *optlen)
{
	if (level == SOL_RDMA) {
		errno = ENOTSOCK;
		return -1;
	}
	return getsockopt(socket, level, optname, optval, optlen);
}

int rfcntl(int socket, int cmd, ...)
{
	va_list ap;
	long arg;

	va_start(ap, cmd);
	arg = va_arg(ap, long);
	va_end(ap);
	return fcntl(socket, cmd, arg);
}

off_t riomap(int socket, void *buf, size_t len, int prot, int flags, off_t offset)
{
	(void)socket; (void)buf; (void)len; (void)prot; (void)flags; (void)offset;
	errno = EOPNOTSUPP;
	return -1;
}

int riounmap(int socket, void *buf, size_t len)
{
	(void)socket; (void)buf; (void)len;
	errno = EOPNOTSUPP;
	return -1;
}

size_t riowrite(int socket, const void *buf, size_t count, off_t offset, int flags)
{
	(void)socket; (void)buf; (void)count; (void)offset; (void)flags;
	errno = EOPNOTSUPP;
	return 0;
}
