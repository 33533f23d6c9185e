/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Where this package's other programs are: memmig-cli runs memmig-bench
 * for "bench" and "demo", and bench move runs memmig-cli.  Beside the
 * running program first (installed, both are in bindir), then in the
 * build tree the running one is in, then bindir.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "front/front.h"

static bool ends_with(const char *s, size_t n, const char *tail)
{
	size_t t = strlen(tail);

	return n >= t && !memcmp(s + n - t, tail, t);
}

static int try_path(char *path, size_t len, const char *dir, size_t dlen,
		    const char *mid, const char *prog)
{
	if ((size_t)snprintf(path, len, "%.*s%s/%s", (int)dlen, dir, mid, prog) >= len)
		return -ENAMETOOLONG;
	return access(path, X_OK) ? -errno : 0;
}

int cli_program_path(const char *prog, char *path, size_t len)
{
	/* memmig-cli is built in src/cli, memmig-bench in src/bench. */
	const char *folder = strchr(prog, '-') ? strchr(prog, '-') + 1 : prog;
	char self[PATH_MAX], mid[64];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;
	size_t dlen;
	bool libs;

	if (n <= 0)
		goto bindir;
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (!slash)
		goto bindir;
	dlen = (size_t)(slash - self);
	if (!try_path(path, len, self, dlen, "", prog))
		return 0;
	/* In a build tree libtool keeps the program in .libs/, run by a
	 * wrapper that set the library path, which the other inherits. */
	libs = ends_with(self, dlen, "/.libs");
	if (libs)
		dlen -= strlen("/.libs");
	if (ends_with(self, dlen, "/src/cli") || ends_with(self, dlen, "/src/bench")) {
		snprintf(mid, sizeof(mid), "/../%s/.libs", folder);
		if (libs && !try_path(path, len, self, dlen, mid, prog))
			return 0;
		snprintf(mid, sizeof(mid), "/../%s", folder);
		if (!try_path(path, len, self, dlen, mid, prog))
			return 0;
	}
bindir:
	return try_path(path, len, MEMMIG_BINDIR, strlen(MEMMIG_BINDIR), "", prog);
}
