/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the daemon tests share: starting memmigd on a socket in a scratch
 * directory ($MEMMIGD, wrapped in $MEMMIGD_WRAPPER, e.g. valgrind), a
 * line client, memhog (tests/helpers/memhog, $MEMHOG) with its checksum,
 * and named checks.  Independent of memmig-cli on purpose.
 */
#ifndef MEMMIG_TESTS_DAEMON_CLIENT_H
#define MEMMIG_TESTS_DAEMON_CLIENT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <json-c/json.h>

#define TC_SKIP 77

extern unsigned int tc_passes, tc_fails;

#define CHECK(cond, ...) do {						\
	if (cond) {							\
		tc_passes++;						\
	} else {							\
		tc_fails++;						\
		printf("FAIL %s:%d: ", __FILE__, __LINE__);		\
		printf(__VA_ARGS__);					\
		printf("\n");						\
	}								\
} while (0)

/* Prints the counts; the exit status: 0 or 1. */
int tc_summary(void);

struct tc_daemon {
	pid_t pid;
	char dir[64];		/* scratch directory, mode 0755 */
	char sock[128];
};

/* extra: more options, NULL-terminated (may be NULL).  0 once the socket
 * answers, -1 (printed) otherwise. */
int tc_daemon_start(struct tc_daemon *d, const char *const *extra);
/* SIGTERM; the exit status (0..255), or -1 if it did not exit or died
 * of a signal.  Removes the scratch directory. */
int tc_daemon_stop(struct tc_daemon *d);

struct tc_conn {
	int fd;
	size_t len;
	char buf[256 * 1024];
};

struct tc_conn *tc_connect(const char *sock);
void tc_close(struct tc_conn *c);
/* All of buf, or -1. */
int tc_write(struct tc_conn *c, const void *buf, size_t len);
/* The next reply line, parsed; NULL on EOF, timeout or bad JSON. */
struct json_object *tc_read(struct tc_conn *c, int timeout_ms);
/* Whether the daemon closed the connection (EOF within timeout). */
bool tc_closed(struct tc_conn *c, int timeout_ms);
/* One request line (the newline added) and its reply. */
struct json_object *tc_call(struct tc_conn *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The reply's "error", or "OK" for {"ok": true}, or "(none)". */
const char *tc_error(struct json_object *reply);
int64_t tc_int(struct json_object *o, const char *key);
const char *tc_str(struct json_object *o, const char *key);
struct json_object *tc_get(struct json_object *o, const char *key);
/* Polls job id until it ended; the final job object (new ref) or NULL. */
struct json_object *tc_wait_job(struct tc_conn *c, int64_t id, int timeout_ms);

struct tc_hog {
	pid_t pid;
	FILE *out;
	uint64_t anon, anon_len, memfd, memfd_len;
};

/* memhog ANON MEMFD, as uid/gid when uid != (uid_t)-1. */
int tc_hog_start(struct tc_hog *h, int anon_mib, int memfd_mib, uid_t uid, gid_t gid);
/* SIGUSR1 and its answer: true for "verify ok". */
bool tc_hog_verify(struct tc_hog *h);
/* SIGTERM: true when it exits 0 (its last check passed). */
bool tc_hog_stop(struct tc_hog *h);

/* Drops to uid/gid with no supplementary groups; 0 or -1. */
int tc_drop_to(uid_t uid, gid_t gid);
/* A child that runs prepare(arg) (0: ready) and then waits for its end;
 * its pid once it is ready, or -1. */
pid_t tc_child_ready(int (*prepare)(void *arg), void *arg);

/* Field n (1: real, 2: effective) of pid's uids, or -1. */
long tc_proc_uid(pid_t pid, int n);
/* Creates path (empty, 0600) if it is not there: 0 or -1. */
int tc_touch(const char *path);
/* A copy of from at to, setuid (04755, the caller's owner): 0 or -1. */
int tc_copy_setuid(const char *from, const char *to);

#endif
