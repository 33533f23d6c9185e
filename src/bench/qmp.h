/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A QMP client (QEMU's machine protocol) on a UNIX socket: what bench live
 * needs to drive QEMU's own migration. */
#ifndef MEMMIG_BENCH_QMP_H
#define MEMMIG_BENCH_QMP_H

#include <json-c/json.h>
#include <stddef.h>

struct qmp {
	int fd;
	char buf[16384];	/* what was read past the last line */
	size_t len;
};

/* Connects (retrying until timeout_ms: QEMU makes the socket as it starts),
 * reads the greeting and enters command mode.  0 or -errno. */
int qmp_open(struct qmp *q, const char *path, int timeout_ms);
/*
 * Runs command with arguments (a JSON object, or NULL; its reference is
 * taken) and waits for the answer, skipping events.  0 with *ret the
 * "return" value (the caller's reference; ret may be NULL), -EIO for an
 * "error" answer (its description in the log), or -errno.
 */
int qmp_call(struct qmp *q, const char *command, struct json_object *args,
	     struct json_object **ret);
void qmp_close(struct qmp *q);

#endif
