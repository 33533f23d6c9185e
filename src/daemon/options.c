/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmigd's settings: defaults, and one setting by its name, which both
 * the configuration file and the command line go through so that the two
 * accept the same keys and values.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/memmigd.h"

void opts_defaults(struct memmigd_opts *o)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	*o = (struct memmigd_opts){ .max_jobs_per_node = 2,
				    .idle_timeout_s = MEMMIGD_IDLE_TIMEOUT_S };
	/* Each running job uses the daemon's CPUs; more than a few jobs at
	 * once only queue inside the kernel. */
	o->max_jobs = cpus > 0 && cpus < 32 ? 64 : 128;
	snprintf(o->socket, sizeof(o->socket), "%s", PROTO_SOCKET_DEFAULT);
	snprintf(o->config, sizeof(o->config), "%s", MEMMIGD_CONFIG_DEFAULT);
}

static int set_str(char *dst, size_t size, const char *key, const char *v,
		   char *err, size_t errlen)
{
	if (strlen(v) >= size) {
		snprintf(err, errlen, "%s: longer than %zu bytes", key, size - 1);
		return -EINVAL;
	}
	memcpy(dst, v, strlen(v) + 1);
	return 0;
}

/* A daemon's cwd is "/": a relative path would only mislead. */
static int set_path(char *dst, size_t size, const char *key, const char *v,
		    char *err, size_t errlen)
{
	if (v[0] != '/') {
		snprintf(err, errlen, "%s: an absolute path, not '%s'", key, v);
		return -EINVAL;
	}
	return set_str(dst, size, key, v, err, errlen);
}

static int set_uint(unsigned int *dst, const char *key, const char *v,
		    unsigned int min, unsigned int max, char *err, size_t errlen)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(v, &end, 10);
	if (errno || end == v || *end || n < min || n > max) {
		snprintf(err, errlen, "%s: an integer %u..%u, not '%s'", key, min, max, v);
		return -EINVAL;
	}
	*dst = (unsigned int)n;
	return 0;
}

static int set_bool(bool *dst, const char *key, const char *v, char *err, size_t errlen)
{
	if (!strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "1")) {
		*dst = true;
	} else if (!strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "0")) {
		*dst = false;
	} else {
		snprintf(err, errlen, "%s: yes or no, not '%s'", key, v);
		return -EINVAL;
	}
	return 0;
}

int opts_set(struct memmigd_opts *o, const char *key, const char *v,
	     char *err, size_t errlen)
{
	bool b;
	int rc;

	if (!strcmp(key, "socket"))
		return set_path(o->socket, sizeof(o->socket), key, v, err, errlen);
	if (!strcmp(key, "metrics-file"))
		return set_path(o->metrics_file, sizeof(o->metrics_file), key, v, err, errlen);
	if (!strcmp(key, "state-file"))
		return set_path(o->state_file, sizeof(o->state_file), key, v, err, errlen);
	if (!strcmp(key, "group"))
		return set_str(o->group, sizeof(o->group), key, v, err, errlen);
	if (!strcmp(key, "libvirt-uri"))
		return set_str(o->libvirt_uri, sizeof(o->libvirt_uri), key, v, err, errlen);
	if (!strcmp(key, "max-jobs-per-node"))
		return set_uint(&o->max_jobs_per_node, key, v, 1, 64, err, errlen);
	if (!strcmp(key, "max-jobs"))
		return set_uint(&o->max_jobs, key, v, 1, 4096, err, errlen);
	if (!strcmp(key, "idle-timeout"))
		return set_uint(&o->idle_timeout_s, key, v, 0, 86400, err, errlen);
	if (!strcmp(key, "no-libvirt"))
		return set_bool(&o->no_libvirt, key, v, err, errlen);
	if (!strcmp(key, "foreground"))
		return set_bool(&o->foreground, key, v, err, errlen);
	if (!strcmp(key, "verbose")) {
		rc = set_bool(&b, key, v, err, errlen);
		if (!rc)
			o->verbose = b;
		return rc;
	}
	snprintf(err, errlen, "unknown setting '%s'", key);
	return -EINVAL;
}
