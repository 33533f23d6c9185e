/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libpmem, the pmem benchmarks' peer, loaded when a benchmark asks for it:
 * linked, it brought libndctl and libdaxctl (and through them libkmod,
 * libudev, libcrypto, ...) into every memmig-cli, whose start they slowed.
 */
#include <dlfcn.h>
#include <pthread.h>

#include "config.h"
#include "bench/bench.h"

#ifdef HAVE_LIBPMEM
#include <libpmem.h>

static struct {
	bool ok;
	__typeof__(pmem_memcpy) *memcpy_;
	__typeof__(pmem_is_pmem) *is_pmem;
	__typeof__(pmem_has_auto_flush) *has_auto_flush;
} pm;

static void pm_load(void)
{
	void *h = dlopen("libpmem.so.1", RTLD_NOW | RTLD_LOCAL);

	pm.ok = h && (*(void **)&pm.memcpy_ = dlsym(h, "pmem_memcpy")) &&
		(*(void **)&pm.is_pmem = dlsym(h, "pmem_is_pmem")) &&
		(*(void **)&pm.has_auto_flush = dlsym(h, "pmem_has_auto_flush"));
}

bool copier_pmem_available(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, pm_load);
	return pm.ok;
}

void bench_pmem_memcpy(void *d, const void *s, size_t n, bool drain)
{
	if (copier_pmem_available())
		pm.memcpy_(d, s, n, PMEM_F_MEM_NONTEMPORAL | (drain ? 0 : PMEM_F_MEM_NODRAIN));
}

void bench_pmem_facts(const void *p, size_t len, int *is_pmem, int *auto_flush)
{
	*is_pmem = *auto_flush = -1;
	if (copier_pmem_available()) {
		*is_pmem = pm.is_pmem(p, len);
		*auto_flush = pm.has_auto_flush();
	}
}
#else
bool copier_pmem_available(void)
{
	return false;
}

void bench_pmem_memcpy(void *d, const void *s, size_t n, bool drain)
{
	(void)d, (void)s, (void)n, (void)drain;
}

void bench_pmem_facts(const void *p, size_t len, int *is_pmem, int *auto_flush)
{
	(void)p, (void)len;
	*is_pmem = *auto_flush = -1;
}
#endif
