/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The job table's insides: jobs.c runs them, job-json.c shows them. */
#ifndef MEMMIGD_JOBS_PRIVATE_H
#define MEMMIGD_JOBS_PRIVATE_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "daemon/memmigd.h"

enum job_state { JOB_QUEUED, JOB_RUNNING, JOB_DONE, JOB_FAILED, JOB_CANCELLED };

struct job {
	struct jobs *jobs;
	struct job *next;		/* by id, oldest first */
	uint64_t id;
	enum job_state state;
	int pid, to_node, strategy;
	unsigned int threads;		/* 0: the default */
	char domain[PROTO_NAME_MAX];	/* "": by pid */
	uid_t uid;			/* the owner */
	struct auth_pin *pin;		/* the client and the process checked */
	struct memmig_move *mv;		/* until the job ends */
	struct memmig_move_progress last; /* once it ended */
	int result;
	uint64_t bytes_moved;		/* the report's, once it ran */
	char message[256];
	struct json_object *report;	/* once it ran */
	uint64_t waits_for;		/* queued behind this job of its process */
	time_t created, started, ended;	/* 0: not yet */
	bool cancel_requested;
	bool notify;			/* domains_job_done() still due */
};

struct jobs {
	pthread_mutex_t lock;
	struct job *head, *tail;
	uint64_t next_id;
	unsigned int active;		/* queued + running */
	unsigned int running_on[PROTO_MAX_NODE + 1];
	unsigned int per_node, max;
	int wake_fd;
	bool stopping;
	struct memmig_ctx *ctx;
	struct domains *dom;
	struct metrics *metrics;	/* may be NULL */
	struct events *events;		/* may be NULL */
	struct state *state;		/* may be NULL */
};

const char *job_state_name(enum job_state s);
/* Lock held. */
struct json_object *job_to_json(struct job *job);

#endif
