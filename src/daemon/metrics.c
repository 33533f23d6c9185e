/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmigd's counters and their two renderings: Prometheus' text exposition
 * format 0.0.4 (HELP and TYPE lines, then samples) and the same families
 * as JSON.  One walk over the families writes either, so that the two can
 * never disagree.  Every label set is bounded: the ops, the reasons, the
 * errnos and at most METRICS_MAX_PAIRS node pairs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "daemon/metrics.h"
#include "daemon/tiers.h"

#define METRICS_MAX_PAIRS	64	/* node pairs; beyond, counted as "other" */
#define METRICS_MAX_ERRNO	134	/* errnos above are counted as one */
#define METRICS_NR_OPS		(PROTO_OP_TIER + 1)
#define PAGE_BYTES		4096ULL

/* Job durations (s): a 2 MB unit takes ~1 ms, a 64 GiB guest a minute. */
static const double duration_le[] = { 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300 };
#define NR_BUCKETS (sizeof(duration_le) / sizeof(duration_le[0]))

struct node_pair {
	int from, to;		/* -1: "other" */
	uint64_t bytes;
};

struct metrics {
	pthread_mutex_t lock;
	struct timespec start;		/* CLOCK_REALTIME */
	struct timespec mono_start;	/* CLOCK_MONOTONIC: uptime */
	bool dirty;
	uint64_t requests[METRICS_NR_OPS + 1];	/* the last: invalid */
	uint64_t refused[REFUSE_NR];
	uint64_t jobs_created, jobs_done, jobs_failed, jobs_cancelled;
	uint64_t bytes_moved, pages_poisoned;
	uint64_t pages_failed[METRICS_MAX_ERRNO + 1];	/* the last: any other */
	struct node_pair pairs[METRICS_MAX_PAIRS + 1];	/* the last: other */
	unsigned int npairs;
	uint64_t duration_count, duration_buckets[NR_BUCKETS];
	double duration_sum, last_rate;
	uint64_t subscribers_dropped;
};

int metrics_new(struct metrics **out)
{
	struct metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	pthread_mutex_init(&m->lock, NULL);
	clock_gettime(CLOCK_REALTIME, &m->start);
	clock_gettime(CLOCK_MONOTONIC, &m->mono_start);
	m->pairs[METRICS_MAX_PAIRS] = (struct node_pair){ -1, -1, 0 };
	m->dirty = true;
	*out = m;
	return 0;
}

void metrics_free(struct metrics *m)
{
	if (!m)
		return;
	pthread_mutex_destroy(&m->lock);
	free(m);
}

enum refuse_reason metrics_refuse_reason(int err)
{
	switch (err) {
	case EINVAL: case EBADMSG: case EMSGSIZE: case EOPNOTSUPP: case EEXIST:
		return REFUSE_BAD_INPUT;
	case EPERM: case EACCES:
		return REFUSE_PERMISSION;
	case EBUSY: case EAGAIN: case ENOSPC: case EMFILE:
		return REFUSE_LIMITS;
	case ESRCH: case ENOENT: case EFAULT: case ENODEV:
		return REFUSE_NOT_FOUND;
	default:
		return REFUSE_OTHER;
	}
}

const char *metrics_refuse_name(enum refuse_reason r)
{
	static const char *const names[REFUSE_NR] = {
		[REFUSE_BAD_INPUT] = "bad_input", [REFUSE_PERMISSION] = "permission",
		[REFUSE_LIMITS] = "limits", [REFUSE_NOT_FOUND] = "not_found",
		[REFUSE_OTHER] = "other",
	};

	return names[r];
}

void metrics_request(struct metrics *m, int op)
{
	pthread_mutex_lock(&m->lock);
	m->requests[op >= 0 && op < METRICS_NR_OPS ? op : METRICS_NR_OPS]++;
	m->dirty = true;
	pthread_mutex_unlock(&m->lock);
}

void metrics_refused(struct metrics *m, enum refuse_reason r)
{
	pthread_mutex_lock(&m->lock);
	m->refused[r]++;
	m->dirty = true;
	pthread_mutex_unlock(&m->lock);
}

void metrics_job_created(struct metrics *m)
{
	pthread_mutex_lock(&m->lock);
	m->jobs_created++;
	m->dirty = true;
	pthread_mutex_unlock(&m->lock);
}

void metrics_subscriber_dropped(struct metrics *m)
{
	pthread_mutex_lock(&m->lock);
	m->subscribers_dropped++;
	m->dirty = true;
	pthread_mutex_unlock(&m->lock);
}

/* Lock held: the pair's counter, or the "other" one when the table is full. */
static struct node_pair *pair(struct metrics *m, int from, int to)
{
	for (unsigned int i = 0; i < m->npairs; i++)
		if (m->pairs[i].from == from && m->pairs[i].to == to)
			return &m->pairs[i];
	if (m->npairs == METRICS_MAX_PAIRS)
		return &m->pairs[METRICS_MAX_PAIRS];
	m->pairs[m->npairs] = (struct node_pair){ from, to, 0 };
	return &m->pairs[m->npairs++];
}

/*
 * Lock held: what the report says left each node for to_node -- the pages
 * on a node before the move less those after (move_pages queries); pages
 * that were on no node (absent) are in bytes_moved but in no pair.
 */
static void count_pairs(struct metrics *m, int to_node, const struct memmig_report *rep)
{
	int max = memmig_report_max_node(rep);

	for (int n = 0; n <= max; n++) {
		uint64_t before, after;

		if (n == to_node || memmig_report_node_pages(rep, n, &before, &after) ||
		    before <= after)
			continue;
		pair(m, n, to_node)->bytes += (before - after) * PAGE_BYTES;
	}
}

/* Lock held: pages not moved, by errno (the report's pages_failed by
 * errno, with the failed ranges it lists and those it only counts: an
 * absent page is not one); poisoned ones apart as well. */
static void count_failed(struct metrics *m, const struct memmig_report *rep)
{
	int n = memmig_report_errno_count(rep);

	for (int i = 0; i < n; i++) {
		uint64_t pages;
		int err;

		if (memmig_report_get_errno(rep, (unsigned int)i, &err, NULL))
			continue;
		pages = memmig_report_failed_errno_pages(rep, err);
		err = err < 0 ? -err : err;
		m->pages_failed[err < METRICS_MAX_ERRNO ? err : METRICS_MAX_ERRNO] += pages;
		if (err == EHWPOISON || err == EIO)
			m->pages_poisoned += pages;
	}
}

void metrics_job_ended(struct metrics *m, const char *state, int to_node,
		       const struct memmig_report *rep)
{
	struct memmig_report_summary s = { .sz = sizeof(s) };

	pthread_mutex_lock(&m->lock);
	m->dirty = true;
	if (!strcmp(state, "done"))
		m->jobs_done++;
	else if (!strcmp(state, "cancelled"))
		m->jobs_cancelled++;
	else
		m->jobs_failed++;
	if (rep && !memmig_report_get_summary(rep, &s)) {
		m->bytes_moved += s.bytes_moved;
		m->duration_count++;
		m->duration_sum += s.total_s;
		for (size_t i = 0; i < NR_BUCKETS; i++)
			m->duration_buckets[i] += s.total_s <= duration_le[i];
		m->last_rate = s.total_s > 0 ? (double)s.bytes_moved / s.total_s : 0;
		count_pairs(m, to_node, rep);
		count_failed(m, rep);
	}
	pthread_mutex_unlock(&m->lock);
}

/* ---- rendering: one walk, a text or a JSON sink ---- */
struct sink {
	FILE *text;			/* text exposition */
	struct json_object *json;	/* or families by name */
	struct json_object *samples;	/* the current family's */
	const char *family;
};

struct label {
	const char *key, *value;
};

static void family(struct sink *s, const char *name, const char *type, const char *help)
{
	struct json_object *f;

	s->family = name;
	if (s->text) {
		fprintf(s->text, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
		return;
	}
	f = json_object_new_object();
	json_object_object_add(f, "type", json_object_new_string(type));
	json_object_object_add(f, "help", json_object_new_string(help));
	s->samples = json_object_new_array();
	json_object_object_add(f, "samples", s->samples);
	json_object_object_add(s->json, name, f);
}

/* A label value as the text format wants it: \, " and newline escaped. */
static void put_escaped(FILE *f, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fputc('\\', f);
		if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
}

/* One sample; suffix ("_bucket", or "") after the family's name, labels
 * up to the first with a NULL key.  Integers stay exact: uint64 below
 * 2^53 or not, a counter never prints as 1.8e+19. */
static void sample(struct sink *s, const char *suffix, const struct label *labels,
		   bool is_int, uint64_t u, double d)
{
	struct json_object *o, *lo;

	if (s->text) {
		fprintf(s->text, "%s%s", s->family, suffix);
		for (int i = 0; labels && labels[i].key; i++) {
			fprintf(s->text, "%s%s=\"", i ? "," : "{", labels[i].key);
			put_escaped(s->text, labels[i].value);
			fputc('"', s->text);
		}
		if (labels && labels[0].key)
			fputc('}', s->text);
		if (is_int)
			fprintf(s->text, " %" PRIu64 "\n", u);
		else
			fprintf(s->text, " %.6f\n", d);
		return;
	}
	o = json_object_new_object();
	if (suffix[0])
		json_object_object_add(o, "suffix", json_object_new_string(suffix));
	lo = json_object_new_object();
	for (int i = 0; labels && labels[i].key; i++)
		json_object_object_add(lo, labels[i].key, json_object_new_string(labels[i].value));
	json_object_object_add(o, "labels", lo);
	json_object_object_add(o, "value", is_int ? json_object_new_uint64(u) :
			       json_object_new_double(d));
	json_object_array_add(s->samples, o);
}

static void sample_u(struct sink *s, const struct label *labels, uint64_t v)
{
	sample(s, "", labels, true, v, 0);
}

static void sample_d(struct sink *s, const struct label *labels, double v)
{
	sample(s, "", labels, false, 0, v);
}

static void one_u(struct sink *s, const char *name, const char *type, const char *help,
		  uint64_t v)
{
	family(s, name, type, help);
	sample_u(s, NULL, v);
}

static void render_daemon(struct sink *s, struct metrics *m, const struct metrics_now *now)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	family(s, "memmigd_info", "gauge", "memmigd's version (the value is always 1)");
	sample_u(s, (struct label[]){ { "version", PACKAGE_VERSION }, { NULL, NULL } }, 1);
	family(s, "memmigd_start_time_seconds", "gauge", "when memmigd started, seconds since the epoch");
	sample_u(s, NULL, (uint64_t)m->start.tv_sec);
	family(s, "memmigd_uptime_seconds", "gauge", "seconds since memmigd started");
	sample_d(s, NULL, (double)(t.tv_sec - m->mono_start.tv_sec) +
		 (t.tv_nsec - m->mono_start.tv_nsec) / 1e9);
	one_u(s, "memmigd_clients", "gauge", "client connections open", now->clients);
	one_u(s, "memmigd_subscribers", "gauge", "connections subscribed to events",
	      now->subscribers);
	one_u(s, "memmigd_subscribers_dropped_total", "counter",
	      "subscribers closed because they did not read their events", m->subscribers_dropped);
	if (now->libvirt >= 0)
		one_u(s, "memmigd_libvirt_connected", "gauge",
		      "1 while memmigd is connected to libvirtd", (uint64_t)now->libvirt);
}

static void render_requests(struct sink *s, struct metrics *m)
{
	family(s, "memmigd_requests_total", "counter", "requests received, by op");
	for (int op = 0; op <= METRICS_NR_OPS; op++)
		sample_u(s, (struct label[]){ { "op", op < METRICS_NR_OPS ? proto_op_name(op) :
						"invalid" }, { NULL, NULL } }, m->requests[op]);
	family(s, "memmigd_refused_requests_total", "counter",
	       "requests and connections refused, by reason");
	for (int r = 0; r < REFUSE_NR; r++)
		sample_u(s, (struct label[]){ { "reason", metrics_refuse_name(r) }, { NULL, NULL } },
			 m->refused[r]);
}

static void render_jobs(struct sink *s, struct metrics *m, const struct metrics_now *now)
{
	const struct { const char *state; uint64_t v; } states[] = {
		{ "queued", now->jobs_queued }, { "running", now->jobs_running },
	}, ended[] = {
		{ "done", m->jobs_done }, { "failed", m->jobs_failed },
		{ "cancelled", m->jobs_cancelled },
	};

	family(s, "memmigd_jobs", "gauge", "jobs queued or running now");
	for (size_t i = 0; i < 2; i++)
		sample_u(s, (struct label[]){ { "state", states[i].state }, { NULL, NULL } },
			 states[i].v);
	one_u(s, "memmigd_jobs_created_total", "counter", "jobs accepted", m->jobs_created);
	family(s, "memmigd_jobs_ended_total", "counter", "jobs ended, by final state");
	for (size_t i = 0; i < 3; i++)
		sample_u(s, (struct label[]){ { "state", ended[i].state }, { NULL, NULL } },
			 ended[i].v);
}

static void render_bytes(struct sink *s, struct metrics *m)
{
	char from[16], to[16], name[16], le[24];
	const char *err;
	uint64_t cum = 0;

	one_u(s, "memmigd_moved_bytes_total", "counter",
	      "bytes the jobs' reports say moved to their target node", m->bytes_moved);
	family(s, "memmigd_node_moved_bytes_total", "counter",
	       "bytes that left from_node for to_node (placement queries before and after)");
	for (unsigned int i = 0; i <= METRICS_MAX_PAIRS; i++) {
		const struct node_pair *p = &m->pairs[i];

		if (i >= m->npairs && i < METRICS_MAX_PAIRS)
			continue;
		if (i == METRICS_MAX_PAIRS && !p->bytes)
			break;
		snprintf(from, sizeof(from), p->from < 0 ? "other" : "%d", p->from);
		snprintf(to, sizeof(to), p->to < 0 ? "other" : "%d", p->to);
		sample_u(s, (struct label[]){ { "from_node", from }, { "to_node", to },
					      { NULL, NULL } }, p->bytes);
	}
	family(s, "memmigd_last_job_rate_bytes_per_second", "gauge",
	       "the last job's bytes moved over its wall-clock time");
	sample_d(s, NULL, m->last_rate);
	family(s, "memmigd_job_duration_seconds", "histogram",
	       "wall-clock time of the jobs that ran (memmigd's jobs never pause the process)");
	for (size_t i = 0; i <= NR_BUCKETS; i++) {
		cum = i < NR_BUCKETS ? m->duration_buckets[i] : m->duration_count;
		snprintf(le, sizeof(le), i < NR_BUCKETS ? "%g" : "+Inf",
			 i < NR_BUCKETS ? duration_le[i] : 0);
		sample(s, "_bucket", (struct label[]){ { "le", le }, { NULL, NULL } }, true, cum, 0);
	}
	sample(s, "_sum", NULL, false, 0, m->duration_sum);
	sample(s, "_count", NULL, true, m->duration_count, 0);
	family(s, "memmigd_pages_failed_total", "counter",
	       "4 KiB pages the jobs could not move, by the kernel's errno");
	for (int e = 1; e <= METRICS_MAX_ERRNO; e++) {
		if (!m->pages_failed[e])
			continue;
		err = e < METRICS_MAX_ERRNO ? proto_errno_name(e, name, sizeof(name)) : "other";
		sample_u(s, (struct label[]){ { "error", err }, { NULL, NULL } }, m->pages_failed[e]);
	}
	one_u(s, "memmigd_pages_poisoned_total", "counter",
	      "pages not moved because of a memory error (EHWPOISON, EIO)", m->pages_poisoned);
}

/* Each running tiering the viewer may see (root: all; another uid: its
 * own, as the tiers op lists them), labelled by its id, pid and domain. */
static void render_tiers(struct sink *s, const struct metrics_now *now)
{
	static const struct {
		const char *name, *type, *help;
		size_t off;
		bool is_double;
	} fam[] = {
#define F(n, t, h, field, d) { "memmigd_tier_" n, t, h, offsetof(struct memmig_tier_stats, field), d }
		F("fast_bytes", "gauge", "resident bytes on the fast nodes (sampled)", bytes_fast, 0),
		F("slow_bytes", "gauge", "resident bytes on the slow nodes (sampled)", bytes_slow, 0),
		F("hot_bytes", "gauge", "resident bytes of the units touched last interval", hot_bytes, 0),
		F("hot_fast_bytes", "gauge", "of the hot bytes, those on the fast nodes", hot_fast, 0),
		F("promoted_bytes_total", "counter", "bytes moved to the fast nodes", promoted_bytes, 0),
		F("demoted_bytes_total", "counter", "bytes moved to the slow nodes", demoted_bytes, 0),
		F("promotions_total", "counter", "2 MiB units promoted", promotions, 0),
		F("demotions_total", "counter", "2 MiB units demoted", demotions, 0),
		F("bounces_total", "counter", "units moved back soon after a move", bounces, 0),
		F("intervals_total", "counter", "intervals run", intervals, 0),
		F("cpu_seconds_total", "counter", "CPU time of the engine, moves included", cpu_s, 1),
		F("pause_max_seconds", "gauge", "the longest batch of moves, a bound of any page's pause",
		  pause_max_s, 1),
#undef F
	};
	struct tiers_metric *t = NULL;
	unsigned int n = 0;
	char id[24], pid[16];

	if (!now->tiers || tiers_metrics(now->tiers, now->viewer, &t, &n))
		return;
	one_u(s, "memmigd_tiers", "gauge", "processes tiered now (for a user other than root, its own)", n);
	for (size_t f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
		family(s, fam[f].name, fam[f].type, fam[f].help);
		for (unsigned int i = 0; i < n; i++) {
			const char *p = (const char *)&t[i].st + fam[f].off;
			struct label l[] = { { "tier", id }, { "pid", pid },
					     { "domain", t[i].domain }, { NULL, NULL } };

			snprintf(id, sizeof(id), "%llu", (unsigned long long)t[i].id);
			snprintf(pid, sizeof(pid), "%d", t[i].pid);
			if (fam[f].is_double)
				sample_d(s, l, *(const double *)(const void *)p);
			else if (fam[f].off == offsetof(struct memmig_tier_stats, intervals))
				sample_u(s, l, *(const uint32_t *)(const void *)p);
			else
				sample_u(s, l, *(const uint64_t *)(const void *)p);
		}
	}
	free(t);
}

static void render(struct sink *s, struct metrics *m, const struct metrics_now *now)
{
	pthread_mutex_lock(&m->lock);
	render_daemon(s, m, now);
	render_requests(s, m);
	render_jobs(s, m, now);
	render_bytes(s, m);
	pthread_mutex_unlock(&m->lock);
	render_tiers(s, now);
}

char *metrics_text(struct metrics *m, const struct metrics_now *now)
{
	struct sink s = { 0 };
	char *buf = NULL;
	size_t len;

	s.text = open_memstream(&buf, &len);
	if (!s.text)
		return NULL;
	render(&s, m, now);
	if (fclose(s.text)) {
		free(buf);
		return NULL;
	}
	return buf;
}

struct json_object *metrics_json(struct metrics *m, const struct metrics_now *now)
{
	struct sink s = { .json = json_object_new_object() };

	render(&s, m, now);
	return s.json;
}

bool metrics_dirty(struct metrics *m)
{
	bool d;

	pthread_mutex_lock(&m->lock);
	d = m->dirty;
	pthread_mutex_unlock(&m->lock);
	return d;
}

char *metrics_file_text(struct metrics *m, const struct metrics_now *now)
{
	pthread_mutex_lock(&m->lock);
	m->dirty = false;
	pthread_mutex_unlock(&m->lock);
	return metrics_text(m, now);
}
