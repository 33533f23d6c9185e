/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Portable build: no feature is known, so the policy picks the C copy. */
#include <unistd.h>

#include "lib/copy/arch/arch.h"

void memmig_arch_cpu_detect(struct memmig_cpu_info *cpu)
{
	long llc = -1;

	cpu->vendor[0] = '\0';
	cpu->family = cpu->model = cpu->stepping = 0;
	cpu->features = 0;
#ifdef _SC_LEVEL3_CACHE_SIZE
	llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
	cpu->llc_size = llc > 0 ? (size_t)llc : 0;
}
