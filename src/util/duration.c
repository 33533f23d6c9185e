/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Durations for people: an uptime reads "3 min 4 s", not "0 d 00:03:04". */
#include <stdio.h>

#include "util/duration.h"

const char *util_duration_human(double seconds, char *buf, size_t buflen)
{
	unsigned long long s = seconds > 0 ? (unsigned long long)seconds : 0;

	if (s < 60)
		snprintf(buf, buflen, "%llu s", s);
	else if (s < 3600)
		snprintf(buf, buflen, "%llu min %llu s", s / 60, s % 60);
	else if (s < 86400)
		snprintf(buf, buflen, "%llu h %llu min", s / 3600, s / 60 % 60);
	else
		snprintf(buf, buflen, "%llu d %llu h", s / 86400, s / 3600 % 24);
	return buf;
}
