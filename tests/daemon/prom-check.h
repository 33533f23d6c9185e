/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The Prometheus text format, checked strictly, and one sample's value. */
#ifndef MEMMIG_TESTS_DAEMON_PROM_CHECK_H
#define MEMMIG_TESTS_DAEMON_PROM_CHECK_H

#include <stdbool.h>
#include <stddef.h>

/* Whether text is valid; why not in why. */
bool prom_check(const char *text, char *why, size_t len);
/* The value of the sample written exactly as sample ("name{a=\"b\"}"),
 * NAN when there is none. */
double prom_value(const char *text, const char *sample);

#endif
