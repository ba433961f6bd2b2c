/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the verbs test tools (mrc_verify, mrc_nccl, mrc_step) share: their
 * clocks and the TCP control connection over which their sides meet.
 * Failures are returned, not reported: each tool dies in its own format
 * (its RESULT line is what the VM tests read).
 */
#ifndef MRC_CTL_H
#define MRC_CTL_H

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static inline double mrc_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* wall clock: for start times agreed between hosts */
static inline double mrc_wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline void mrc_tcp_nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/*
 * Connect to HOST:PORT, retrying for TIMEOUT_S seconds because the other
 * side may not listen yet.  Returns the socket (TCP_NODELAY set), or -1
 * with *why saying what failed.
 */
static inline int mrc_tcp_connect(const char *host, int port, double timeout_s,
				  const char **why)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res, *ai;
	double until = mrc_now_s() + timeout_s;
	char sport[16];
	int fd = -1, err;

	snprintf(sport, sizeof(sport), "%d", port);
	err = getaddrinfo(host, sport, &hints, &res);
	if (err) {
		*why = gai_strerror(err);
		return -1;
	}
	for (;;) {
		for (ai = res; ai && fd < 0; ai = ai->ai_next) {
			fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
			if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen)) {
				err = errno;
				close(fd);
				fd = -1;
			}
		}
		if (fd >= 0 || mrc_now_s() > until)
			break;
		usleep(200000);
	}
	freeaddrinfo(res);
	if (fd < 0)
		*why = err ? strerror(err) : "timed out";
	else
		mrc_tcp_nodelay(fd);
	return fd;
}

/* A listening socket on [::]:PORT that takes IPv4 too; -1 and errno on failure. */
static inline int mrc_tcp_listen(int port, int backlog)
{
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_port = htons(port),
				   .sin6_addr = IN6ADDR_ANY_INIT };
	int ls = socket(AF_INET6, SOCK_STREAM, 0), one = 1, zero = 0;

	if (ls < 0)
		return -1;
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(ls, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, backlog)) {
		int e = errno;

		close(ls);
		errno = e;
		return -1;
	}
	return ls;
}

/* One connection from LS, TCP_NODELAY set; -1 and errno on failure. */
static inline int mrc_tcp_accept(int ls)
{
	int fd = accept(ls, NULL, NULL);

	if (fd >= 0)
		mrc_tcp_nodelay(fd);
	return fd;
}

/*
 * The one control connection of a two-sided tool: connect to SERVER, or
 * with SERVER NULL accept one connection on PORT.  Returns the socket, or
 * -1 with *why saying what failed.
 */
static inline int mrc_ctl_open(const char *server, int port, double timeout_s,
			       const char **why)
{
	int ls, fd;

	if (server)
		return mrc_tcp_connect(server, port, timeout_s, why);
	ls = mrc_tcp_listen(port, 1);
	if (ls < 0) {
		*why = strerror(errno);
		return -1;
	}
	fd = mrc_tcp_accept(ls);
	if (fd < 0)
		*why = strerror(errno);
	close(ls);
	return fd;
}

/*
 * Write (OUT) or read exactly LEN bytes.  Returns 0, or -1 with errno set;
 * errno ECONNRESET also when a read finds the connection closed.
 */
static inline int mrc_xfer(int fd, void *buf, size_t len, bool out)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = out ? write(fd, p, len) : read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			errno = ECONNRESET;
		if (n <= 0)
			return -1;
		p += n;
		len -= n;
	}
	return 0;
}

#endif /* MRC_CTL_H */
