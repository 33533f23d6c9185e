/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmigd: runs memory migrations for processes that do not link
 * libmemmig, on requests over a UNIX socket (docs/protocol.md,
 * docs/memmigd.8).
 *
 * Exit codes: 0 stopped by SIGTERM/SIGINT, 1 could not start or failed,
 * 2 bad options or configuration.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "daemon/memmigd.h"
#include "daemon/state.h"
#include "daemon/tiers.h"

enum { EXIT_RUN_FAILED = 1, EXIT_USAGE = 2 };

static const struct option long_opts[] = {
	{ "socket", required_argument, NULL, 's' },
	{ "group", required_argument, NULL, 'g' },
	{ "config", required_argument, NULL, 'c' },
	{ "foreground", no_argument, NULL, 'f' },
	{ "max-jobs-per-node", required_argument, NULL, 'N' },
	{ "max-jobs", required_argument, NULL, 'J' },
	{ "idle-timeout", required_argument, NULL, 'I' },
	{ "libvirt-uri", required_argument, NULL, 'u' },
	{ "no-libvirt", no_argument, NULL, 'L' },
	{ "metrics-file", required_argument, NULL, 'M' },
	{ "state-file", required_argument, NULL, 'S' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: memmigd [OPTIONS]\n"
		"Moves processes' memory between NUMA nodes on request over a UNIX socket.\n\n"
		"  -s, --socket PATH           the socket (default %s)\n"
		"  -g, --group NAME            the socket's group (mode 0660)\n"
		"  -c, --config FILE           settings (default %s; may be missing)\n"
		"  -f, --foreground            do not detach; under systemd\n"
		"      --max-jobs-per-node N   jobs running at once per target node (default 2)\n"
		"      --max-jobs N            jobs queued or running (default 64); a user\n"
		"                              other than root gets a quarter, root the last eighth\n"
		"      --idle-timeout S        close clients silent for S seconds (default %d; 0 never)\n"
		"      --libvirt-uri URI       libvirt connection (default qemu:///system)\n"
		"      --no-libvirt            no libvirt: domains only from the hook\n"
		"      --metrics-file PATH     keep the metrics (Prometheus text) in PATH,\n"
		"                              rewritten at most once a second on a change\n"
		"      --state-file PATH       what a restart finds: job ids, lost jobs, the\n"
		"                              kdamond (default: beside the socket, .state)\n"
		"  -v, --verbose               debug messages\n"
		"  -h, --help, -V, --version\n"
		"Under systemd: Type=notify, socket activation (memmigd.socket).\n"
		"Logs go to stderr.  Exit codes: 0 stopped by SIGTERM or SIGINT, 1 failed,\n"
		"2 bad options or configuration.  See memmigd(8).\n",
		PROTO_SOCKET_DEFAULT, MEMMIGD_CONFIG_DEFAULT, MEMMIGD_IDLE_TIMEOUT_S);
}

/* The configuration file first, then the command line over it. */
static int parse_args(int argc, char **argv, struct memmigd_opts *o)
{
	static const char *const keys[128] = {
		['s'] = "socket", ['g'] = "group", ['N'] = "max-jobs-per-node",
		['J'] = "max-jobs", ['u'] = "libvirt-uri", ['I'] = "idle-timeout",
		['M'] = "metrics-file", ['S'] = "state-file",
	};
	bool config_given = false;
	char err[512];
	int c;

	opts_defaults(o);
	while ((c = getopt_long(argc, argv, "s:g:c:fvhV", long_opts, NULL)) != -1) {
		if (c == 'c') {
			snprintf(o->config, sizeof(o->config), "%s", optarg);
			config_given = true;
		} else if (c == 'h') {
			usage(stdout);
			exit(0);
		} else if (c == 'V') {
			printf("memmigd %s (protocol %d)\n", PACKAGE_VERSION, PROTO_VERSION);
			exit(0);
		} else if (c == '?') {
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		util_log(LOG_ERR, "unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
	if (config_load(o, o->config, !config_given, err, sizeof(err))) {
		util_log(LOG_ERR, "%s", err);
		return -EINVAL;
	}
	optind = 1;
	while ((c = getopt_long(argc, argv, "s:g:c:fvhV", long_opts, NULL)) != -1) {
		if (c == 'f')
			o->foreground = true;
		else if (c == 'v')
			o->verbose = 1;
		else if (c == 'L')
			o->no_libvirt = true;
		else if (c < 128 && keys[c] && opts_set(o, keys[c], optarg, err, sizeof(err))) {
			util_log(LOG_ERR, "--%s", err);
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * Without --foreground: fork, the parent exits once the socket listens
 * (so that whoever started memmigd may connect at once), the child leaves
 * the session.  stdin and stdout go to /dev/null; stderr stays, since
 * that is where memmigd logs.
 */
static int detach(void)
{
	pid_t pid = fork();
	int fd;

	if (pid < 0)
		return -errno;
	if (pid > 0)
		_exit(0);
	if (setsid() < 0)
		return -errno;
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	dup2(fd, STDIN_FILENO);
	dup2(fd, STDOUT_FILENO);
	close(fd);
	return chdir("/") ? -errno : 0;
}

/* Signals: SIGTERM and SIGINT through the loop's signalfd, blocked in
 * every thread (workers inherit the mask); SIGPIPE and SIGHUP ignored. */
static void setup_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
}

/* 256 clients, a /proc fd per active job and libmemmig's own fds. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* The socket systemd passed (memmigd.socket), else our own at --socket. */
static int listen_here(struct memmigd *d)
{
	struct sockaddr_un sa;
	socklen_t len = sizeof(sa);
	int rc = notify_listen_fd(&d->listen_fd);

	if (rc < 0)
		return rc;
	if (rc == 0)
		return sock_listen(d->opts.socket, d->opts.group, &d->listen_fd);
	d->activated = true;
	/* What status shows and clients were told: systemd's path. */
	if (!getsockname(d->listen_fd, (struct sockaddr *)&sa, &len) && sa.sun_path[0] &&
	    len > offsetof(struct sockaddr_un, sun_path))
		snprintf(d->opts.socket, sizeof(d->opts.socket), "%.*s",
			 (int)(len - offsetof(struct sockaddr_un, sun_path)), sa.sun_path);
	return 0;
}

/* memmig_tier_damon_owner_fn: the kdamond memmigd runs goes in its state file. */
static void kdamond_owner(int index, int kpid, void *opaque)
{
	state_kdamond_set(opaque, index, kpid);
}

/* A kdamond that a killed memmigd left on is stopped -- that one, by its
 * thread's pid, never another -- before this one tiers anything. */
static void reclaim_kdamond(struct state *st)
{
	char why[256] = "";
	int index, kpid, rc;

	if (state_kdamond_left(st, &index, &kpid)) {
		rc = memmig_tier_damon_reclaim(index, kpid, why, sizeof(why));
		util_log(rc && rc != -ESRCH ? LOG_WARNING : LOG_INFO, "DAMON: %s", why);
		state_kdamond_set(st, -1, 0);
	}
	memmig_tier_damon_set_owner(kdamond_owner, st);
}

static int start(struct memmigd *d)
{
	const char *uri = NULL;
	int rc;

	rc = memmig_ctx_new(&d->ctx);
	if (rc) {
		util_log(LOG_ERR, "libmemmig: %s", strerror(-rc));
		return rc;
	}
	memmig_ctx_set_log_fn(d->ctx, util_log_memmig, NULL);
	d->wake_fd = eventfd(0, EFD_CLOEXEC);
	if (d->wake_fd < 0)
		return -errno;
	clock_gettime(CLOCK_MONOTONIC, &d->started);
	rc = metrics_new(&d->metrics);
	if (!rc)
		rc = events_new(d->wake_fd, &d->events);
	if (rc)
		return rc;
#ifdef HAVE_LIBVIRT
	if (!d->opts.no_libvirt)
		uri = d->opts.libvirt_uri;
#endif
	if (!d->opts.state_file[0])
		state_path_for(d->opts.socket, d->opts.state_file, sizeof(d->opts.state_file));
	rc = state_open(d->opts.state_file, &d->state);
	if (rc)
		return rc;
	reclaim_kdamond(d->state);
	/* The tiers before the watcher: a domain found at its first
	 * connect may ask for its tiering at once. */
	rc = tiers_new(d->ctx, d->events, &d->tiers);
	if (!rc)
		rc = domains_new(uri, ops_domain_move, ops_domain_tier, d, d->state,
				 &d->domains);
	if (!rc)
		domains_set_event_fn(d->domains, ops_domain_event);
	if (!rc)
		rc = jobs_new(d->ctx, d->domains, d->opts.max_jobs_per_node, d->opts.max_jobs,
			      d->wake_fd, &d->jobs);
	if (!rc) {
		jobs_observe(d->jobs, d->metrics, d->events);
		jobs_persist(d->jobs, d->state);
	}
	if (rc)
		util_log(LOG_ERR, "starting: %s", strerror(-rc));
	return rc;
}

static void stop(struct memmigd *d)
{
	/* The watcher first: it submits jobs. */
	domains_free(d->domains);
	tiers_free(d->tiers);
	memmig_tier_damon_set_owner(NULL, NULL);
	jobs_free(d->jobs);
	events_free(d->events);
	metrics_free(d->metrics);
	state_free(d->state);
	if (d->wake_fd >= 0)
		close(d->wake_fd);
	if (d->listen_fd >= 0)
		close(d->listen_fd);
	memmig_ctx_unref(d->ctx);
}

int main(int argc, char **argv)
{
	struct memmigd d = { .listen_fd = -1, .wake_fd = -1 };
	int rc;

	/* One form for every error, getopt's own included. */
	util_log_setup("memmigd", LOG_INFO);
	argv[0] = "memmigd: error";
	if (parse_args(argc, argv, &d.opts))
		return EXIT_USAGE;
	util_log_setup("memmigd", d.opts.verbose ? LOG_DEBUG : LOG_INFO);
	setup_signals();
	raise_fd_limit();
	if (geteuid() != 0)
		util_log(LOG_WARNING, "not running as root: only this user's processes can be moved");
	rc = listen_here(&d);
	if (rc)
		return EXIT_RUN_FAILED;
	/* Threads and the ring come after the fork: neither survives one. */
	if (!d.opts.foreground && (rc = detach())) {
		util_log(LOG_ERR, "detaching: %s", strerror(-rc));
		if (!d.activated)
			sock_remove(d.opts.socket);
		return EXIT_RUN_FAILED;
	}
	rc = start(&d);
	if (!rc)
		rc = loop_run(&d);
	if (rc && !d.activated)
		sock_remove(d.opts.socket);
	else if (!rc)
		util_log(LOG_INFO, "stopped");
	stop(&d);
	return rc ? EXIT_RUN_FAILED : 0;
}
