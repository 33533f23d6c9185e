/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Embedding snippet: copy a buffer in 2 MiB units with libmemmig and check it.
 *   cc copy-units.c $(pkg-config --cflags --libs libmemmig)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <memmig.h>

int main(void)
{
	size_t len = 64UL << 20;
	struct memmig_ctx *ctx;
	char *src, *dst;
	int rc;

	rc = memmig_ctx_new(&ctx);
	if (rc < 0) {
		fprintf(stderr, "memmig_ctx_new: %s\n", strerror(-rc));
		return 1;
	}
	src = malloc(len);
	dst = malloc(len);
	if (!src || !dst)
		return 1;
	for (size_t i = 0; i < len; i++)
		src[i] = (char)(i * 7 + (i >> 12));
	/* One primitive call per 2 MiB unit, chosen once for all 64 MiB. */
	rc = memmig_copy_units(ctx, dst, src, len, 0);
	printf("copied %zu MiB with %s: %s\n", len >> 20,
	       memmig_prim_name(memmig_copy_query(ctx, len, 0)),
	       rc == 0 && !memcmp(src, dst, len) ? "identical" : "MISMATCH");
	free(src);
	free(dst);
	memmig_ctx_unref(ctx);
	return rc == 0 ? 0 : 1;
}
