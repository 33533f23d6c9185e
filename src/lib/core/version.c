/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The version of the library that runs, which may be newer than the
 * memmig-version.h a program was built with.
 */
#include <errno.h>

#include "memmig.h"

const char *memmig_version(void)
{
	return MEMMIG_VERSION_STRING;
}

/* Same major (0.x: same minor, as 0.x minors may break), minor at least. */
int memmig_version_check(unsigned int major, unsigned int minor)
{
	if (major != MEMMIG_VERSION_MAJOR || minor > MEMMIG_VERSION_MINOR)
		return -EOPNOTSUPP;
	if (major == 0 && minor != MEMMIG_VERSION_MINOR)
		return -EOPNOTSUPP;
	return 0;
}
