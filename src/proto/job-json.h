/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The job object (docs/json.md), built in one place for memmigd's jobs and
 * memmig-cli's in-process move alike, so that the two cannot drift.
 */
#ifndef MEMMIG_PROTO_JOB_JSON_H
#define MEMMIG_PROTO_JOB_JSON_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "memmig.h"

struct proto_job {
	uint64_t id;			/* 0: an in-process move (null) */
	const char *via;		/* "memmigd" or "local" */
	const char *state;		/* queued, running, done, failed, cancelled */
	int pid;
	const char *domain;		/* NULL or "": a move by pid */
	int to_node;
	int strategy;			/* enum memmig_strategy, as requested */
	unsigned int threads;		/* 0: the default */
	int64_t uid;
	struct memmig_move_progress p;	/* live while running, else the last */
	bool running, ended;
	uint64_t bytes_moved;		/* once ended */
	int result;			/* once ended: 0 or -errno */
	const char *message;		/* once ended */
	struct json_object *report;	/* once it ran, else NULL; borrowed */
	uint64_t waits_for;		/* queued behind this job of its process; 0: not */
	/* When it was asked for, started and ended: Unix time in seconds,
	 * 0 when it has not (yet). */
	int64_t created_at, started_at, ended_at;
};

/* A new reference. */
struct json_object *proto_job_json(const struct proto_job *job);
/* A rebalance step of the job's rebalance object (docs/json.md): the bytes
 * the kernel and memmig moved during it.  A new reference. */
struct json_object *proto_rebalance_step_json(uint64_t kernel, uint64_t memmig);

/* The state of a job that ended with result (0 or -errno). */
const char *proto_job_end_state(int result);
/* The message of an ended job: what happened, for people. */
void proto_job_message(char *buf, size_t len, int result, uint64_t moved,
		       uint64_t total, int to_node, double elapsed_s);

#endif
