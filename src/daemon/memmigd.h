/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmigd's parts and how they meet.  One thread runs the io_uring loop
 * (loop.c) and every request (ops.c); each job is a libmemmig move
 * (memmig_move_*) whose threads plan and run it and wake the loop through
 * an eventfd when a plan or a run ends; the libvirt watcher (domains.c)
 * submits jobs from a thread of its own.
 */
#ifndef MEMMIGD_H
#define MEMMIGD_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include <sys/un.h>

#include <json-c/json.h>

#include "memmig.h"
#include "util/log.h"
#include "daemon/domains.h"
#include "daemon/events.h"
#include "daemon/metrics.h"
#include "proto/proto.h"

/* MEMMIGD_CONFIG_DEFAULT is $(sysconfdir)/memmig/memmigd.conf (Makefile.am). */
#define MEMMIGD_MAX_CLIENTS	256
#define MEMMIGD_ROOT_CLIENTS	16	/* of those, kept for root */
#define MEMMIGD_USER_CLIENTS	64	/* at most, one uid other than root */
#define MEMMIGD_KEEP_FINISHED	64	/* finished jobs still listed, per uid */
#define MEMMIGD_KEEP_FINISHED_ALL 1024	/* ... and of all uids */
#define MEMMIGD_IDLE_TIMEOUT_S	300	/* a client silent this long is closed */

/* ---- options and configuration (options.c, config.c) ---- */
struct memmigd_opts {
	char socket[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char group[64];			/* "": root's group */
	char config[256];
	char libvirt_uri[256];
	bool foreground;
	bool no_libvirt;
	unsigned int max_jobs_per_node;	/* running at once per target node */
	unsigned int max_jobs;		/* queued + running */
	unsigned int idle_timeout_s;	/* 0: none */
	char metrics_file[256];		/* "": none */
	char state_file[256];		/* "": beside the socket (state.h) */
	int verbose;
};

void opts_defaults(struct memmigd_opts *o);
/* One "key = value" setting, the same keys as the long options;
 * 0 or -EINVAL with a message in err. */
int opts_set(struct memmigd_opts *o, const char *key, const char *value,
	     char *err, size_t errlen);
/* Reads a configuration file; a missing one is fine when missing_ok.
 * 0 or -errno, with "file:line: what" in err. */
int config_load(struct memmigd_opts *o, const char *path, bool missing_ok,
		char *err, size_t errlen);

/* ---- the socket (sock.c) ---- */
int sock_listen(const char *path, const char *group, int *out);
void sock_remove(const char *path);

/* ---- systemd (notify.c) ---- */
/* sd_notify: one datagram to $NOTIFY_SOCKET ("READY=1"); 0 when there is
 * none, -errno (logged) when it could not be sent. */
int notify_send(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Socket activation: 1 with *fd the socket systemd passed (fd 3), 0 when
 * none was passed to this process, -errno when what was passed is not
 * one listening AF_UNIX stream socket. */
int notify_listen_fd(int *fd);

/* ---- authorization (auth.c) ---- */
/* The client as it was when it connected (SO_PEERCRED): nothing read
 * later of its pid, which may have exec'd a setuid program since. */
struct client_cred {
	pid_t pid;
	uid_t uid;
	gid_t gid;
};

int auth_peer(int fd, struct client_cred *out);
/* An fd on /proc/PID, the handle on that process (not a later one with
 * its pid); -ESRCH. */
int auth_target_open(int pid);
/* 0 or -EPERM (msg says why) or -ESRCH: the move_pages(2) rule. */
int auth_may_move(const struct client_cred *c, int procfd, int pid,
		  char *msg, size_t len);
/* Whether the process behind procfd still exists. */
bool auth_target_alive(int procfd);

/*
 * A request's hold on its process, for as long as memmigd acts for it: a
 * job from its check to its end, a tiering from tier_set to its end.  Who
 * asked (as of its connect) and the process (an fd on its /proc/PID, which
 * names it and no later process with its pid); every look at the process
 * goes through procfd, and the move_pages(2) rule is applied again on it
 * (auth_pin_check()) where memmigd would act (auth.c).
 */
struct auth_pin {
	struct client_cred cred;
	int pid;
	int procfd;		/* -1 once released */
	pthread_mutex_t lock;	/* denied and why: several moves' threads ask */
	int denied;		/* the first refusal's -errno, for good */
	char why[256];		/* and what it said */
};

/* Opens /proc/PID and checks that c may move it: 0 with *out, or -errno
 * (-ESRCH, -EPERM) with msg. */
int auth_pin_new(const struct client_cred *c, int pid, struct auth_pin **out, char *msg,
		 size_t len);
/* The rule again, on the pinned process: 0, or -EPERM or -ESRCH; once
 * refused, always (auth_pin_denied() says why). */
int auth_pin_check(struct auth_pin *p);
/* auth_pin_check() as libmemmig's memmig_move_opts.check (the move's
 * threads) and the tiering engine's. */
int auth_pin_check_fn(void *pin);
/* The refusal, or 0; its message into why. */
int auth_pin_denied(struct auth_pin *p, char *why, size_t len);
/* The pinned process still exists (its pid is still its own). */
bool auth_pin_alive(const struct auth_pin *p);
/* Closes the fd: nothing will be done to the process any more. */
void auth_pin_release(struct auth_pin *p);
void auth_pin_free(struct auth_pin *p);

/* ---- jobs (jobs.c, job-json.c) ---- */
struct jobs;

struct job_spec {
	int pid;
	const char *domain;	/* NULL: by pid */
	int to_node;
	int strategy;
	unsigned int threads;
	uid_t uid;		/* the owner */
	struct auth_pin *pin;	/* the client and process; taken over by
				 * jobs_submit() */
};

int jobs_new(struct memmig_ctx *ctx, struct domains *dom, unsigned int per_node,
	     unsigned int max, int wake_fd, struct jobs **out);
/*
 * Whether uid may have one more job (checked again on submit): 0, or
 * -EBUSY with why in msg.  Of max_jobs queued or running, a uid other than
 * root has at most a quarter, and all of them together leave an eighth to
 * root: no user can fill the table.
 */
int jobs_admit(struct jobs *j, uid_t uid, char *msg, size_t len);
/* Takes mv (planned) and spec->pin in every case; *job_json (may be
 * NULL) gets the job.  -EBUSY over a limit, -ESHUTDOWN while stopping. */
int jobs_submit(struct jobs *j, struct memmig_move *mv, const struct job_spec *spec,
		struct json_object **job_json);
struct json_object *jobs_list_json(struct jobs *j, uid_t uid);
/* -ESRCH no such job, -EPERM not the client's. */
int jobs_get_json(struct jobs *j, uint64_t id, uid_t uid, struct json_object **out);
int jobs_cancel(struct jobs *j, uint64_t id, uid_t uid, struct json_object **out);
/* On the loop thread after a wake: ends the jobs whose move ended,
 * starts queued ones in their place, drops old jobs
 * (the oldest finished ones of a uid beyond MEMMIGD_KEEP_FINISHED, so that
 * one user's jobs never push out another's; of all beyond ..._ALL). */
void jobs_reap(struct jobs *j);
/* Cancels every job and waits for the moves: each unit finishes. */
void jobs_shutdown(struct jobs *j);
void jobs_free(struct jobs *j);
/* Counts and events of the jobs' changes go there (either may be NULL). */
void jobs_observe(struct jobs *j, struct metrics *m, struct events *e);
struct state;
/* Ids go on from the last memmigd's, and jobs are kept in st. */
void jobs_persist(struct jobs *j, struct state *st);
void jobs_count(struct jobs *j, unsigned int *queued, unsigned int *running);
/* The id of a queued or running job of process pid, or 0.  A process's
 * pages move by one thing at a time: its jobs one after the other, and
 * not while a tiering moves them (ops.c and ops-tier.c refuse those).
 * j may be NULL (not made yet): 0. */
uint64_t jobs_moving(struct jobs *j, int pid);

/* ---- the daemon (main.c) and requests (ops.c) ---- */
struct memmigd {
	struct memmigd_opts opts;
	struct memmig_ctx *ctx;
	struct domains *domains;
	struct jobs *jobs;
	struct metrics *metrics;
	struct events *events;
	struct tiers *tiers;
	struct state *state;		/* what a restart finds (state.h) */
	int listen_fd;
	bool activated;			/* listen_fd from systemd: not ours to unlink */
	int wake_fd;			/* eventfd: moves wake the loop */
	struct timespec started;	/* CLOCK_MONOTONIC */
	unsigned int clients;		/* the loop's, for status and metrics */
};

/* What status and the metrics show beside the counters. */
/* ops-tier.c: the tiering ops (op_fn). */
struct proto_request;
struct json_object *op_tier_set(struct memmigd *d, const struct client_cred *c,
				const struct proto_request *req);
struct json_object *op_tier_clear(struct memmigd *d, const struct client_cred *c,
				  const struct proto_request *req);
struct json_object *op_tiers(struct memmigd *d, const struct client_cred *c,
			     const struct proto_request *req);
struct json_object *op_tier(struct memmigd *d, const struct client_cred *c,
			    const struct proto_request *req);

void ops_metrics_now(struct memmigd *d, struct metrics_now *now);
/* A request answered: counted, and logged when refused (rate-limited:
 * a flood of bad requests cannot fill the journal). */
void ops_account(struct memmigd *d, const struct client_cred *c, int op,
		 struct json_object *reply);
/* A refusal (what: the op, "connect"), counted by reason and logged the
 * same way. */
void ops_refused(struct memmigd *d, const struct client_cred *c, const char *what, int err,
		 const char *msg);

struct conn;
/*
 * One request line: the reply (new reference), or NULL when it comes
 * later: a move for conn is planned on the move's thread (plans.c), and
 * its reply handed over by plans_collect().
 */
struct json_object *ops_handle(struct memmigd *d, const struct client_cred *c,
			       const char *line, size_t len, struct conn *conn);

/* ---- moves planned off the loop thread (plans.c), on the loop thread ---- */
/* What becomes of a move whose plan ended with rc: the reply.  Takes mv
 * and spec->pin. */
typedef struct json_object *(*plan_done_fn)(struct memmigd *d, const struct proto_request *req,
					    int rc, struct memmig_move *mv,
					    const struct job_spec *spec);
/* Starts mv's plan, done() the reply once it ended; takes req (malloc'd),
 * mv and spec->pin on success. */
int plans_start(struct memmigd *d, const struct client_cred *c, struct proto_request *req,
		struct conn *conn, struct memmig_move *mv, const struct job_spec *spec,
		plan_done_fn done);
/* On the loop thread after a wake: each finished plan's reply to its
 * connection (deliver), or dropped when the client is gone. */
void plans_collect(void (*deliver)(void *opaque, struct conn *c, struct json_object *reply),
		   void *opaque);
/* The client is gone: its plan's reply will be dropped. */
void plans_forget(struct conn *c);
/* Whether a plan is in flight or not yet collected. */
bool plans_pending(void);
/* domains_event_fn: a domain registered or forgotten, to the subscribers. */
void ops_domain_event(void *opaque, const char *name, int pid, const char *state);
/* domains_move_fn: a move asked for by the libvirt watcher, as root. */
int ops_domain_move(void *opaque, const char *name, int pid, int to_node);
/* domains_tier_fn (ops-tier.c): a domain's tier element, as root. */
int ops_domain_tier(void *opaque, const char *name, int pid, const struct tiers_policy *p,
		    unsigned long long *id, char *msg, size_t len);

/* ---- connections (conn.c) and the loop (loop.c) ---- */
int loop_run(struct memmigd *d);

#endif
