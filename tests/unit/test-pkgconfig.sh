#!/bin/bash
# A program built as a user builds it: libmemmig, memmig.h (with
# memmig-version.h) and libmemmig.pc installed into a scratch root, then
# pkg-config --cflags --libs for a shared link and --static for a static
# one, whose flags must name every library libmemmig itself links.
set -u
top=${abs_top_builddir:-$PWD}
srcdir=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../testlib.sh
. "$srcdir/tests/testlib.sh"
cc=${CC:-cc}

command -v pkg-config >/dev/null || { echo "SKIP: pkg-config is not installed (apt-get install pkg-config)"; exit 77; }
command -v "$cc" >/dev/null || { echo "SKIP: no C compiler ($cc)"; exit 77; }

root=$tmp/root
check "install the library, headers and .pc" exit_is 0 \
	make -s -C "$top" DESTDIR="$root" install-libLTLIBRARIES \
	install-includeHEADERS install-nodist_includeHEADERS install-pkgconfigDATA
pc=$(find "$root" -name libmemmig.pc | head -1)
[ -n "$pc" ] || { echo "FAIL: no libmemmig.pc installed"; exit 1; }
export PKG_CONFIG_PATH=${pc%/*} PKG_CONFIG_SYSROOT_DIR=$root
# (pkg-config puts the sysroot before the variable too, or not, by version)
libdir=$(pkg-config --variable=libdir libmemmig)
case $libdir in "$root"/*) ;; *) libdir=$root$libdir ;; esac

check "pkg-config --cflags --libs" exit_is 0 pkg-config --cflags --libs libmemmig
flags=$(cat "$tmp/out")
check "pkg-config --static" exit_is 0 pkg-config --static --libs libmemmig
static=$(cat "$tmp/out")
echo "flags: $flags"
echo "static: $static"

# What libmemmig.so needs, each named by the static flags (libc and the
# dynamic loader come with every link).
for lib in $(readelf -d "$libdir/libmemmig.so" | sed -n 's/.*Shared library: \[lib\([^.]*\)\.so.*/\1/p'); do
	case $lib in c | m | pthread | dl | rt) continue ;; esac
	check "--static names -l$lib (libmemmig.so needs it)" grep -qw -- "-l$lib" <<<"$static"
done

cat >"$tmp/version.c" <<'PROG'
#include <stdio.h>
#include <string.h>
#include <memmig.h>

int main(void)
{
	int rc = memmig_version_check(MEMMIG_VERSION_MAJOR, MEMMIG_VERSION_MINOR);

	printf("built with %s (0x%06x), running %s, check %d\n",
	       MEMMIG_VERSION_STRING, MEMMIG_VERSION_NUMBER, memmig_version(), rc);
	return rc || strcmp(memmig_version(), MEMMIG_VERSION_STRING);
}
PROG
# shellcheck disable=SC2086 # the flags split into words
check "build against the installed .pc" exit_is 0 "$cc" -Wall -Werror -o "$tmp/version" "$tmp/version.c" $flags
check "run it" exit_is 0 env LD_LIBRARY_PATH="$libdir" "$tmp/version"
cat "$tmp/out"
check "it reports the .pc's version" grep -q "running $(pkg-config --modversion libmemmig)," "$tmp/out"
# The static flags resolve: every library they name links.
# shellcheck disable=SC2086
check "link with --static flags" exit_is 0 "$cc" -o "$tmp/version-static" "$tmp/version.c" \
	$(pkg-config --cflags libmemmig) -Wl,--no-as-needed $static
# shellcheck disable=SC2086
check "examples/copy-units.c builds" exit_is 0 "$cc" -Wall -Werror -o "$tmp/copy-units" \
	"$srcdir/examples/copy-units.c" $flags
check "and runs" exit_is 0 env LD_LIBRARY_PATH="$libdir" "$tmp/copy-units"
# What a VMM embeds, from the header and the .pc alone: a process moved
# (the child checks its bytes), and live migration of a writing thread's
# RAM (every write checked).
# shellcheck disable=SC2086
check "examples/move-process.c builds" exit_is 0 "$cc" -Wall -Werror -o "$tmp/move-process" \
	"$srcdir/examples/move-process.c" $flags
check "it moves its child, whose bytes stay intact" exit_is 0 env LD_LIBRARY_PATH="$libdir" "$tmp/move-process"
cat "$tmp/out"
check "the child said so" grep -q "bytes after the move: intact" "$tmp/out"
# shellcheck disable=SC2086
check "examples/live-ram.c builds" exit_is 0 "$cc" -Wall -Werror -o "$tmp/live-ram" \
	"$srcdir/examples/live-ram.c" $flags -lpthread
env LD_LIBRARY_PATH="$libdir" "$tmp/live-ram" >"$tmp/live.out" 2>&1
rc=$?
cat "$tmp/live.out"
if [ $rc -eq 77 ]; then
	echo "SKIP: live-ram: this kernel tracks no thread's writes (userfaultfd write-protect or soft-dirty)"
else
	check "it migrates its RAM live" test $rc -eq 0
	check "every write kept" grep -q "every write the vCPU made: kept" "$tmp/live.out"
fi
summary
