/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Helpers the commands of memmig-cli and memmig-bench share: the table,
 * errors, sizes, JSON. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "front/front.h"
#include "util/cpuset.h"
#include "util/log.h"
#include "util/size.h"

const struct cli_cmd *cli_cmd_find(const struct cli_cmd *const *table,
				   const char *name)
{
	for (; *table; table++)
		if (!strcmp((*table)->name, name))
			return *table;
	return NULL;
}

void cli_cmd_list(FILE *f, const struct cli_cmd *const *table)
{
	for (; *table; table++)
		fprintf(f, "  %-12s %s\n", (*table)->name, (*table)->summary);
}

int cli_parse_json_args(int argc, char **argv, void (*usage)(FILE *), bool *json,
			const char *arg)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*json = false;
	while ((c = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			*json = true;
			cli_json_error_want();
			break;
		case 'h':
			usage(stdout);
			return CLI_HELP_SHOWN;
		default:
			usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (argc - optind != (arg ? 1 : 0)) {
		if (argc - optind > (arg ? 1 : 0))
			cli_error("%s: unexpected argument '%s'\n", cli_global.cmd,
				  argv[optind + (arg ? 1 : 0)]);
		else
			cli_error("%s: %s is missing\n", cli_global.cmd, arg);
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	return CLI_EXIT_OK;
}

void cli_verror(const char *format, va_list ap)
{
	util_vlog(NULL, LOG_ERR, format, ap);
}

void cli_error(const char *format, ...)
{
	va_list ap;

	va_start(ap, format);
	cli_verror(format, ap);
	va_end(ap);
	/* The same words for the --json error object (json-error.c). */
	va_start(ap, format);
	cli_json_error_note(format, ap);
	va_end(ap);
}

char *cli_set_cmd(const char *name)
{
	static char prefix[96];

	cli_global.cmd = name;
	snprintf(prefix, sizeof(prefix), "%s: error%s%s", program_invocation_short_name,
		 name ? ": " : "", name ? name : "");
	return prefix;
}

void cli_opt_error(const char *opt, const char *format, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, format);
	vsnprintf(msg, sizeof(msg), format, ap);
	va_end(ap);
	cli_error("%s%s%s: %s", cli_global.cmd ? cli_global.cmd : "",
		  cli_global.cmd ? ": " : "", opt, msg);
}

int cli_parse_size(const char *opt, const char *arg, size_t *out)
{
	if (util_size_parse(arg, out) < 0) {
		cli_opt_error(opt, "'%s' is not a size (e.g. 4096, 64K, 2M, 1G)\n", arg);
		return -EINVAL;
	}
	return 0;
}

int cli_parse_int(const char *opt, const char *arg, long min, long max, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(arg, &end, 10);
	if (errno || end == arg || *end || *out < min || *out > max) {
		cli_opt_error(opt, "expected a number from %ld to %ld, not '%s'\n", min,
			      max, arg);
		return -EINVAL;
	}
	return 0;
}

int cli_parse_size_list(const char *opt, const char *arg, size_t **out,
			size_t *count)
{
	char *copy = strdup(arg), *tok, *save = NULL;
	size_t n = 0, *v = NULL;
	int rc = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t *nv = realloc(v, (n + 1) * sizeof(*v));

		if (!nv) {
			rc = -ENOMEM;
			break;
		}
		v = nv;
		rc = cli_parse_size(opt, tok, &v[n]);
		if (rc < 0)
			break;
		if (!v[n]) {
			cli_opt_error(opt, "sizes must be above zero\n");
			rc = -EINVAL;
			break;
		}
		n++;
	}
	free(copy);
	if (!rc && !n) {
		cli_opt_error(opt, "empty list\n");
		rc = -EINVAL;
	}
	if (rc < 0) {
		free(v);
		return rc;
	}
	*out = v;
	*count = n;
	return 0;
}

const char *cli_size(size_t v, char *buf, size_t len)
{
	if (v == MEMMIG_SIZE_NEVER)
		return "never";
	return util_size_format(v, buf, len);
}

/* A vector copy's name, marked where this CPU cannot run it. */
static const char *vec_name(const struct memmig_cpu_info *cpu, int prim,
			    char *buf, size_t len)
{
	snprintf(buf, len, "%s%s", memmig_prim_name(prim),
		 memmig_prim_supported(cpu, prim) ? "" : " (not on this CPU)");
	return buf;
}

/* How the NT loops read their source: by blocks, prefetching, or neither. */
static const char *nt_source(const struct memmig_tuning *t, char *buf, size_t len)
{
	char n[24];

	if (t->nt_block)
		snprintf(buf, len, "by %s blocks", util_size_format(t->nt_block, n, sizeof(n)));
	else if (t->nt_prefetch)
		snprintf(buf, len, "prefetched %s ahead",
			 util_size_format(t->nt_prefetch, n, sizeof(n)));
	else
		snprintf(buf, len, "line by line");
	return buf;
}

const char *cli_thresholds(struct memmig_ctx *ctx, const struct memmig_tuning *t,
			   char *buf, size_t len)
{
	struct memmig_cpu_info cpu = { .sz = sizeof(cpu) };
	char v[160], w[80], b[32], q[32], n[32], c[32], pm[32], pf[48], p1[48], p2[48];

	memmig_ctx_get_cpu(ctx, &cpu);
	w[0] = '\0';
	if (t->vec_wide_min < t->vec_max && t->vec_wide_prim != t->vec_prim)
		snprintf(w, sizeof(w), " (%s from %s)",
			 vec_name(&cpu, t->vec_wide_prim, p2, sizeof(p2)),
			 util_size_format(t->vec_wide_min, n, sizeof(n)));
	if (t->vec_max == MEMMIG_SIZE_NEVER)
		snprintf(v, sizeof(v), "%s%s up to NT",
			 vec_name(&cpu, t->vec_prim, p1, sizeof(p1)), w);
	else if (t->vec_max)
		snprintf(v, sizeof(v), "%s%s below %s",
			 vec_name(&cpu, t->vec_prim, p1, sizeof(p1)), w,
			 util_size_format(t->vec_max, n, sizeof(n)));
	else
		snprintf(v, sizeof(v), "no vector copy");
	snprintf(buf, len, "%s, movsb from %s, movsq from %s, NT (%s) from %s, "
		 "cold NT from %s, pmem NT from %s, NT source %s", v,
		 cli_size(t->movsb_min, b, sizeof(b)),
		 cli_size(t->movsq_min, q, sizeof(q)), memmig_prim_name(t->nt_prim),
		 cli_size(t->nt_min, n, sizeof(n)), cli_size(t->nt_cold_min, c, sizeof(c)),
		 cli_size(t->pmem_nt_min, pm, sizeof(pm)),
		 nt_source(t, pf, sizeof(pf)));
	return buf;
}

const char *cli_desc_init(const struct memmig_tuning *t, char *buf, size_t len)
{
	const char *store = t->desc_store == MEMMIG_DESC_STORE_TEMPORAL ? "temporal" : "NT";

	char probe[48], sz[24];

	/* A thread's share from desc_probe_min measures both stores. */
	if (t->desc_probe_min == MEMMIG_SIZE_NEVER)
		snprintf(probe, sizeof(probe), "never probed");
	else
		snprintf(probe, sizeof(probe), "probed from %s",
			 util_size_format(t->desc_probe_min, sz, sizeof(sz)));
	if (t->desc_slow)
		snprintf(buf, len, "slow path (template stores: %s, %s)", store, probe);
	else
		snprintf(buf, len, "template path, %s stores first, %s", store, probe);
	return buf;
}

static struct json_object *json_size(size_t v)
{
	return v == MEMMIG_SIZE_NEVER ? NULL : json_object_new_int64((int64_t)v);
}

void cli_json_print(struct json_object *obj)
{
	puts(proto_json_string(obj, JSON_C_TO_STRING_PRETTY |
			       JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(obj);
	cli_json_printed();
}

struct json_object *cli_json_cpu(const struct memmig_cpu_info *cpu)
{
	struct json_object *o = json_object_new_object(), *f = json_object_new_array();

	json_object_object_add(o, "vendor", json_object_new_string(cpu->vendor));
	json_object_object_add(o, "family", json_object_new_int((int)cpu->family));
	json_object_object_add(o, "model", json_object_new_int((int)cpu->model));
	json_object_object_add(o, "stepping", json_object_new_int((int)cpu->stepping));
	for (int i = 0; i < 64; i++) {
		const char *name = memmig_cpu_feature_name(1ULL << i);

		if (name && (cpu->features & (1ULL << i)))
			json_object_array_add(f, json_object_new_string(name));
	}
	json_object_object_add(o, "features", f);
	json_object_object_add(o, "llc_bytes", json_object_new_int64((int64_t)cpu->llc_size));
	return o;
}

struct json_object *cli_json_tuning(const struct memmig_tuning *t)
{
	struct json_object *o = json_object_new_object();

	/* null: never */
	json_object_object_add(o, "movsb_min", json_size(t->movsb_min));
	json_object_object_add(o, "movsq_min", json_size(t->movsq_min));
	json_object_object_add(o, "nt_min", json_size(t->nt_min));
	json_object_object_add(o, "nt_prim",
			       json_object_new_string(memmig_prim_name(t->nt_prim)));
	json_object_object_add(o, "vec_max", json_size(t->vec_max));
	json_object_object_add(o, "vec_prim",
			       json_object_new_string(memmig_prim_name(t->vec_prim)));
	json_object_object_add(o, "nt_cold_min", json_size(t->nt_cold_min));
	json_object_object_add(o, "vec_wide_min", json_size(t->vec_wide_min));
	json_object_object_add(o, "vec_wide_prim",
			       json_object_new_string(memmig_prim_name(t->vec_wide_prim)));
	/* As the calibration file spells them. */
	json_object_object_add(o, "desc_store", json_object_new_string(
		t->desc_store == MEMMIG_DESC_STORE_TEMPORAL ? "temporal" : "nt"));
	json_object_object_add(o, "desc_path", json_object_new_string(
		t->desc_slow ? "slow" : "template"));
	json_object_object_add(o, "pmem_nt_min", json_size(t->pmem_nt_min));
	json_object_object_add(o, "nt_prefetch", json_object_new_int64((int64_t)t->nt_prefetch));
	json_object_object_add(o, "nt_block", json_object_new_int64((int64_t)t->nt_block));
	json_object_object_add(o, "desc_probe_min", json_size(t->desc_probe_min));
	return o;
}

/* Memory sizes for people: "512.0 MiB", "7.84 GiB". */
int cli_parse_dirty(const char *opt, const char *arg, int *out)
{
	const char *name;

	for (int m = MEMMIG_DIRTY_AUTO; (name = memmig_dirty_method_name(m)); m++) {
		if (!strcmp(arg, name)) {
			*out = m;
			return 0;
		}
	}
	cli_opt_error(opt, "auto, log, log-clear, ring, uffd-wp or soft-dirty, not '%s'\n",
		      arg);
	return -EINVAL;
}

int cli_unix_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

const char *cli_list_format(const int *v, size_t n, char *buf, size_t len)
{
	size_t off = 0;

	if (!n)
		return "-";
	buf[0] = '\0';
	for (size_t i = 0; i < n && off < len; i++) {
		size_t j = i;

		while (j + 1 < n && v[j + 1] == v[j] + 1)
			j++;
		if (j == i)
			off += (size_t)snprintf(buf + off, len - off, "%s%d", i ? "," : "",
						v[i]);
		else
			off += (size_t)snprintf(buf + off, len - off, "%s%d-%d",
						i ? "," : "", v[i], v[j]);
		i = j;
	}
	/* Too long for the line: mark the cut. */
	if (off >= len && len > 4)
		strcpy(buf + len - 4, "...");
	return buf;
}

int cli_node_check(struct memmig_ctx *ctx, const char *opt, int node)
{
	char msg[UTIL_NODELIST_MAX + 64];

	(void)ctx;
	/* The kernel's own list: a whole topology snapshot (DAX devices
	 * too) would cost every command's start more than the check. */
	if (!util_node_has_memory(node, msg, sizeof(msg)))
		return 0;	/* or memmigd or the move says it better */
	cli_json_error_errno(-ENOENT);
	cli_opt_error(opt, "%s\n", msg);
	return -ENOENT;
}

int cli_parse_nodeset(const char *opt, const char *arg, int *nodes, unsigned int *count)
{
	const char *list = arg + (*arg == '!');
	struct util_nodemap m;
	int rc = 0;

	_Static_assert(PROTO_MAX_NODE < UTIL_NODES_MAX, "a node map holds every protocol node");
	if (!strcmp(list, "all"))
		memset(&m, 0xff, sizeof(m));
	/* The kernel's list syntax, but "" or an empty item ("0,,1", "0,")
	 * is a typo here, not an empty set, and an argument is no line. */
	else if (!*list || *list == ',' || list[strlen(list) - 1] == ',' ||
		 strstr(list, ",,") || strchr(list, '\n') ||
		 util_nodemap_parse(list, &m))
		rc = -EINVAL;
	*count = 0;
	for (int n = 0; !rc && n <= PROTO_MAX_NODE; n++) {
		bool in = util_nodemap_has(&m, n);

		if (in != (*arg == '!'))
			nodes[(*count)++] = n;
	}
	if (!rc && !*count)
		rc = -EINVAL;
	if (rc == -EINVAL)
		cli_opt_error(opt, "'%s' is not a set of nodes from 0 to %d (like 0-2,4, "
			      "all, or !1 for all but 1)\n", arg, PROTO_MAX_NODE);
	return rc;
}
