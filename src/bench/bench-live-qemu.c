/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench live's peer: QEMU's own live migration of a guest of the same RAM
 * size, between two QEMU processes on this host (what a user would run to
 * move a guest's memory without memmig: a local migration, as for a QEMU
 * upgrade).  The guest is qemu-guest.S, writing or idle.  QEMU's defaults,
 * but for the bandwidth, which it caps at 128 MiB/s and a local user lifts.
 */
#include "config.h"	/* _GNU_SOURCE */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench-live.h"
#include "bench/bench.h"
#include "bench/qmp.h"
#include "front/front.h"

extern const unsigned char bench_qemu_guest_start[], bench_qemu_guest_end[];
extern const unsigned char bench_qemu_guest_write[], bench_qemu_guest_idle[];

#define QEMU "qemu-system-x86_64"
#define LOAD_ADDR 0x100000u		/* multiboot: the kernel at 1 MiB */
#define HEADER_WORDS 8
#define START_TIMEOUT_MS 60000	/* QEMU's socket, the firmware */
/* The first pass over the RAM, a minute a GiB more: nested KVM maps the
 * guest's pages at its first touch, slowly, and slower on busy CPUs. */
#define READY_TIMEOUT_MS(mem) (START_TIMEOUT_MS + (int)((mem) >> 30) * 60000)

struct qemu_vm {
	pid_t pid;
	struct qmp qmp;
};

/* The multiboot header with load addresses (flag 16: no ELF needed), then
 * the guest's code; entered at the writer or the idle loop. */
static int guest_write(const char *path, bool writing)
{
	const unsigned char *entry = writing ? bench_qemu_guest_write : bench_qemu_guest_idle;
	uint32_t h[HEADER_WORDS] = { 0x1BADB002, 0x00010002 };
	size_t code = (size_t)(bench_qemu_guest_end - bench_qemu_guest_start);
	FILE *f = fopen(path, "we");
	int rc = 0;

	if (!f)
		return -errno;
	h[2] = -(h[0] + h[1]);
	h[3] = LOAD_ADDR;	/* the header's own address */
	h[4] = LOAD_ADDR;	/* load the file from its start */
	h[7] = LOAD_ADDR + sizeof(h) + (uint32_t)(entry - bench_qemu_guest_start);
	if (fwrite(h, sizeof(h), 1, f) != 1 || fwrite(bench_qemu_guest_start, code, 1, f) != 1)
		rc = -EIO;
	if (fclose(f) && !rc)
		rc = -errno;
	return rc;
}

static int qemu_start(struct qemu_vm *vm, const struct qemu_peer *p, const char *dir,
		      const char *name, const char *incoming)
{
	char mem[32], kernel[256], qmp[256], log[256], in[256];
	const char *argv[32];
	int n = 0, fd;

	snprintf(mem, sizeof(mem), "%zuM", p->mem >> 20);
	snprintf(kernel, sizeof(kernel), "%s/guest.bin", dir);
	snprintf(qmp, sizeof(qmp), "unix:%s/%s.qmp,server=on,wait=off", dir, name);
	snprintf(log, sizeof(log), "%s/%s.log", dir, name);
	argv[n++] = QEMU;
	argv[n++] = "-nodefaults";
	argv[n++] = "-no-user-config";
	argv[n++] = "-display";
	argv[n++] = "none";
	argv[n++] = "-machine";
	argv[n++] = p->kvm ? "pc,accel=kvm" : "pc,accel=tcg";
	argv[n++] = "-cpu";
	argv[n++] = "qemu64";	/* host fails on some nested hosts (MSR 0x10a) */
	argv[n++] = "-m";
	argv[n++] = mem;
	argv[n++] = "-mem-prealloc";	/* as minivmm's RAM: no fault timed */
	argv[n++] = "-kernel";
	argv[n++] = kernel;
	argv[n++] = "-qmp";
	argv[n++] = qmp;
	if (incoming) {
		snprintf(in, sizeof(in), "unix:%s", incoming);
		argv[n++] = "-incoming";
		argv[n++] = in;
	}
	argv[n] = NULL;
	vm->qmp.fd = -1;
	vm->pid = fork();
	if (vm->pid < 0)
		return -errno;
	if (vm->pid == 0) {
		fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp(QEMU, (char *const *)argv);
		_exit(127);
	}
	snprintf(qmp, sizeof(qmp), "%s/%s.qmp", dir, name);
	return qmp_open(&vm->qmp, qmp, START_TIMEOUT_MS);
}

static void qemu_stop(struct qemu_vm *vm)
{
	struct timespec t = { 0, 10 * 1000 * 1000 };
	int status;

	if (vm->qmp.fd >= 0) {
		qmp_call(&vm->qmp, "quit", NULL, NULL);
		qmp_close(&vm->qmp);
	}
	if (vm->pid <= 0)
		return;
	for (int i = 0; i < 300; i++) {
		if (waitpid(vm->pid, &status, WNOHANG) == vm->pid)
			return;
		nanosleep(&t, NULL);
	}
	kill(vm->pid, SIGKILL);
	waitpid(vm->pid, &status, 0);
}

/* Until the guest wrote all of its RAM once: its dword at 2 MiB reads 2
 * (qemu-guest.S), or the timeout. */
static int guest_ready(struct qemu_vm *vm, size_t mem)
{
	struct timespec t = { 0, 20 * 1000 * 1000 };
	struct json_object *a, *r;
	unsigned long v = 0;
	const char *colon;
	int rc = 0;

	for (int waited = 0; !rc && v < 2; waited += 20) {
		if (waited > READY_TIMEOUT_MS(mem)) {
			cli_error("live: QEMU: the guest did not write its RAM in %d s\n",
				  READY_TIMEOUT_MS(mem) / 1000);
			return -ETIMEDOUT;
		}
		a = json_object_new_object();
		json_object_object_add(a, "command-line",
				       json_object_new_string("xp /1wx 0x200000"));
		r = NULL;
		rc = qmp_call(&vm->qmp, "human-monitor-command", a, &r);
		colon = r ? strchr(json_object_get_string(r), ':') : NULL;
		v = colon ? strtoul(colon + 1, NULL, 16) : 0;
		json_object_put(r);
		if (v < 2)
			nanosleep(&t, NULL);
	}
	return rc;
}

/* query-migrate until it ends, or the timeout (then migrate_cancel). */
static int migrate_wait(struct qemu_vm *src, const struct qemu_peer *p,
			struct qemu_result *out)
{
	struct timespec t = { 0, 5 * 1000 * 1000 };
	double until = bench_now() + p->timeout_s;
	struct json_object *st = NULL, *ram;
	const char *status = "active";
	int rc;

	for (;;) {
		json_object_put(st);
		st = NULL;
		rc = qmp_call(&src->qmp, "query-migrate", NULL, &st);
		if (rc < 0)
			return rc;
		status = cli_json_str(st, "status", "none");
		if (strcmp(status, "active") && strcmp(status, "setup") &&
		    strcmp(status, "device") && strcmp(status, "pre-switchover"))
			break;
		if (bench_now() > until) {
			qmp_call(&src->qmp, "migrate_cancel", NULL, NULL);
			break;
		}
		nanosleep(&t, NULL);
	}
	out->converged = !strcmp(status, "completed");
	out->total_s = cli_json_int(st, "total-time", 0) / 1e3;
	out->downtime_s = cli_json_int(st, "downtime", -1) / 1e3;
	if (json_object_object_get_ex(st, "ram", &ram)) {
		out->rounds = (uint64_t)cli_json_int(ram, "dirty-sync-count", 0);
		out->transferred = (uint64_t)cli_json_int(ram, "transferred", 0);
	}
	if (!out->converged) {
		out->total_s = p->timeout_s;
		if (strcmp(status, "active") && strcmp(status, "cancelling") &&
		    strcmp(status, "cancelled"))
			cli_error("live: QEMU: migration %s\n", status);
	}
	json_object_put(st);
	return 0;
}

static int migrate(struct qemu_vm *src, const struct qemu_peer *p, const char *sock,
		   struct qemu_result *out)
{
	struct json_object *a = json_object_new_object(), *prm = NULL;
	char uri[300];
	int rc;

	/* Unlimited, as a local user sets it (QEMU's default is 128 MiB/s). */
	json_object_object_add(a, "max-bandwidth", json_object_new_int64(1LL << 40));
	rc = qmp_call(&src->qmp, "migrate-set-parameters", a, NULL);
	if (!rc)
		rc = qmp_call(&src->qmp, "query-migrate-parameters", NULL, &prm);
	if (!rc)
		out->downtime_limit_s = cli_json_int(prm, "downtime-limit", 0) / 1e3;
	json_object_put(prm);
	snprintf(uri, sizeof(uri), "unix:%s", sock);
	a = json_object_new_object();
	json_object_object_add(a, "uri", json_object_new_string(uri));
	if (!rc)
		rc = qmp_call(&src->qmp, "migrate", a, NULL);
	else
		json_object_put(a);
	return rc ? rc : migrate_wait(src, p, out);
}

bool bench_qemu_available(void)
{
	return bench_on_path(QEMU);
}

int bench_qemu_migrate(const struct qemu_peer *p, struct qemu_result *out)
{
	char dir[] = "/tmp/memmig-qemu-XXXXXX", path[256], sock[256];
	struct qemu_vm src = { .pid = -1 }, dst = { .pid = -1 };
	int rc;

	memset(out, 0, sizeof(*out));
	if (!mkdtemp(dir))
		return -errno;
	snprintf(path, sizeof(path), "%s/guest.bin", dir);
	snprintf(sock, sizeof(sock), "%s/mig.sock", dir);
	rc = guest_write(path, p->writing);
	if (!rc)
		rc = qemu_start(&dst, p, dir, "dst", sock);
	if (!rc)
		rc = qemu_start(&src, p, dir, "src", NULL);
	if (!rc)
		rc = guest_ready(&src, p->mem);
	if (!rc)
		rc = migrate(&src, p, sock, out);
	if (rc < 0) {
		snprintf(path, sizeof(path), "%s/%s.log", dir, src.pid > 0 ? "src" : "dst");
		cli_error("live: QEMU peer failed: %s (see %s)\n", strerror(-rc), path);
	}
	qemu_stop(&src);
	qemu_stop(&dst);
	if (!rc) {
		const char *names[] = { "guest.bin", "src.log", "dst.log", "mig.sock",
					"src.qmp", "dst.qmp" };

		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
			unlink(path);
		}
		rmdir(dir);
	}
	return rc;
}
