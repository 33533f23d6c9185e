/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* hotset's QEMU guest (see hotset-qemu.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "hotset-qemu.h"

#define BIOS_SIZE	(64 * 1024)
#define BIOS_BLOCK	4096		/* hotset-bios.S, at the image's end */
#define GUEST_GPA	0x200000	/* where hotset-bios.S puts page 0 */
/* QEMU and the guest's two passes, under TCG's nested KVM. */
#define START_WAIT_MS	120000

extern const uint8_t hotset_bios_start[], hotset_bios_end[], hotset_bios_npages[];

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* The guest's TSC runs at the host's: ticks over 100 ms of the clock. */
static double tsc_hz(void)
{
	double t0 = now_ms(), t1;
	uint64_t c0 = __rdtsc(), c1;
	struct timespec d = { 0, 100000000 };

	nanosleep(&d, NULL);
	c1 = __rdtsc();
	t1 = now_ms();
	return (double)(c1 - c0) / ((t1 - t0) / 1e3);
}

/* The firmware: the guest's code at the image's start, hotset-bios.S at
 * its end with the page count in place. */
static int bios_write(const char *file, uint32_t npages)
{
	uint8_t *img = calloc(1, BIOS_SIZE), *blk = NULL;
	size_t code_len;
	const void *code = minivmm_guest_hot_code(&code_len);
	int fd, rc = 0;

	if (!img)
		return -ENOMEM;
	blk = img + BIOS_SIZE - BIOS_BLOCK;
	memcpy(img, code, code_len);
	memcpy(blk, hotset_bios_start, BIOS_BLOCK);
	memcpy(blk + (hotset_bios_npages - hotset_bios_start), &npages, sizeof(npages));
	fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, img, BIOS_SIZE) != BIOS_SIZE)
		rc = -errno;
	if (fd >= 0 && close(fd) && !rc)
		rc = -errno;
	free(img);
	return rc;
}

static void qemu_exec(const char *path, const char *dir, unsigned long size_mib)
{
	char mem[32], bios[96], mon[112];

	/* Not left running if hotset is killed. */
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) || getppid() == 1)
		_exit(127);

	/* 2 MiB below the guest's RAM: the page tables, and the BIOS's
	 * second mapping in the low MiB. */
	snprintf(mem, sizeof(mem), "%luM", size_mib + 2);
	snprintf(bios, sizeof(bios), "%s/bios.bin", dir);
	snprintf(mon, sizeof(mon), "unix:%s/mon.sock,server=on,wait=off", dir);
	/* qemu64, not host: where KVM is PVM, QEMU cannot set the host
	 * model's MSRs (0x10a) and aborts; the guest needs long mode only. */
	execl(path, path, "-machine", "microvm,x-option-roms=off,isa-serial=off,rtc=off",
	      "-accel", "kvm", "-cpu", "qemu64", "-smp", "1", "-m", mem, "-nodefaults",
	      "-no-user-config", "-display", "none", "-bios", bios, "-monitor", mon,
	      (char *)NULL);
	fprintf(stderr, "hotset: exec %s: %s\n", path, strerror(errno));
	_exit(127);
}

/* Reads the monitor until its prompt; the text in buf. */
static int mon_read(int fd, char *buf, size_t len)
{
	size_t n = 0;

	while (n + 1 < len) {
		ssize_t r = read(fd, buf + n, len - 1 - n);

		if (r <= 0)
			return r ? -errno : -EPIPE;
		n += (size_t)r;
		buf[n] = 0;
		if (strstr(buf, "(qemu) "))
			return 0;
	}
	return -EMSGSIZE;
}

/* Where QEMU holds guest-physical GUEST_GPA: its monitor's gpa2hva. */
static int hva_find(struct hotset_qemu *q, char *why, size_t len)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char buf[4096];
	const char *cmd = "gpa2hva 0x200000\n", *p;
	double end = now_ms() + START_WAIT_MS;
	int fd = -1, rc;

	snprintf(a.sun_path, sizeof(a.sun_path), "%s/mon.sock", q->dir);
	for (;;) {
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (!connect(fd, (struct sockaddr *)&a, sizeof(a)))
			break;
		close(fd);
		if (waitpid(q->pid, NULL, WNOHANG) == q->pid) {
			q->pid = 0;
			snprintf(why, len, "QEMU exited before its monitor opened");
			return -ECHILD;
		}
		if (now_ms() > end) {
			snprintf(why, len, "QEMU's monitor did not open");
			return -ETIMEDOUT;
		}
		usleep(50000);
	}
	rc = mon_read(fd, buf, sizeof(buf));
	if (!rc && write(fd, cmd, strlen(cmd)) != (ssize_t)strlen(cmd))
		rc = -errno;
	if (!rc)
		rc = mon_read(fd, buf, sizeof(buf));
	close(fd);
	p = rc ? NULL : strstr(buf, " is 0x");
	if (!p) {
		snprintf(why, len, "QEMU's gpa2hva: %s", rc ? strerror(-rc) : buf);
		return rc ? rc : -EPROTO;
	}
	q->hva = strtoull(p + 4, NULL, 16);
	return 0;
}

static int guest_io(const struct hotset_qemu *q, uint64_t off, void *buf, size_t n, bool wr)
{
	struct iovec l = { buf, n }, r = { (void *)(uintptr_t)(q->hva + off), n };
	ssize_t done = wr ? process_vm_writev(q->pid, &l, 1, &r, 1, 0) :
			    process_vm_readv(q->pid, &l, 1, &r, 1, 0);

	return done < 0 ? -errno : (size_t)done == n ? 0 : -EIO;
}

int hotset_qemu_state(const struct hotset_qemu *q, struct minivmm_state *st)
{
	return guest_io(q, MINIVMM_STATE_OFFSET, st, sizeof(*st), false);
}

int hotset_qemu_window(const struct hotset_qemu *q, uint32_t first, uint32_t pages)
{
	/* The two words at once; the guest reads them at its next pass. */
	uint32_t w[2] = { first, pages };

	return guest_io(q, MINIVMM_STATE_OFFSET + offsetof(struct minivmm_state, hot_first), w,
			sizeof(w), true);
}

int hotset_qemu_stall_reset(const struct hotset_qemu *q)
{
	uint32_t one = 1;

	return guest_io(q, MINIVMM_STATE_OFFSET + offsetof(struct minivmm_state, stall_reset),
			&one, sizeof(one), true);
}

/* Until the guest has begun pass `pass` (so it wrote all of its RAM). */
static int pass_wait(const struct hotset_qemu *q, uint32_t pass, char *why, size_t len)
{
	double end = now_ms() + START_WAIT_MS;
	struct minivmm_state st;
	int rc;

	while (!(rc = hotset_qemu_state(q, &st)) && st.pass < pass && !st.errors) {
		if (now_ms() > end) {
			snprintf(why, len, "the guest did not run: pass %u", st.pass);
			return -ETIMEDOUT;
		}
		usleep(50000);
	}
	if (rc)
		snprintf(why, len, "reading the guest's state: %s", strerror(-rc));
	else if (st.errors)
		snprintf(why, len, "the guest counted %u failed checks", st.errors);
	return rc ? rc : st.errors ? -EIO : 0;
}

int hotset_qemu_start(struct hotset_qemu *q, const char *path, unsigned long size_mib,
		      char *why, size_t len)
{
	char bios[96];
	int rc;

	memset(q, 0, sizeof(*q));
	q->npages = (uint64_t)size_mib << 20 >> 12;
	q->data0 = minivmm_hot_data0(q->npages);
	q->tsc_hz = tsc_hz();
	snprintf(q->dir, sizeof(q->dir), "/tmp/hotset-qemu.XXXXXX");
	if (!mkdtemp(q->dir)) {
		snprintf(why, len, "mkdtemp: %s", strerror(errno));
		return -errno;
	}
	snprintf(bios, sizeof(bios), "%s/bios.bin", q->dir);
	rc = bios_write(bios, (uint32_t)q->npages);
	if (rc) {
		snprintf(why, len, "%s: %s", bios, strerror(-rc));
		return rc;
	}
	q->pid = fork();
	if (q->pid < 0) {
		q->pid = 0;
		snprintf(why, len, "fork: %s", strerror(errno));
		return -errno;
	}
	if (!q->pid)
		qemu_exec(path, q->dir, size_mib);
	rc = hva_find(q, why, len);
	return rc ? rc : pass_wait(q, 2, why, len);
}

/* A write lost, for the test of the check: the last page's first line one
 * write behind its entry in the guest's table. */
static int lose_write(const struct hotset_qemu *q, uint8_t *ram)
{
	uint64_t last = q->npages - 1, line = last * MINIVMM_PAGE;
	uint32_t v = ((uint32_t *)(ram + MINIVMM_HOT_TABLE * MINIVMM_PAGE))[last] - 1;

	memcpy(ram + line, &v, sizeof(v));
	return guest_io(q, line, &v, sizeof(v), true);
}

int hotset_qemu_verify(const struct hotset_qemu *q, struct minivmm_check *c)
{
	size_t n = q->npages << 12;
	uint8_t *ram = malloc(n);
	int rc;

	if (!ram)
		return -ENOMEM;
	/* Every thread of QEMU stopped: the vCPU between two instructions. */
	if (kill(q->pid, SIGSTOP) || waitpid(q->pid, &rc, WUNTRACED) != q->pid) {
		free(ram);
		return -errno;
	}
	rc = guest_io(q, 0, ram, n, false);
	if (!rc && getenv("HOTSET_QEMU_LOSE_WRITE"))
		rc = lose_write(q, ram);
	kill(q->pid, SIGCONT);
	if (!rc)
		rc = minivmm_verify_hot_ram(ram, q->npages, c);
	free(ram);
	return rc;
}

void hotset_qemu_stop(struct hotset_qemu *q)
{
	char f[112];

	if (q->pid > 0) {
		kill(q->pid, SIGTERM);
		waitpid(q->pid, NULL, 0);
		q->pid = 0;
	}
	if (q->dir[0]) {
		snprintf(f, sizeof(f), "%s/bios.bin", q->dir);
		unlink(f);
		snprintf(f, sizeof(f), "%s/mon.sock", q->dir);
		unlink(f);
		rmdir(q->dir);
		q->dir[0] = 0;
	}
}
