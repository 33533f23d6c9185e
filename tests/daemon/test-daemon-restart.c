/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmigd killed (SIGKILL) with jobs in hand, then started again on the
 * same state file (issue 37): the new one's job ids go on past the old
 * one's -- "status 1" never shows another job than the one the user
 * started -- and an old job answers what became of it: lost mid-move or
 * before it started, its pages where the kernel left them; a job that
 * had ended says that memmigd restarted since.  A state file that memmigd could not
 * have written alone (writable by others) is not believed.  A domain's
 * nodeset the old one had widened stays in the file until a memmigd can
 * ask libvirtd (tests/libvirt/test-libvirt.sh, h).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client.h"

#define WAIT_MS 120000
#define JOBS 4

static char state_opt[128];

static int start(struct tc_daemon *d)
{
	const char *const opts[] = { "--max-jobs-per-node", "1", "--state-file", state_opt,
				     NULL };

	return tc_daemon_start(d, opts);
}

/*
 * SIGKILL, and what the state file said then, which is what the next
 * memmigd reads: queued[i] is whether ids[i] was queued.  The reply to
 * the move said "queued", but the job may have started by the kill (the
 * jobs before it can end in a moment); memmigd, stopped first, changes
 * nothing more while the file is read.
 */
static void kill9(struct tc_daemon *d, const int64_t *ids, bool *queued)
{
	FILE *f;
	char line[256], what[16];
	long long id;

	kill(d->pid, SIGSTOP);
	waitpid(d->pid, NULL, WUNTRACED);
	f = fopen(state_opt, "re");
	for (int i = 0; i < JOBS; i++)
		queued[i] = false;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "job %lld pid %*d node %*d uid %*u %15s", &id, what) == 2)
			for (int i = 0; i < JOBS; i++)
				queued[i] |= ids[i] == id && !strcmp(what, "queued");
	if (f)
		fclose(f);
	kill(d->pid, SIGKILL);
	waitpid(d->pid, NULL, 0);
	unlink(d->sock);
	rmdir(d->dir);
}

#define REBALANCE_LINE "rebalance 6d656d6d-6967-0000-0000-000000000002 pid 1 node 1 " \
	"before 0 widened 0-1"

static void append_line(const char *text)
{
	FILE *f = fopen(state_opt, "ae");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* Whether the state file has a line starting with text. */
static bool state_has(const char *text)
{
	FILE *f = fopen(state_opt, "re");
	char line[1024];
	bool found = false;

	while (f && !found && fgets(line, sizeof(line), f))
		found = !strncmp(line, text, strlen(text));
	if (f)
		fclose(f);
	return found;
}

/* JOBS moves of h, the first running, the others queued behind it; their
 * ids in ids[].  The reply's states in states[]. */
static void submit(struct tc_daemon *d, struct tc_hog *h, int64_t *ids, char states[][16])
{
	struct tc_conn *c = tc_connect(d->sock);

	for (int i = 0; i < JOBS; i++) {
		struct json_object *r = tc_call(c, "{\"op\":\"move\",\"pid\":%d,\"to_node\":0,"
						"\"threads\":1}", h->pid);

		ids[i] = tc_int(tc_get(r, "job"), "id");
		snprintf(states[i], 16, "%s", tc_str(tc_get(r, "job"), "state"));
		CHECK(ids[i] > 0, "move %d: %s", i, tc_error(r));
		json_object_put(r);
	}
	tc_close(c);
}

int main(void)
{
	struct tc_daemon d;
	struct tc_hog h;
	struct tc_conn *c;
	struct json_object *r;
	char dir[] = "/tmp/memmigd-state.XXXXXX", states[JOBS][16], hold[64];
	int64_t ids[JOBS], next;
	bool queued[JOBS];
	unsigned int lost = 0, nqueued = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!mkdtemp(dir))
		return 1;
	snprintf(state_opt, sizeof(state_opt), "%s/memmigd.state", dir);
	if (tc_hog_start(&h, 256, 64, (uid_t)-1, (gid_t)-1))
		return 1;
	/* The first job held running until the kill, the others queued
	 * behind it: on one node a move has nothing to do, and job 1 ended
	 * in 7 ms here; a faster host could end all four before the kill. */
	snprintf(hold, sizeof(hold), "%s/hold", dir);
	close(open(hold, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
	setenv("MEMMIG_MOVE_HOLD", hold, 1);
	if (start(&d)) {
		tc_hog_stop(&h);
		return 1;
	}
	unsetenv("MEMMIG_MOVE_HOLD");
	submit(&d, &h, ids, states);
	kill9(&d, ids, queued);
	unlink(hold);
	for (int i = 0; i < JOBS; i++)
		nqueued += queued[i];
	printf("killed with jobs %lld..%lld (%s ... %s at the move; %u queued at the kill)\n",
	       (long long)ids[0], (long long)ids[JOBS - 1], states[0], states[JOBS - 1], nqueued);

	/* A domain's nodeset the killed memmigd had widened (rebalance.c),
	 * and a line cut short: the first is kept until libvirtd answers
	 * (none here), the second dropped. */
	append_line(REBALANCE_LINE "\nrebalance 6d656d6d pid 1 node\n");
	CHECK(start(&d) == 0, "memmigd starts again on the same state file");
	CHECK(state_has(REBALANCE_LINE "\n"), "a widened nodeset stays in the state file "
	      "while no libvirtd answers");
	CHECK(!state_has("rebalance 6d656d6d pid"), "a rebalance line cut short is dropped");
	c = tc_connect(d.sock);
	r = tc_call(c, "{\"op\":\"move\",\"pid\":%d,\"to_node\":0}", h.pid);
	next = tc_int(tc_get(r, "job"), "id");
	CHECK(next > ids[JOBS - 1], "the new memmigd's first job is %lld, after the old one's %lld",
	      (long long)next, (long long)ids[JOBS - 1]);
	json_object_put(r);
	for (int i = 0; i < JOBS; i++) {
		const char *msg;

		r = tc_call(c, "{\"op\":\"job\",\"job\":%lld}", (long long)ids[i]);
		msg = tc_str(r, "message");
		printf("  job %lld: %s: %s\n", (long long)ids[i], tc_error(r), msg);
		CHECK(!strcmp(tc_error(r), "ESRCH") && strstr(msg, "memmigd restarted"),
		      "job %lld after the restart: %s %s", (long long)ids[i], tc_error(r), msg);
		lost += strstr(msg, "was lost") != NULL;
		/* Its times came through the state file. */
		if (strstr(msg, "was lost"))
			CHECK(strstr(msg, "(created 20") != NULL, "lost job %lld keeps no time: %s",
			      (long long)ids[i], msg);
		/* Queued when memmigd died: nothing of it had moved. */
		if (queued[i] && strstr(msg, "was lost"))
			CHECK(strstr(msg, "before it started") != NULL, "queued job %lld: %s",
			      (long long)ids[i], msg);
		json_object_put(r);
	}
	/* None could end: the first was held, the others waited for it. */
	CHECK(lost == JOBS, "%u of the killed memmigd's %d jobs said lost", lost, JOBS);
	r = tc_call(c, "{\"op\":\"cancel\",\"job\":%lld}", (long long)ids[JOBS - 1]);
	CHECK(!strcmp(tc_error(r), "ESRCH") && strstr(tc_str(r, "message"), "memmigd restarted"),
	      "cancel of a lost job: %s %s", tc_error(r), tc_str(r, "message"));
	json_object_put(r);
	r = tc_wait_job(c, next, WAIT_MS);
	CHECK(r && !strcmp(tc_str(r, "state"), "done"), "the new job: %s", tc_str(r, "state"));
	json_object_put(r);
	tc_close(c);
	CHECK(tc_daemon_stop(&d) == 0, "memmigd stops");

	/* A file others could have written names nothing memmigd believes:
	 * ids start again at 1. */
	CHECK(chmod(state_opt, 0666) == 0, "chmod the state file");
	CHECK(start(&d) == 0, "memmigd starts beside an unsafe state file");
	c = tc_connect(d.sock);
	r = tc_call(c, "{\"op\":\"move\",\"pid\":%d,\"to_node\":0}", h.pid);
	CHECK(tc_int(tc_get(r, "job"), "id") == 1, "unsafe state file ignored: first id %lld",
	      (long long)tc_int(tc_get(r, "job"), "id"));
	json_object_put(r);
	tc_close(c);
	CHECK(tc_daemon_stop(&d) == 0, "memmigd stops");
	CHECK(tc_hog_verify(&h), "memhog's data after the kill and restarts");
	CHECK(tc_hog_stop(&h), "memhog exits clean");
	unlink(state_opt);
	rmdir(dir);
	return tc_summary();
}
