/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The --metrics-file writer (metrics-file.h).  The loop renders the text
 * (memory only) and posts it; this thread writes it.  Issue 34: the file
 * was written on the loop thread through a fixed name, PATH.tmp, opened
 * with O_CREAT|O_TRUNC: in a directory a collector's group may write, a
 * FIFO at that name blocked the loop for good (no client answered,
 * SIGTERM went unread), and a file someone else made there became the
 * metrics file, theirs.  Now the name is random and created with O_EXCL,
 * and whatever the file system does, the loop does not wait for it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon/metrics-file.h"
#include "util/log.h"

#define NAME_TRIES	16	/* random names taken already: give up after */

struct metrics_file {
	char path[PATH_MAX];
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;	/* CLOCK_MONOTONIC */
	char *pending;		/* the newest text, not yet written */
	bool stop;
	bool done;		/* the thread ended */
};

/* ".NAME.XXXXXX": NAME is path's last component. */
static int temp_name(const char *base, char *out, size_t len)
{
	static const char chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	unsigned char r[6];
	char sfx[sizeof(r) + 1];

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return -errno;
	for (size_t i = 0; i < sizeof(r); i++)
		sfx[i] = chars[r[i] % (sizeof(chars) - 1)];
	sfx[sizeof(r)] = '\0';
	return (size_t)snprintf(out, len, ".%s.%s", base, sfx) >= len ? -ENAMETOOLONG : 0;
}

static int write_all(int fd, const char *text)
{
	size_t len = strlen(text), done = 0;

	while (done < len) {
		ssize_t n = write(fd, text + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? -EIO : -errno;
		done += (size_t)n;
	}
	return 0;
}

int metrics_file_replace(const char *path, const char *text)
{
	char dir[PATH_MAX], tmp[NAME_MAX + 1];
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	int dfd, fd = -1, rc = 0;

	if (!*base)
		return -EISDIR;
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else if ((size_t)(slash - path) >= sizeof(dir))
		return -ENAMETOOLONG;
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	/* A new file: O_EXCL fails on anything already there, a link
	 * included; O_NOFOLLOW and O_NONBLOCK say so twice. */
	for (int i = 0; fd < 0 && i < NAME_TRIES; i++) {
		rc = temp_name(base, tmp, sizeof(tmp));
		if (rc)
			break;
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK |
			    O_CLOEXEC, 0644);
		rc = fd < 0 ? -errno : 0;
		if (rc != -EEXIST)
			break;
	}
	if (fd >= 0) {
		/* 0644 whatever the umask: the collector runs as another user. */
		if (fchmod(fd, 0644))
			rc = -errno;
		if (!rc)
			rc = write_all(fd, text);
		if (close(fd) && !rc)
			rc = -errno;
		if (!rc && renameat(dfd, tmp, dfd, base))
			rc = -errno;
		if (rc)
			unlinkat(dfd, tmp, 0);
	}
	close(dfd);
	return rc;
}

static void *writer(void *arg)
{
	struct metrics_file *f = arg;
	int said = 0;

	pthread_mutex_lock(&f->lock);
	for (;;) {
		char *text;
		int rc;

		while (!f->pending && !f->stop)
			pthread_cond_wait(&f->cond, &f->lock);
		if (!f->pending)
			break;
		text = f->pending;
		f->pending = NULL;
		pthread_mutex_unlock(&f->lock);
		rc = metrics_file_replace(f->path, text);
		free(text);
		/* Each new failure said once, and that it mended. */
		if (rc && rc != said)
			util_log(LOG_WARNING, "writing the metrics to %s: %s", f->path,
				 strerror(-rc));
		else if (!rc && said)
			util_log(LOG_INFO, "the metrics are written to %s again", f->path);
		said = rc;
		pthread_mutex_lock(&f->lock);
	}
	f->done = true;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

int metrics_file_start(const char *path, struct metrics_file **out)
{
	struct metrics_file *f = calloc(1, sizeof(*f));
	pthread_condattr_t ca;
	int rc;

	if (!f)
		return -ENOMEM;
	if ((size_t)snprintf(f->path, sizeof(f->path), "%s", path) >= sizeof(f->path)) {
		free(f);
		return -ENAMETOOLONG;
	}
	pthread_mutex_init(&f->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&f->cond, &ca);
	pthread_condattr_destroy(&ca);
	rc = pthread_create(&f->thread, NULL, writer, f);
	if (rc) {
		pthread_cond_destroy(&f->cond);
		pthread_mutex_destroy(&f->lock);
		free(f);
		return -rc;
	}
	*out = f;
	return 0;
}

void metrics_file_post(struct metrics_file *f, char *text)
{
	pthread_mutex_lock(&f->lock);
	free(f->pending);
	f->pending = text;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
}

bool metrics_file_stop(struct metrics_file *f, unsigned int timeout_ms)
{
	struct timespec until;
	bool done;

	if (!f)
		return true;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&f->lock);
	f->stop = true;
	pthread_cond_broadcast(&f->cond);
	while (!f->done && pthread_cond_timedwait(&f->cond, &f->lock, &until) != ETIMEDOUT)
		;
	done = f->done;
	pthread_mutex_unlock(&f->lock);
	if (!done) {
		/* It still holds f: both are left to the process's exit. */
		util_log(LOG_WARNING, "the metrics file %s: its writer is still waiting on the "
			 "file system after %u ms: not waiting for it", f->path, timeout_ms);
		pthread_detach(f->thread);
		return false;
	}
	pthread_join(f->thread, NULL);
	free(f->pending);
	pthread_cond_destroy(&f->cond);
	pthread_mutex_destroy(&f->lock);
	free(f);
	return true;
}
