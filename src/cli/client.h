/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmig-cli's side of memmigd's protocol (docs/protocol.md): where the
 * daemon is, whether to use it, and one request/reply at a time.
 */
#ifndef MEMMIG_CLI_CLIENT_H
#define MEMMIG_CLI_CLIENT_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "front/front.h"

struct cli_conn;

/*
 * For commands that run either way: *out gets a connection when memmigd
 * answers, NULL when the command should run in-process (--local, or no
 * daemon at the default socket).  Says which on stderr.  -errno (printed)
 * when --socket was given and nobody answers there.
 */
int cli_connect_or_local(const char *cmd, struct cli_conn **out);
/* For commands only memmigd can do: -errno (printed) when it is not there
 * or --local was given. */
int cli_connect_daemon(const char *cmd, struct cli_conn **out);
void cli_conn_close(struct cli_conn *c);

/*
 * Sends req (the reference is taken) and reads the reply into *reply (new
 * reference).  Returns 0, the error the daemon answered (-errno, *reply
 * set: see cli_print_reply_error()), or -errno of the connection (*reply
 * NULL, printed).
 */
int cli_call(struct cli_conn *c, const char *cmd, struct json_object *req,
	     struct json_object **reply);
/* For commands only memmigd can do: connect, send req (taken), read the
 * reply: CLI_EXIT_OK with *reply, or an exit code with the error printed. */
int cli_daemon_call(const char *cmd, struct json_object *req,
		    struct json_object **reply);
/* The next line memmigd sends (an event after "subscribe", those set
 * aside first) as a JSON object: 0, or -errno (printed, except
 * -ETIMEDOUT: nothing came for a minute, which a follower may wait
 * through, and -ENOBUFS: events were dropped while awaiting a reply). */
int cli_read_line(struct cli_conn *c, const char *cmd, struct json_object **out);
/* Whether a line can be read from c within timeout_ms: 1, 0 when none
 * came (or a signal came), -errno. */
int cli_conn_wait(struct cli_conn *c, int timeout_ms);
/*
 * Subscribes c to events without waiting for memmigd's answer, which the
 * next cli_call() on c reads before its own reply (replies keep their
 * order); from then on cli_call() sets aside the events that come before
 * its reply, for cli_read_line().  So a request can follow at once, on the
 * same connection, as one round trip.  0 once sent (or already
 * subscribed), else -errno, said to nobody.  Whether memmigd had room for
 * one more subscriber: cli_conn_subscribed(), after that call.
 */
int cli_conn_subscribe(struct cli_conn *c);
bool cli_conn_subscribed(const struct cli_conn *c);
/*
 * Follows memmigd's job id to its end into *job (new reference): its
 * events on ev (c itself, subscribed before the job was asked for) say
 * when it ends at once; without them (ev NULL) the job is polled.  The
 * job op also feeds the progress bar.  When *stop becomes non-zero
 * (Ctrl-C), memmigd is asked once to cancel the job.  0, or -errno (said).
 */
int cli_job_follow(struct cli_conn *c, struct cli_conn *ev, int64_t id,
		   volatile sig_atomic_t *stop, struct json_object **job);
/* "memmig-cli: CMD: EPERM: message" from an error reply. */
void cli_print_reply_error(const char *cmd, struct json_object *reply);
/* A domain's QEMU pid, asked of memmigd (its domain list): CLI_EXIT_OK
 * with *pid, or an exit code with the error said (no such domain: 1). */
int cli_domain_pid(const char *cmd, const char *name, int *pid);
/* The domain named name in memmigd's "domains" reply, or NULL (borrowed). */
struct json_object *cli_domain_find(struct json_object *reply, const char *name);
/* {"op": op} to add members to. */
struct json_object *cli_request(const char *op);

#endif
