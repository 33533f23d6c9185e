/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memmig-cli cpu: the detected CPU, the copy thresholds and what they pick. */
#include <getopt.h>
#include <string.h>

#include "cli/cli.h"
#include "util/size.h"

static const size_t sample_sizes[] = {
	16, 168, 512, 1024, 2048, 4096, 64 << 10, 2 << 20, 64 << 20, 1 << 30,
};
#define N_SAMPLES (sizeof(sample_sizes) / sizeof(sample_sizes[0]))

static void cpu_usage(FILE *f)
{
	fprintf(f, "Usage: memmig-cli cpu [--json]\n"
		   "Shows the CPU features memmig detected, the copy thresholds in\n"
		   "force (defaults, calibration file, environment), the descriptor\n"
		   "tables' init and the copy primitive each size dispatches to.\n");
}

static void cpu_print_text(struct memmig_ctx *ctx,
			   const struct memmig_cpu_info *cpu,
			   const struct memmig_tuning *t)
{
	char buf[32];

	printf("cpu:        %s family %#x model %#x stepping %u\n",
	       cpu->vendor[0] ? cpu->vendor : "(not x86)", cpu->family,
	       cpu->model, cpu->stepping);
	printf("features:  ");
	for (int i = 0; i < 64; i++) {
		const char *name = memmig_cpu_feature_name(1ULL << i);

		if (name && (cpu->features & (1ULL << i)))
			printf(" %s", name);
	}
	printf("\nllc:        %s\n", util_size_format(cpu->llc_size, buf, sizeof(buf)));
	char th[256];

	printf("thresholds: %s\n", cli_thresholds(ctx, t, th, sizeof(th)));
	printf("descriptor tables: %s\n", cli_desc_init(t, th, sizeof(th)));
	/* The one the context loaded: the environment's wins. */
	const char *cal = getenv("MEMMIG_CALIBRATION");

	printf("calibration file: %s%s\n\n", cal ? cal : memmig_tuning_default_path(),
	       cal ? " (MEMMIG_CALIBRATION)" : "");
	printf("%10s  %-10s %-10s %-10s %-10s\n", "size", "default", "cold", "temporal",
	       "pmem");
	for (size_t i = 0; i < N_SAMPLES; i++)
		printf("%10s  %-10s %-10s %-10s %-10s\n",
		       util_size_format(sample_sizes[i], buf, sizeof(buf)),
		       memmig_prim_name(memmig_copy_query(ctx, sample_sizes[i], 0)),
		       memmig_prim_name(memmig_copy_query(ctx, sample_sizes[i],
							  MEMMIG_COPY_COLD)),
		       memmig_prim_name(memmig_copy_query(ctx, sample_sizes[i],
							  MEMMIG_COPY_TEMPORAL)),
		       memmig_prim_name(memmig_copy_query(ctx, sample_sizes[i],
							  MEMMIG_COPY_PMEM)));
}

static void cpu_print_json(struct memmig_ctx *ctx,
			   const struct memmig_cpu_info *cpu,
			   const struct memmig_tuning *t)
{
	struct json_object *o = json_object_new_object(), *d = json_object_new_array();

	json_object_object_add(o, "cpu", cli_json_cpu(cpu));
	json_object_object_add(o, "tuning", cli_json_tuning(t));
	for (size_t i = 0; i < N_SAMPLES; i++) {
		struct json_object *row = json_object_new_object();
		size_t n = sample_sizes[i];

		json_object_object_add(row, "size", json_object_new_int64((int64_t)n));
		json_object_object_add(row, "default", json_object_new_string(
			memmig_prim_name(memmig_copy_query(ctx, n, 0))));
		json_object_object_add(row, "cold", json_object_new_string(
			memmig_prim_name(memmig_copy_query(ctx, n, MEMMIG_COPY_COLD))));
		json_object_object_add(row, "temporal", json_object_new_string(
			memmig_prim_name(memmig_copy_query(ctx, n, MEMMIG_COPY_TEMPORAL))));
		json_object_object_add(row, "pmem", json_object_new_string(
			memmig_prim_name(memmig_copy_query(ctx, n, MEMMIG_COPY_PMEM))));
		json_object_array_add(d, row);
	}
	json_object_object_add(o, "dispatch", d);
	cli_json_print(o);
}

static int cpu_run(struct memmig_ctx *ctx, int argc, char **argv)
{
	struct memmig_cpu_info cpu = { .sz = sizeof(cpu) };
	struct memmig_tuning t = { .sz = sizeof(t) };
	bool json = false;
	int c;

	c = cli_parse_json_only(argc, argv, cpu_usage, &json);
	if (c)
		return c < 0 ? CLI_EXIT_OK : c;
	memmig_ctx_get_cpu(ctx, &cpu);
	memmig_ctx_get_tuning(ctx, &t);
	if (json)
		cpu_print_json(ctx, &cpu, &t);
	else
		cpu_print_text(ctx, &cpu, &t);
	return CLI_EXIT_OK;
}

const struct cli_cmd cli_cmd_cpu = {
	.name = "cpu",
	.summary = "show CPU features, copy thresholds and dispatch",
	.run = cpu_run,
};
