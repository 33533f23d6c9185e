/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * --metrics-file: the text the loop renders, written by a thread of its
 * own.  The file's directory may be writable by others (a collector's
 * group): nothing there may block the loop, and nothing there is opened
 * but a file memmigd has just created itself.
 */
#ifndef MEMMIGD_METRICS_FILE_H
#define MEMMIGD_METRICS_FILE_H

#include <stdbool.h>

struct metrics_file;

/* The writer for path; 0 or -errno. */
int metrics_file_start(const char *path, struct metrics_file **out);
/* Hands text (malloc'd; taken) to the writer: it replaces a text still
 * waiting.  Never blocks on the file system. */
void metrics_file_post(struct metrics_file *f, char *text);
/*
 * Writes what waits, then ends the writer: true once it did.  A writer
 * still busy after timeout_ms (a file system that hangs) is left behind,
 * detached, so that memmigd can exit: false.
 */
bool metrics_file_stop(struct metrics_file *f, unsigned int timeout_ms);

/*
 * Replaces path with text, atomically for its readers: a new file of a
 * random name beside it (".NAME.XXXXXX", which a textfile collector's
 * *.prom does not match), created with O_EXCL (so never a file, FIFO or
 * link someone else put there), mode 0644 whatever the umask, renamed
 * over path.  0 or -errno.
 */
int metrics_file_replace(const char *path, const char *text);

#endif
