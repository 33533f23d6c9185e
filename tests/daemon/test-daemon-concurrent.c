/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * 50 clients at once, each on its own thread and connection, each sending
 * 20 requests -- version, nodes, jobs, a move of memhog, that job -- five
 * at a time without waiting (pipelined), and checking every reply: right
 * for its request, matched by tag.  memhog's data is checked after.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "client.h"

#define CLIENTS		50
#define REQUESTS	20
#define BATCH		5

static struct tc_daemon daemon_;
static struct tc_hog hog;

struct client {
	pthread_t thread;
	int id;
	unsigned int good, bad;
	int64_t last_job;
	char why[256];
};

/* Request i of client id; its tag is id * 1000 + i. */
static int request(struct client *cl, int i, char *buf, size_t len)
{
	int tag = cl->id * 1000 + i;

	switch (i % 5) {
	case 0:
		return snprintf(buf, len, "{\"op\":\"version\",\"tag\":%d}\n", tag);
	case 1:
		return snprintf(buf, len, "{\"op\":\"nodes\",\"tag\":%d}\n", tag);
	case 2:
		return snprintf(buf, len, "{\"op\":\"move\",\"pid\":%d,\"to_node\":0,\"threads\":1,"
				"\"tag\":%d}\n", hog.pid, tag);
	case 3:
		return snprintf(buf, len, "{\"op\":\"jobs\",\"tag\":%d}\n", tag);
	default:
		/* The job of this batch's move: sent after its reply came. */
		return snprintf(buf, len, "{\"op\":\"job\",\"job\":%lld,\"tag\":%d}\n",
				(long long)cl->last_job, tag);
	}
}

static bool reply_right(struct client *cl, int i, struct json_object *r)
{
	struct json_object *job = tc_get(r, "job");

	if (strcmp(tc_error(r), "OK") || tc_int(r, "tag") != cl->id * 1000 + i)
		return false;
	switch (i % 5) {
	case 0:
		return !strcmp(tc_str(r, "version"), PACKAGE_VERSION) && tc_int(r, "protocol") == 1;
	case 1:
		return json_object_is_type(tc_get(r, "nodes"), json_type_array) &&
		       json_object_array_length(tc_get(r, "nodes")) >= 1;
	case 2:
		cl->last_job = tc_int(job, "id");
		return cl->last_job > 0 && tc_int(job, "pid") == hog.pid;
	case 3:
		return json_object_is_type(tc_get(r, "jobs"), json_type_array);
	default:
		return tc_int(job, "id") == cl->last_job && tc_int(job, "pid") == hog.pid;
	}
}

static void *client_main(void *arg)
{
	struct client *cl = arg;
	struct tc_conn *c = tc_connect(daemon_.sock);
	char buf[BATCH * 160];

	for (int b = 0; c && b < REQUESTS; b += BATCH) {
		size_t n = 0;

		/* The first four pipelined, then the job op that needs the id. */
		for (int i = b; i < b + BATCH - 1; i++)
			n += (size_t)request(cl, i, buf + n, sizeof(buf) - n);
		if (tc_write(c, buf, n))
			break;
		for (int i = b; i < b + BATCH; i++) {
			struct json_object *r;

			if (i == b + BATCH - 1) {
				n = (size_t)request(cl, i, buf, sizeof(buf));
				if (tc_write(c, buf, n))
					break;
			}
			r = tc_read(c, 60000);
			if (reply_right(cl, i, r)) {
				cl->good++;
			} else {
				cl->bad++;
				snprintf(cl->why, sizeof(cl->why), "request %d: %s", i,
					 r ? json_object_to_json_string(r) : "no reply");
			}
			json_object_put(r);
		}
	}
	tc_close(c);
	return NULL;
}

int main(void)
{
	static const char *const opts[] = { "--max-jobs", "1000", NULL };
	static struct client cl[CLIENTS];
	unsigned int good = 0;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (tc_hog_start(&hog, 8, 4, (uid_t)-1, (gid_t)-1))
		return 1;
	if (tc_daemon_start(&daemon_, opts)) {
		tc_hog_stop(&hog);
		return 1;
	}
	for (int i = 0; i < CLIENTS; i++) {
		cl[i].id = i + 1;
		pthread_create(&cl[i].thread, NULL, client_main, &cl[i]);
	}
	for (int i = 0; i < CLIENTS; i++) {
		pthread_join(cl[i].thread, NULL);
		good += cl[i].good;
		CHECK(cl[i].good == REQUESTS, "client %d: %u right, %u wrong; %s", cl[i].id,
		      cl[i].good, cl[i].bad, cl[i].why);
	}
	printf("%u of %d replies right\n", good, CLIENTS * REQUESTS);
	CHECK(tc_hog_verify(&hog), "memhog's data after %d moves", CLIENTS * REQUESTS / 5);
	rc = tc_daemon_stop(&daemon_);
	CHECK(rc == 0, "memmigd exit status %d", rc);
	CHECK(tc_hog_stop(&hog), "memhog exits clean");
	return tc_summary();
}
