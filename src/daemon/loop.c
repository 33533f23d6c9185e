/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The event loop: one io_uring for everything the daemon waits on --
 * accept on the socket, recv and send on each client, a read on a
 * signalfd (SIGTERM, SIGINT) and a read on the workers' eventfd.  Each
 * SQE's user_data points at a struct loop_io that says what completed.
 *
 * A connection is freed only when none of its SQEs is in flight, since
 * the kernel writes into its buffers until the completion arrives.
 *
 * SIGTERM: stop accepting and remove the socket, cancel every job and
 * wait for the workers (each 2 MB unit finishes: nothing is left half
 * moved), send the replies still queued (2 s at most), close, return.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>

#include "daemon/conn.h"
#include "daemon/metrics-file.h"
#include "daemon/tiers.h"
#include "util/size.h"

#define LOOP_ENTRIES	512
#define STOP_GRACE_S	2
#define METRICS_STOP_MS	2000	/* the last metrics file's write, at most */

struct loop {
	struct memmigd *d;
	struct io_uring ring;
	int sig_fd;
	struct signalfd_siginfo si;
	uint64_t wakes;
	struct loop_io accept_io, pause_io, sig_io, wake_io, cancel_io;
	bool accept_busy, pause_busy, sig_busy, wake_busy;
	struct __kernel_timespec pause_ts;	/* read when submitted */
	time_t emfile_logged;			/* rate of that warning */
	unsigned long emfile_count;
	unsigned int cancels_busy;
	struct conn *conns;
	unsigned int nconns;
	bool stopping;
	time_t stop_deadline;
	struct metrics_file *metrics_file;	/* --metrics-file's writer */
	time_t metrics_written;			/* CLOCK_MONOTONIC s */
	bool notify;				/* under systemd: STATUS= */
	time_t status_sent;			/* CLOCK_MONOTONIC s */
	unsigned int status_jobs[2];		/* queued, running: as sent */
};

static struct io_uring_sqe *get_sqe(struct loop *l)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&l->ring);

	/* Full: hand the queued SQEs to the kernel to make room. */
	while (!sqe) {
		io_uring_submit(&l->ring);
		sqe = io_uring_get_sqe(&l->ring);
	}
	return sqe;
}

static void arm_accept(struct loop *l)
{
	struct io_uring_sqe *sqe = get_sqe(l);

	io_uring_prep_accept(sqe, l->d->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	io_uring_sqe_set_data(sqe, &l->accept_io);
	l->accept_busy = true;
}

/*
 * Out of file descriptors (EMFILE, ENFILE): the next accept would fail at
 * once again, so none for 100 ms -- a timeout in the ring, not a sleep of
 * the loop thread, which every client waits on.  Said once in 10 s.
 */
static void pause_accept(struct loop *l, int err)
{
	struct io_uring_sqe *sqe;
	time_t now = time(NULL);

	l->emfile_count++;
	if (now - l->emfile_logged >= 10) {
		util_log(LOG_WARNING, "accept: %s (%lu times): no new clients for a while",
		     strerror(-err), l->emfile_count);
		l->emfile_logged = now;
		l->emfile_count = 0;
	}
	sqe = get_sqe(l);
	l->pause_ts = (struct __kernel_timespec){ .tv_nsec = 100 * 1000 * 1000 };
	io_uring_prep_timeout(sqe, &l->pause_ts, 0, 0);
	io_uring_sqe_set_data(sqe, &l->pause_io);
	l->pause_busy = true;
}

static void arm_read(struct loop *l, int fd, void *buf, unsigned int len,
		     struct loop_io *io, bool *busy)
{
	struct io_uring_sqe *sqe = get_sqe(l);

	io_uring_prep_read(sqe, fd, buf, len, 0);
	io_uring_sqe_set_data(sqe, io);
	*busy = true;
}

static void cancel(struct loop *l, void *target)
{
	struct io_uring_sqe *sqe = get_sqe(l);

	io_uring_prep_cancel(sqe, target, 0);
	io_uring_sqe_set_data(sqe, &l->cancel_io);
	l->cancels_busy++;
}

static void conn_close(struct loop *l, struct conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		l->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	l->nconns--;
	l->d->clients = l->nconns;
	if (c->waiting)
		plans_forget(c);
	if (c->subscribed)
		events_unsubscribe(l->d->events, c->cred.uid);
	util_log(LOG_DEBUG, "client pid %d uid %u: closed", c->cred.pid, c->cred.uid);
	conn_free(c);
}

/* After any event of a connection: what it waits for next, or its end. */
static void conn_step(struct loop *l, struct conn *c)
{
	struct io_uring_sqe *sqe;

	if (!c->closing && !c->eof)
		conn_process(l->d, c);
	if (conn_out_pending(c) && !c->send_busy) {
		const char *buf;
		size_t n = conn_out_next(c, &buf);

		sqe = get_sqe(l);
		io_uring_prep_send(sqe, c->fd, buf, n, MSG_NOSIGNAL);
		io_uring_sqe_set_data(sqe, &c->send_io);
		c->send_busy = true;
	}
	if (c->closing || c->eof) {
		if (c->recv_busy && !c->cancelling) {
			cancel(l, &c->recv_io);
			c->cancelling = true;
		}
		/* A client that only stopped writing still gets its move's reply. */
		if (!c->recv_busy && !c->send_busy && !conn_out_pending(c) &&
		    (c->closing || !c->waiting))
			conn_close(l, c);
		return;
	}
	/* While a move is planned, the client's next lines wait unread. */
	if (!c->recv_busy && !c->waiting && conn_out_pending(c) < CONN_OUT_HIGH) {
		sqe = get_sqe(l);
		io_uring_prep_recv(sqe, c->fd, c->in + c->in_len, PROTO_MAX_LINE - c->in_len, 0);
		io_uring_sqe_set_data(sqe, &c->recv_io);
		c->recv_busy = true;
	}
}

/* Best effort, on a connection refused at once: the line fits any socket
 * buffer. */
static void refuse(int fd, const char *why)
{
	char line[160];
	int n = snprintf(line, sizeof(line), "{\"ok\":false,\"error\":\"EBUSY\",\"errno\":16,"
			 "\"message\":\"%s\"}\n", why);

	if (send(fd, line, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		util_log(LOG_DEBUG, "telling a client it is one too many: %s", strerror(errno));
	close(fd);
}

/*
 * Room for one more client of uid?  Of MEMMIGD_MAX_CLIENTS, the last
 * MEMMIGD_ROOT_CLIENTS are root's, and one uid other than root has at most
 * MEMMIGD_USER_CLIENTS: idle connections of one user lock out neither
 * root nor the others.
 */
static const char *no_room(struct loop *l, uid_t uid)
{
	unsigned int mine = 0;

	if (l->nconns >= MEMMIGD_MAX_CLIENTS)
		return "too many clients";
	if (uid == 0)
		return NULL;
	if (l->nconns >= MEMMIGD_MAX_CLIENTS - MEMMIGD_ROOT_CLIENTS)
		return "too many clients: the last places are root's";
	for (struct conn *c = l->conns; c; c = c->next)
		mine += c->cred.uid == uid;
	return mine >= MEMMIGD_USER_CLIENTS ? "too many clients of this uid" : NULL;
}

/* Clients silent for the idle timeout are closed: a connection held open
 * and unused is a place taken from the others. */
static void close_idle(struct loop *l)
{
	time_t now = time(NULL), limit = (time_t)l->d->opts.idle_timeout_s;

	if (!limit || l->stopping)
		return;
	for (struct conn *c = l->conns, *next; c; c = next) {
		next = c->next;
		/* A subscriber waits for events, however long that takes. */
		if (!c->closing && !c->subscribed && now - c->last_active >= limit) {
			util_log(LOG_INFO, "client pid %d uid %u: idle for %lld s, closed",
			     c->cred.pid, c->cred.uid, (long long)(now - c->last_active));
			c->closing = true;
			conn_step(l, c);
		}
	}
}

/* A move's reply, planned off the loop thread: out in its place, and the
 * client's next requests go on. */
static void deliver(void *opaque, struct conn *c, struct json_object *reply)
{
	struct loop *l = opaque;

	c->waiting = false;
	c->last_active = time(NULL);
	ops_account(l->d, &c->cred, PROTO_OP_MOVE, reply);
	if (conn_queue(c, reply))
		c->closing = true;
	if (!c->closing)
		conn_process(l->d, c);
	conn_step(l, c);
}

static void on_accept(struct loop *l, int res)
{
	struct client_cred cred;
	const char *why;
	struct conn *c;
	int rc;

	l->accept_busy = false;
	if (l->stopping)
		goto out;
	if (res == -EMFILE || res == -ENFILE) {
		pause_accept(l, res);
		goto out;
	}
	if (res < 0) {
		if (res != -EINTR && res != -ECONNABORTED)
			util_log(LOG_WARNING, "accept: %s", strerror(-res));
		goto rearm;
	}
	rc = auth_peer(res, &cred);
	if (rc) {
		util_log(LOG_WARNING, "new client: %s", strerror(-rc));
		close(res);
		goto rearm;
	}
	why = no_room(l, cred.uid);
	if (why) {
		ops_refused(l->d, &cred, "connect", EBUSY, why);
		refuse(res, why);
		goto rearm;
	}
	c = conn_new(res, &cred);
	if (!c) {
		util_log(LOG_WARNING, "new client: %s", strerror(ENOMEM));
		close(res);
		goto rearm;
	}
	c->last_active = time(NULL);
	c->next = l->conns;
	if (c->next)
		c->next->prev = c;
	l->conns = c;
	l->nconns++;
	l->d->clients = l->nconns;
	util_log(LOG_DEBUG, "client pid %d uid %u: connected", cred.pid, cred.uid);
	conn_step(l, c);
rearm:
	arm_accept(l);
out:
	return;
}

static void on_recv(struct loop *l, struct conn *c, int res)
{
	c->recv_busy = false;
	c->cancelling = false;
	if (res > 0) {
		c->in_len += (size_t)res;
		c->last_active = time(NULL);
	}
	else if (res != -EINTR)
		c->eof = true;
	if (res < 0 && res != -ECANCELED && res != -EINTR)
		conn_out_drop(c);	/* the client is gone: nobody will read them */
	/* Lines already received are still answered after EOF ("half a
	 * line then disconnect" gets nothing: it is not a request). */
	if (res >= 0 && !c->closing)
		conn_process(l->d, c);
	conn_step(l, c);
}

static void on_send(struct loop *l, struct conn *c, int res)
{
	c->send_busy = false;
	if (res < 0) {
		conn_out_drop(c);
		c->closing = true;
	} else {
		conn_out_sent(c, (size_t)res);
		c->last_active = time(NULL);
	}
	conn_step(l, c);
}

/* Clients that did not read their last replies in time. */
static void stop_late(struct loop *l)
{
	for (struct conn *c = l->conns; c; c = c->next)
		if (c->send_busy && !c->cancelling) {
			shutdown(c->fd, SHUT_RDWR);
			cancel(l, &c->send_io);
			c->cancelling = true;
		}
}

/*
 * A subscriber whose unsent events passed EVENTS_MAX_BACKLOG does not
 * read: it is closed (what it had queued dropped) rather than let its
 * events grow without end or hold the loop.  One that reads is not: the
 * backlog holds two events of the longest, EVENTS_MAX_EVENT, on top of
 * what its socket buffer holds.
 */
static void drop_subscriber(struct loop *l, struct conn *c)
{
	char max[32];

	util_log(LOG_WARNING, "client pid %d uid %u: subscriber dropped: more than %s of "
		 "events unread", c->cred.pid, c->cred.uid,
		 util_size_human(EVENTS_MAX_BACKLOG, max, sizeof(max)));
	metrics_subscriber_dropped(l->d->metrics);
	conn_out_drop(c);
	c->closing = true;
	/* A send in flight to a client that does not read ends now. */
	shutdown(c->fd, SHUT_RDWR);
}

/* The events posted since the last turn, to each subscriber that may see
 * them (root's see all, the others their uid's jobs and the domains). */
static void flush_events(struct loop *l)
{
	bool any = false;
	size_t len;
	uid_t uid;
	char *line;

	while ((line = events_take(l->d->events, &uid, &len))) {
		for (struct conn *c = l->conns; c; c = c->next) {
			if (!c->subscribed || c->closing ||
			    (uid != EVENTS_ANYONE && c->cred.uid != 0 && c->cred.uid != uid))
				continue;
			any = true;
			if (conn_out_pending(c) + len > EVENTS_MAX_BACKLOG)
				drop_subscriber(l, c);
			else if (conn_queue_line(c, line, len))
				c->closing = true;
		}
		free(line);
	}
	for (struct conn *c = l->conns, *next; any && c; c = next) {
		next = c->next;
		if (c->subscribed)
			conn_step(l, c);
	}
}

/* The body of memmigd's own event, as it stops. */
static struct json_object *stop_json(int sig)
{
	struct json_object *o = json_object_new_object();
	char name[16];

	snprintf(name, sizeof(name), "SIG%s", sigabbrev_np(sig));
	json_object_object_add(o, "state", json_object_new_string("stopping"));
	json_object_object_add(o, "signal", json_object_new_string(name));
	return o;
}

static void begin_stop(struct loop *l, int sig)
{
	util_log(LOG_INFO, "%s: stopping", strsignal(sig));
	l->stopping = true;
	notify_send("STOPPING=1\nSTATUS=stopping: waiting for the running jobs' units");
	/* A socket systemd made is systemd's: it stays for the next start. */
	if (!l->d->activated)
		sock_remove(l->d->opts.socket);
	if (l->accept_busy)
		cancel(l, &l->accept_io);
	if (l->pause_busy)
		cancel(l, &l->pause_io);
	io_uring_submit(&l->ring);
	/* Blocks until each running job finished its units. */
	jobs_shutdown(l->d->jobs);
	l->stop_deadline = time(NULL) + STOP_GRACE_S;
	/* Subscribers hear how each job ended, then that memmigd stops, before
	 * their connections close: closing ones get no events, but send what
	 * they hold (STOP_GRACE_S at most). */
	events_post(l->d->events, EVENTS_ANYONE, "memmigd", "memmigd", stop_json(sig));
	flush_events(l);
	for (struct conn *c = l->conns, *next; c; c = next) {
		next = c->next;
		c->closing = true;
		conn_step(l, c);
	}
}

static time_t mono_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec;
}

/*
 * --metrics-file: rewritten when a counter changed, at most once a
 * second; true while a change waits for its second (the loop then wakes
 * in time to write it).  The loop renders the text; its writer's thread
 * writes it (metrics-file.c): nothing in the file's directory, which
 * others may write, can make the loop wait.
 */
static bool write_metrics(struct loop *l, bool now)
{
	struct memmigd *d = l->d;
	struct metrics_now m;
	char *text;

	if (!l->metrics_file || (!metrics_dirty(d->metrics) && !tiers_running(d->tiers)))
		return false;
	if (!now && mono_s() - l->metrics_written < 1)
		return true;
	ops_metrics_now(d, &m);
	text = metrics_file_text(d->metrics, &m);
	if (text)
		metrics_file_post(l->metrics_file, text);
	l->metrics_written = mono_s();
	return false;
}

/*
 * Under systemd: STATUS= follows the jobs ("systemctl status" shows it),
 * at most once a second; true while a change waits for its second.
 */
static bool report_status(struct loop *l)
{
	unsigned int q, r;

	if (!l->notify || l->stopping)
		return false;
	jobs_count(l->d->jobs, &q, &r);
	if (q == l->status_jobs[0] && r == l->status_jobs[1])
		return false;
	if (mono_s() - l->status_sent < 1)
		return true;
	notify_send("STATUS=%u job%s running, %u queued; %u client%s", r, r == 1 ? "" : "s", q,
		    l->nconns, l->nconns == 1 ? "" : "s");
	l->status_sent = mono_s();
	l->status_jobs[0] = q;
	l->status_jobs[1] = r;
	return false;
}

static void handle(struct loop *l, struct io_uring_cqe *cqe)
{
	struct loop_io *io = io_uring_cqe_get_data(cqe);
	int res = cqe->res;

	switch (io->kind) {
	case IO_ACCEPT:
		on_accept(l, res);
		break;
	case IO_ACCEPT_PAUSE:
		l->pause_busy = false;
		if (!l->stopping)
			arm_accept(l);
		break;
	case IO_SIGNAL:
		l->sig_busy = false;
		if (res == (int)sizeof(l->si) && !l->stopping)
			begin_stop(l, (int)l->si.ssi_signo);
		if (!l->stopping)
			arm_read(l, l->sig_fd, &l->si, sizeof(l->si), &l->sig_io, &l->sig_busy);
		break;
	case IO_WAKE:
		l->wake_busy = false;
		jobs_reap(l->d->jobs);
		plans_collect(deliver, l);
		if (!l->stopping)
			arm_read(l, l->d->wake_fd, &l->wakes, sizeof(l->wakes), &l->wake_io,
				 &l->wake_busy);
		break;
	case IO_RECV:
		on_recv(l, io->conn, res);
		break;
	case IO_SEND:
		on_send(l, io->conn, res);
		break;
	case IO_CANCEL:
		l->cancels_busy--;
		break;
	}
}

static bool finished(struct loop *l)
{
	if (!l->stopping || l->nconns || l->accept_busy || l->pause_busy || plans_pending())
		return false;
	/* Last, the reads on the signalfd and the eventfd. */
	if (l->sig_busy || l->wake_busy) {
		if (l->cancels_busy == 0) {
			if (l->sig_busy)
				cancel(l, &l->sig_io);
			if (l->wake_busy)
				cancel(l, &l->wake_io);
		}
		return false;
	}
	return l->cancels_busy == 0;
}

/* Why there is no ring, in terms an operator can act on. */
static void uring_refused(int rc)
{
	char v[16] = "";
	FILE *f = fopen("/proc/sys/kernel/io_uring_disabled", "re");

	if (f && !fgets(v, sizeof(v), f))
		v[0] = '\0';
	if (f)
		fclose(f);
	v[strcspn(v, "\n")] = '\0';
	util_log(LOG_ERR, "io_uring_setup: %s: memmigd waits on its socket and clients "
	     "through io_uring, which %s; allow it (sysctl kernel.io_uring_disabled=0, "
	     "or io_uring_setup in the container's seccomp profile)", strerror(-rc),
	     v[0] && strcmp(v, "0") ? "this host has off (kernel.io_uring_disabled is set)" :
	     rc == -EPERM || rc == -ENOSYS ? "a seccomp filter or the kernel refuses here" :
	     "could not be set up");
}

static int loop_setup(struct loop *l, struct memmigd *d)
{
	sigset_t set;
	int rc;

	*l = (struct loop){ .d = d, .sig_fd = -1 };
	l->accept_io.kind = IO_ACCEPT;
	l->pause_io.kind = IO_ACCEPT_PAUSE;
	l->sig_io.kind = IO_SIGNAL;
	l->wake_io.kind = IO_WAKE;
	l->cancel_io.kind = IO_CANCEL;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	l->sig_fd = signalfd(-1, &set, SFD_CLOEXEC);
	if (l->sig_fd < 0)
		return -errno;
	rc = io_uring_queue_init(LOOP_ENTRIES, &l->ring, 0);
	if (rc) {
		uring_refused(rc);
		close(l->sig_fd);
		return rc;
	}
	if (d->opts.metrics_file[0]) {
		rc = metrics_file_start(d->opts.metrics_file, &l->metrics_file);
		if (rc) {
			util_log(LOG_ERR, "the metrics file's writer: %s", strerror(-rc));
			io_uring_queue_exit(&l->ring);
			close(l->sig_fd);
			return rc;
		}
	}
	arm_accept(l);
	arm_read(l, l->sig_fd, &l->si, sizeof(l->si), &l->sig_io, &l->sig_busy);
	arm_read(l, d->wake_fd, &l->wakes, sizeof(l->wakes), &l->wake_io, &l->wake_busy);
	return 0;
}

int loop_run(struct memmigd *d)
{
	struct __kernel_timespec tick = { .tv_nsec = 200 * 1000 * 1000 }, second = { .tv_sec = 1 };
	struct loop l;
	int rc = loop_setup(&l, d);

	if (rc)
		return rc;
	util_log(LOG_INFO, "listening on %s%s", d->opts.socket,
		 d->activated ? " (the socket systemd made)" : "");
	write_metrics(&l, true);
	l.notify = getenv("NOTIFY_SOCKET") != NULL;
	notify_send("READY=1\nSTATUS=listening on %s\nMAINPID=%d", d->opts.socket, getpid());
	while (!finished(&l)) {
		struct io_uring_cqe *cqe;
		unsigned int head, n = 0;
		bool due = write_metrics(&l, false);

		due |= report_status(&l);

		/* Woken each second while clients may go idle, or the metrics
		 * file or systemd's status waits for its next write. */
		rc = io_uring_submit_and_wait_timeout(&l.ring, &cqe, 1, l.stopping ? &tick :
						      (d->opts.idle_timeout_s && l.nconns) ||
						      due ? &second : NULL, NULL);
		if (rc < 0 && rc != -ETIME && rc != -EINTR) {
			util_log(LOG_ERR, "io_uring: %s", strerror(-rc));
			break;
		}
		io_uring_for_each_cqe(&l.ring, head, cqe) {
			handle(&l, cqe);
			n++;
		}
		io_uring_cq_advance(&l.ring, n);
		flush_events(&l);
		if (l.stopping && time(NULL) >= l.stop_deadline)
			stop_late(&l);
		/* Stopping, the eventfd is no longer read: plans that end
		 * now are collected on the tick. */
		if (l.stopping)
			plans_collect(deliver, &l);
		close_idle(&l);
	}
	write_metrics(&l, true);
	metrics_file_stop(l.metrics_file, METRICS_STOP_MS);
	io_uring_queue_exit(&l.ring);
	close(l.sig_fd);
	while (l.conns)
		conn_close(&l, l.conns);
	return rc < 0 && rc != -ETIME && rc != -EINTR ? rc : 0;
}
