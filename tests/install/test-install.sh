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

# (tests/unit/test-pkgconfig.sh builds a program against the installed
# header, library and .pc.)

${MAKE:-make} -C "$top" uninstall DESTDIR="$root" >"$tmp/uninstall.log" 2>&1
left=$(find "$root" ! -type d)
check "make uninstall leaves nothing" test -z "$left"
[ -z "$left" ] || echo "$left"
summary
