#!/bin/bash
# make install DESTDIR=...: every file lands where the program that reads
# it looks (readers.sh asks each reader), the installed programs work
# from there, and make uninstall takes everything back.
set -u
# shellcheck source=../testlib.sh
. "$(dirname "$0")/../testlib.sh"
# shellcheck source=readers.sh
. "$(dirname "$0")/readers.sh"
top=${top_builddir:-$(pwd)}
[ -f "$top/Makefile" ] || { echo "FAIL: no Makefile in $top (run from the build tree)"; exit 1; }

# Directories chosen by hand (make distcheck's, under its prefix) are
# where they were asked to go, not where the readers look.
chosen=$(cd "$top" && ./config.status --config | grep -oE -- "--with-[a-z-]*dir=[^' ]*")
[ -z "$chosen" ] || { echo "SKIP: configured with $(echo $chosen)"; exit 77; }

# Before make install, the README sends the user to the build tree's
# programs: they are there and run.
readme=$(dirname "$0")/../../README.md
tree=$(grep -oE '`src/(cli|bench|daemon)/[a-z-]+`' "$readme" | tr -d '`' | sort -u)
check "the README names where memmig-cli and memmigd are built" \
	test "$(grep -cE 'memmig-cli|memmig-bench|memmigd' <<<"$tree")" -ge 3
for prog in $tree; do
	check "$prog (README) runs" exit_is 0 "$top/$prog" --version
done

root=$tmp/root
${MAKE:-make} -C "$top" install DESTDIR="$root" >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log"; echo "FAIL: make install"; exit 1; }
files=$(find "$root" ! -type d | sort)
echo "installed:"
echo "${files//$root/  }"
check_readers "$root"

run() { LD_LIBRARY_PATH=$root$libdir "$@"; }
check "installed memmig-cli runs" exit_is 0 run "$root$cli" --version
check "installed memmig-bench runs" exit_is 0 run "$root$bench" --version
check "installed memmig-cli bench runs it" exit_is 0 run "$root$cli" bench --help
check "... the installed one" grep -q '^Usage: memmig-bench' "$tmp/out"
check "installed memmigd runs" exit_is 0 run "$root$daemon" --version
# memmigd reads the sample as it is (every line a comment or a default)
sock=$tmp/memmigd.sock
LD_LIBRARY_PATH=$root$libdir "$root$daemon" --foreground --socket "$sock" --no-libvirt \
	--config "$root$sample" 2>"$tmp/daemon.log" &
dpid=$!
trap 'kill "$dpid" 2>/dev/null; cleanup' EXIT
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
check "memmigd starts with the sample configuration" test -S "$sock"
check "the installed CLI talks to it" exit_is 0 run "$root$cli" --socket "$sock" nodes
check "through memmigd" grep -q 'via memmigd' "$tmp/err"
kill "$dpid"
wait "$dpid"
check "memmigd stops on SIGTERM" test $? -eq 0

# ProtectKernelTunables makes /sys read-only under systemd; a tiering
# starts and stops its kdamond in DAMON's sysfs (src/tier/tier-damon.c).
unit=$(find "$root" -name memmigd.service | head -n 1)
check "the installed unit leaves DAMON's sysfs writable" \
	grep -qx 'ReadWritePaths=-/sys/kernel/mm/damon/admin' "$unit"

# The documents and examples the man pages name are installed there.
named=$(find "$root" -path '*/man/*' -type f -exec grep -ohE '/[a-z/]*/share/doc/memmig/[A-Za-z0-9_.-]*[A-Za-z0-9]' {} + | sort -u)
check "the man pages name installed documents" test -n "$named"
for doc in $named; do
	check "$doc is installed" test -s "$root$doc"
done
check "the examples are installed" test "$(find "$root" -path '*/doc/memmig/examples/*.c' | wc -l)" -ge 3

# (tests/unit/test-pkgconfig.sh builds a program against the installed
# header, library and .pc.)

${MAKE:-make} -C "$top" uninstall DESTDIR="$root" >"$tmp/uninstall.log" 2>&1
left=$(find "$root" ! -type d)
check "make uninstall leaves nothing" test -z "$left"
[ -z "$left" ] || echo "$left"
summary
