/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Durations for people. */
#ifndef MEMMIG_UTIL_DURATION_H
#define MEMMIG_UTIL_DURATION_H

#include <stddef.h>

/* Whole seconds as the two largest units that matter: "2 s", "3 min 4 s",
 * "5 h 6 min", "2 d 3 h". */
const char *util_duration_human(double seconds, char *buf, size_t buflen);

#endif
