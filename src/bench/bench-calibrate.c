/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmig-bench copy --calibrate: libmemmig measures this CPU's
 * crossovers (memmig_tuning_calibrate()); this writes them where the
 * library loads them, and shows the tables.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/bench.h"
#include "util/size.h"

struct cal_print {
	int step;
	unsigned int n;
	int prims[4];
};

/* Prints each step's table as libmemmig measures it, the header again
 * where a column's primitive changes (the vector copy, size by size). */
static void print_row(void *opaque, const struct memmig_calibrate_row *row)
{
	static const char *const titles[] = {
		[MEMMIG_CALIBRATE_SMALL] = "hot copies, GB/s",
		[MEMMIG_CALIBRATE_NT_PRIM] = "NT primitives beyond the cache (256 MiB), then cold pmem copies, GB/s",
		[MEMMIG_CALIBRATE_NT_MIN] = "repeated copies of one buffer, GB/s",
		[MEMMIG_CALIBRATE_VEC_PRIM] = "vector copies, hot, GB/s",
		[MEMMIG_CALIBRATE_NT_COLD] = "cold copies (MEMMIG_COPY_COLD), GB/s",
		[MEMMIG_CALIBRATE_DESC] = "descriptor table init, 1 thread, beyond the "
					  "cache, GB/s",
		[MEMMIG_CALIBRATE_PMEM_NT] = "cold pmem copies (MEMMIG_COPY_PMEM), temporal + flush against NT, GB/s",
		[MEMMIG_CALIBRATE_NT_PREFETCH] = "cold pmem NT copies prefetching the source 0, 1 KiB, 4 KiB ahead, and by blocks, GB/s",
		[MEMMIG_CALIBRATE_DISPATCH] = "memmig's dispatch, hot: the wide vector copy at every "
					      "size, and the vector copies as found, GB/s",
	};
	/* The descriptor step's columns are paths; its prims, their stores. */
	static const char *const desc_cols[] = { "slow", "template/NT", "template/tmp" };
	/* The fetch step's columns are the ways of one primitive. */
	static const char *const fetch_cols[] = { "no prefetch", "1 KiB ahead", "4 KiB ahead",
						  "blocks" };
	struct cal_print *last = opaque;
	char sz[32];

	if (row->step != last->step || row->n != last->n ||
	    memcmp(row->prims, last->prims, row->n * sizeof(int))) {
		if (row->step != last->step)
			printf("%s\n", titles[row->step]);
		printf("%10s", "size");
		for (unsigned int c = 0; c < row->n; c++)
			printf(" %12s", row->step == MEMMIG_CALIBRATE_DESC && c < 3 ? desc_cols[c] :
			       row->step == MEMMIG_CALIBRATE_NT_PREFETCH && c < 4 ?
			       fetch_cols[c] : memmig_prim_name(row->prims[c]));
		printf("\n");
		last->step = row->step;
		last->n = row->n;
		memcpy(last->prims, row->prims, row->n * sizeof(int));
	}
	printf("%10s", util_size_format(row->len, sz, sizeof(sz)));
	for (unsigned int c = 0; c < row->n; c++)
		printf(" %12.2f", row->gbps[c]);
	printf("\n");
}

static int mkdir_parent(const char *path)
{
	char *copy = strdup(path), *dir;
	int rc = 0;

	if (!copy)
		return -ENOMEM;
	dir = dirname(copy);
	if (strcmp(dir, ".") && strcmp(dir, "/")) {
		rc = mkdir_parent(dir);
		if (!rc && mkdir(dir, 0755) && errno != EEXIST)
			rc = -errno;
	}
	free(copy);
	return rc;
}

/* Creates and removes the file memmig_tuning_save() will write first. */
static int output_writable(const char *path)
{
	char tmp[4096];
	int fd;

	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	close(fd);
	unlink(tmp);
	return 0;
}

int bench_calibrate(struct memmig_ctx *ctx, const char *output, bool json)
{
	struct memmig_tuning t = { .sz = sizeof(t) };
	struct cal_print last = { .step = -1 };
	struct memmig_calibrate_opts o = {
		.sz = sizeof(o), .row = json ? NULL : print_row, .opaque = &last,
	};
	int rc;

	/* A path that cannot be written fails now, not after the measuring. */
	rc = mkdir_parent(output);
	if (!rc)
		rc = output_writable(output);
	if (rc < 0) {
		cli_error("calibrate: cannot write %s: %s\n", output, strerror(-rc));
		return rc;
	}
	bench_progress("calibrating: a few seconds");
	rc = memmig_tuning_calibrate(ctx, &o, &t);
	bench_progress_done();
	if (rc < 0) {
		cli_error("calibrate: %s\n", strerror(-rc));
		return rc;
	}
	rc = memmig_tuning_save(ctx, output, &t);
	if (rc < 0) {
		cli_error("calibrate: cannot write %s: %s\n", output, strerror(-rc));
		return rc;
	}
	memmig_ctx_set_tuning(ctx, &t);
	if (json) {
		struct json_object *j = json_object_new_object();

		json_object_object_add(j, "file", json_object_new_string(output));
		json_object_object_add(j, "tuning", cli_json_tuning(&t));
		cli_json_print(j);
	} else {
		char th[256], d[64];

		printf("\nwrote %s: %s; descriptor tables: %s\n", output,
		       cli_thresholds(ctx, &t, th, sizeof(th)), cli_desc_init(&t, d, sizeof(d)));
	}
	return 0;
}
