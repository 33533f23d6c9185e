/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * In the multi-node guest (tests/vm/run-vm.sh): file-system DAX on the
 * emulated NVDIMM.  Puts its namespace in fsdax mode, formats /dev/pmem0
 * with mkfs.ext4 and mounts it with -o dax at /mnt/pmem (or uses DIR, a
 * DAX mount, when given one), then: a 16 MiB file there maps with
 * MAP_SHARED_VALIDATE | MAP_SYNC (only a real DAX mapping can), a
 * pattern written through it survives msync,
 * munmap and a second mapping; the same mmap of a file in $TMPDIR (tmpfs)
 * fails with EOPNOTSUPP, so the first success means something; and
 * libmemmig registers the DAX mapping as a region of backing DAX.  Then
 * the migrations of guest-dax-migrate.c: DRAM to a DAX file and back, to
 * node 2, a tmpfs file's MAP_SYNC fallback; and, the file system
 * unmounted, the namespace made devdax and the same through /dev/dax0.0;
 * then the same on the tier's CXL device DAX ($MEMMIG_CXL_DAX), with its
 * region's descriptor table.
 * Usage: guest-dax [DIR] (DIR: only the file-system part).  Exits 0 pass, 1 fail, 77 skip (not root, no
 * /dev/pmem0, no mkfs.ext4 or ext4 in the guest, no fsdax).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memmig.h>

#include "guest-check.h"
#include "guest-dax-migrate.h"

#define DEV "/dev/pmem0"
#define MNT "/mnt/pmem"
#define ND "/sys/bus/nd/devices/"
#define LEN (16UL << 20)
#define SYNC_FLAGS (MAP_SHARED_VALIDATE | MAP_SYNC)


static int fail(const char *fmt, ...)
{
	va_list ap;

	printf("FAIL: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	return 1;
}

/* The first line of a sysfs file, or "?". */
static const char *sysfs(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");

	if (!f || !fgets(buf, (int)len, f))
		snprintf(buf, len, "?");
	if (f)
		fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

static int sysfs_write(const char *path, const char *val, char *why, size_t len)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd >= 0 && write(fd, val, strlen(val)) == (ssize_t)strlen(val)) {
		close(fd);
		return 0;
	}
	snprintf(why, len, "writing %s to %s: %s", val, path, strerror(errno));
	if (fd >= 0)
		close(fd);
	return -1;
}

/*
 * A label-less NVDIMM namespace comes up raw, and raw pmem0 has no DAX
 * here (queue/dax 0): this makes it fsdax, as "ndctl create-namespace -f
 * -e namespace0.0 -m fsdax" would -- pfn0.0 claims the namespace, with
 * the struct pages in the pmem, and pmem0 comes back with DAX.
 */
static int make_fsdax(char *why, size_t len)
{
	char uuid[64], dax[16], mode[32];

	if (!strcmp(sysfs("/sys/block/pmem0/queue/dax", dax, sizeof(dax)), "1"))
		return 0;
	if (access(ND "pfn0.0", F_OK)) {
		snprintf(why, len, "pmem0 has no DAX and there is no pfn0.0 to "
			 "make it fsdax (CONFIG_ND_PFN?)");
		return -1;
	}
	sysfs("/proc/sys/kernel/random/uuid", uuid, sizeof(uuid));
	if (sysfs_write(ND "namespace0.0/driver/unbind", "namespace0.0", why, len) ||
	    sysfs_write(ND "pfn0.0/uuid", uuid, why, len) ||
	    sysfs_write(ND "pfn0.0/mode", "pmem", why, len) ||
	    sysfs_write(ND "pfn0.0/namespace", "namespace0.0", why, len) ||
	    sysfs_write("/sys/bus/nd/drivers/nd_pmem/bind", "pfn0.0", why, len))
		return -1;
	sysfs(ND "namespace0.0/mode", mode, sizeof(mode));
	printf("namespace0.0: raw -> fsdax (pfn0.0, mode %s), pmem0 queue/dax %s\n",
	       mode, sysfs("/sys/block/pmem0/queue/dax", dax, sizeof(dax)));
	return 0;
}

/* mkfs.ext4 on DEV, mounted with -o dax on MNT: 0, 1 fail, 77 skip. */
static int format_and_mount(void)
{
	char dax[16], mode[32], why[256];
	struct stat st;
	int status, err;
	pid_t pid;

	if (stat(DEV, &st) < 0 || !S_ISBLK(st.st_mode)) {
		/* The NVDIMM is there but its namespace is something else:
		 * the tier's pmem file was not fresh.  Not a missing resource. */
		if (!stat("/sys/bus/nd/devices/namespace0.0", &st)) {
			printf("FAIL: namespace0.0 exists but " DEV " does not (a namespace "
			       "left in the NVDIMM's file by an earlier boot?)\n");
			return 1;
		}
		return skip(DEV " does not exist (VM_NVDIMM=0, or nd_pmem did not load)");
	}
	if (make_fsdax(why, sizeof(why)))
		return skip(why);
	/* DAX needs the block size to be the page size; mkfs.ext4 would pick
	 * 1 KiB blocks for a file system this small. */
	pid = fork();
	if (pid == 0) {
		execlp("mkfs.ext4", "mkfs.ext4", "-F", "-q", "-b", "4096", DEV, (char *)NULL);
		_exit(errno == ENOENT ? 127 : 126);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return fail("fork mkfs.ext4: %s", strerror(errno));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
		return skip("no mkfs.ext4 in the guest (install e2fsprogs on the host)");
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return fail("mkfs.ext4 " DEV ": wait status %#x", status);
	mkdir("/mnt", 0755);
	mkdir(MNT, 0755);
	if (mount(DEV, MNT, "ext4", 0, "dax") == 0)
		return 0;
	err = errno;
	if (err == ENODEV)
		return skip("no ext4 in the guest kernel (ext4.ko not in the initramfs?)");
	sysfs("/sys/block/pmem0/queue/dax", dax, sizeof(dax));
	sysfs(ND "namespace0.0/mode", mode, sizeof(mode));
	snprintf(why, sizeof(why), "mount -t ext4 -o dax " DEV ": %s (queue/dax %s, "
		 "namespace0.0 mode %s)", strerror(err), dax, mode);
	if (strcmp(dax, "1"))
		return skip(why);
	return fail("%s", why);
}

/*
 * fsdax -> devdax, as "ndctl create-namespace -f -e namespace0.0 -m
 * devdax" would do (there is no ndctl in the guest): pfn0.0 lets the
 * namespace go, the dax0.0 seed claims it, and /dev/dax0.0 appears.
 */
static int make_devdax(char *why, size_t len)
{
	char uuid[64];

	if (access(ND "dax0.0", F_OK)) {
		snprintf(why, len, "no dax0.0 seed (CONFIG_NVDIMM_DAX?)");
		return -1;
	}
	sysfs("/proc/sys/kernel/random/uuid", uuid, sizeof(uuid));
	if ((!access(ND "pfn0.0/driver", F_OK) &&
	     sysfs_write(ND "pfn0.0/driver/unbind", "pfn0.0", why, len)) ||
	    sysfs_write(ND "pfn0.0/namespace", "\n", why, len) ||
	    sysfs_write(ND "dax0.0/uuid", uuid, why, len) ||
	    sysfs_write(ND "dax0.0/mode", "pmem", why, len) ||
	    sysfs_write(ND "dax0.0/namespace", "namespace0.0", why, len) ||
	    sysfs_write("/sys/bus/nd/drivers/dax_pmem/bind", "dax0.0", why, len))
		return -1;
	for (int i = 0; i < 50 && access("/dev/dax0.0", F_OK); i++)
		usleep(100000);
	if (access("/dev/dax0.0", F_OK)) {
		snprintf(why, len, "dax0.0 bound, but no /dev/dax0.0 (device_dax?)");
		return -1;
	}
	return 0;
}

/* The DAX devices as libmemmig's topology (libdaxctl) sees them. */
static void show_dax_topology(void)
{
	struct memmig_dax_info di = { .sz = sizeof(di) };
	struct memmig_topo *topo;
	struct memmig_ctx *ctx;
	int n;

	if (memmig_ctx_new(&ctx))
		return;
	if (!memmig_topo_new(ctx, &topo)) {
		n = memmig_topo_dax_count(topo);
		printf("libmemmig topology: %d DAX device(s)\n", n);
		CHECK(n >= 1, "libdaxctl lists no DAX device");
		for (int i = 0; i < n && !memmig_topo_get_dax(topo, (unsigned int)i, &di); i++)
			printf("  %s: region %d, size %llu, align %llu, target node %d, "
			       "mode %s%s\n", di.dev, di.region_id,
			       (unsigned long long)di.size, (unsigned long long)di.align,
			       di.target_node, di.mode ? "system-ram" : "devdax",
			       di.flags & MEMMIG_DAX_F_CXL ? ", CXL" : "");
		memmig_topo_unref(topo);
	}
	memmig_ctx_unref(ctx);
}

/*
 * The CXL memory device the tier keeps as device DAX (guest-cxl.sh):
 * libmemmig's topology calls it CXL memory, and the migrations to and from
 * it and its region's descriptor table are those of the NVDIMM's (the live
 * ones run against the CXL node, in test-live).
 */
static void cxl_devdax(void)
{
	const char *dev = getenv("MEMMIG_CXL_DAX");
	struct memmig_dax_info di = { .sz = sizeof(di) };
	struct memmig_topo *topo;
	struct memmig_ctx *ctx;
	bool cxl = false;

	if (!dev) {
		printf("== CXL device DAX: none in this guest (VM_CXL=0, or no CXL tools)\n");
		return;
	}
	printf("== CXL device DAX: %s\n", dev);
	if (memmig_ctx_new(&ctx))
		return;
	if (!memmig_topo_new(ctx, &topo)) {
		for (int i = 0; !memmig_topo_get_dax(topo, (unsigned int)i, &di); i++)
			if (!strcmp(di.dev, strrchr(dev, '/') + 1))
				cxl = di.flags & MEMMIG_DAX_F_CXL;
		memmig_topo_unref(topo);
	}
	printf("libmemmig topology: %s is %sCXL memory\n", dev, cxl ? "" : "not ");
	CHECK(cxl, "%s: not CXL to libmemmig", dev);
	/* Small, and not the live cases: QEMU 7.2 emulates each access to
	 * CXL memory (about 13 MB/s, and zeroing it far slower), and a writer
	 * at full speed there takes minutes. */
	fails += dax_migrate_devdax(dev, 4UL << 20, false);
	fails += dax_devdax_table_case(ctx, dev);
	memmig_ctx_unref(ctx);
}

/* Device DAX on the same NVDIMM, once the file system is done with it. */
static void devdax(void)
{
	char why[256];

	printf("== device DAX\n");
	if (make_devdax(why, sizeof(why))) {
		printf("FAIL: making namespace0.0 devdax: %s\n", why);
		fails++;
		return;
	}
	printf("namespace0.0: fsdax -> devdax (dax0.0), /dev/dax0.0 ready\n");
	show_dax_topology();
	fails += dax_migrate_devdax("/dev/dax0.0", 32UL << 20, true);
}

static uint64_t pattern(size_t i)
{
	return (i * 0x9e3779b97f4a7c15ULL) ^ 0x4d454d4d4947ULL;
}

/* The mapping's words against the pattern: the first bad index, or n. */
static size_t verify(const uint64_t *w, size_t n)
{
	size_t i;

	for (i = 0; i < n && w[i] == pattern(i); i++)
		;
	return i;
}

static const char *backing_name(int b)
{
	static const char *const names[] = {
		[MEMMIG_BACKING_AUTO] = "auto", [MEMMIG_BACKING_ANON] = "anonymous",
		[MEMMIG_BACKING_SHMEM] = "shmem", [MEMMIG_BACKING_HUGETLB] = "hugetlb",
		[MEMMIG_BACKING_FILE] = "file", [MEMMIG_BACKING_DAX] = "dax",
	};

	return b >= 0 && b <= MEMMIG_BACKING_DAX ? names[b] : "?";
}

/* MAP_SYNC on a file of a file system without DAX: EOPNOTSUPP. */
static void check_non_dax(void)
{
	const char *tmpdir = getenv("TMPDIR");
	char path[256];
	void *p;
	int fd, err;

	snprintf(path, sizeof(path), "%s/guest-dax.XXXXXX", tmpdir ? tmpdir : "/tmp");
	fd = mkstemp(path);
	CHECK(fd >= 0, "mkstemp %s: %s", path, strerror(errno));
	if (fd < 0)
		return;
	unlink(path);
	CHECK(ftruncate(fd, 4096) == 0, "ftruncate: %s", strerror(errno));
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, SYNC_FLAGS, fd, 0);
	err = p == MAP_FAILED ? errno : 0;
	CHECK(err == EOPNOTSUPP, "MAP_SYNC on %s (not DAX): %s", path,
	      err ? strerror(err) : "mapped");
	if (p != MAP_FAILED)
		munmap(p, 4096);
	else if (err == EOPNOTSUPP)
		printf("MAP_SYNC on a non-DAX file (%s): EOPNOTSUPP, as it must\n", path);
	close(fd);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : MNT;
	struct memmig_region_desc d = { .sz = sizeof(d) };
	struct memmig_region *r = NULL;
	struct memmig_ctx *ctx;
	struct statx stx;
	char path[256];
	uint64_t *w;
	size_t bad, n = LEN / sizeof(*w);
	int fd, rc;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc == 1) {
		if (geteuid() != 0)
			return skip("formatting and mounting " DEV " needs root");
		rc = format_and_mount();
		if (rc)
			return rc;
		printf("mounted " DEV " on " MNT " (ext4, -o dax)\n");
	}
	snprintf(path, sizeof(path), "%s/guest-dax.data", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return fail("open %s: %s", path, strerror(errno));
	/* Blocks allocated and written first: the MAP_SYNC faults then have
	 * no metadata to commit. */
	w = calloc(1, LEN);
	if (!w || write(fd, w, LEN) != (ssize_t)LEN || fsync(fd) < 0)
		return fail("writing %s: %s", path, strerror(errno));
	free(w);
	if (statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &stx) == 0 &&
	    (stx.stx_attributes_mask & STATX_ATTR_DAX)) {
		CHECK(stx.stx_attributes & STATX_ATTR_DAX, "%s: no STATX_ATTR_DAX", path);
		printf("statx of %s: STATX_ATTR_DAX %s\n", path,
		       stx.stx_attributes & STATX_ATTR_DAX ? "set" : "not set");
	}

	w = mmap(NULL, LEN, PROT_READ | PROT_WRITE, SYNC_FLAGS, fd, 0);
	if (w == MAP_FAILED)
		return fail("mmap MAP_SHARED_VALIDATE | MAP_SYNC of %s: %s (not a "
			    "DAX mapping)", path, strerror(errno));
	printf("mmap MAP_SHARED_VALIDATE | MAP_SYNC of %s (16 MiB): ok\n", path);
	for (size_t i = 0; i < n; i++)
		w[i] = pattern(i);
	CHECK(msync(w, LEN, MS_SYNC) == 0, "msync: %s", strerror(errno));
	CHECK(munmap(w, LEN) == 0, "munmap: %s", strerror(errno));

	w = mmap(NULL, LEN, PROT_READ | PROT_WRITE, SYNC_FLAGS, fd, 0);
	if (w == MAP_FAILED)
		return fail("second MAP_SYNC mmap: %s", strerror(errno));
	bad = verify(w, n);
	CHECK(bad == n, "word %zu after the remap: %#llx, want %#llx", bad,
	      (unsigned long long)w[bad], (unsigned long long)pattern(bad));
	if (bad == n)
		printf("pattern intact after msync, munmap and a new mapping\n");

	check_non_dax();

	if (memmig_ctx_new(&ctx) < 0)
		return fail("memmig_ctx_new");
	d.addr = (uintptr_t)w;
	d.len = LEN;
	d.backing = MEMMIG_BACKING_AUTO;
	rc = memmig_region_new(ctx, &d, &r);
	CHECK(rc == 0, "memmig_region_new of the DAX mapping: %s", strerror(-rc));
	if (!rc) {
		CHECK(memmig_region_get_desc(r, &d) == 0, "memmig_region_get_desc");
		printf("libmemmig region of the DAX mapping: backing %s (%d)\n",
		       backing_name(d.backing), d.backing);
		CHECK(d.backing == MEMMIG_BACKING_DAX, "backing %d, not DAX", d.backing);
		memmig_region_unref(r);
	}
	memmig_ctx_unref(ctx);

	munmap(w, LEN);
	close(fd);
	unlink(path);

	fails += dax_migrate_fsdax(dir);
	if (argc == 1) {
		CHECK(umount(MNT) == 0, "umount " MNT ": %s", strerror(errno));
		devdax();
	}
	cxl_devdax();
	printf("%s\n", fails ? "FAILED" : "ok: MAP_SYNC on ext4 -o dax, migrations "
	       "to and from DAX, bytes intact");
	return fails ? 1 : 0;
}
