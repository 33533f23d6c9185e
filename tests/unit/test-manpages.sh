#!/bin/bash
# Every call libmemmig exports (src/lib/libmemmig.sym) has a man page in
# docs/man3 that is installed (docs/man3/Makefile.inc), and every page
# renders without a groff warning, the programs' pages too (memmig-cli,
# memmig-bench, memmigd); a .so link leads to a page that documents the call.
set -u
srcdir=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../testlib.sh
. "$srcdir/tests/testlib.sh"

command -v groff >/dev/null || { echo "SKIP: groff is not installed (apt-get install groff-base)"; exit 77; }
man3=$srcdir/docs/man3
syms=$(sed -n 's/^\t\(memmig_[a-z0-9_]*\);$/\1/p' "$srcdir/src/lib/libmemmig.sym")
check "the version script lists calls" test -n "$syms"

for s in $syms; do
	page=$man3/$s.3
	check "$s has a page" test -f "$page"
	[ -f "$page" ] || continue
	check "$s's page is installed" grep -q "docs/man3/$s.3" "$man3/Makefile.inc"
	# A link's target documents the call in its SYNOPSIS.
	target=$page
	if so=$(sed -n 's/^\.so man3\///p' "$page") && [ -n "$so" ]; then
		target=$man3/$so
	fi
	check "$s is in the SYNOPSIS of ${target##*/}" grep -q "^\.BI\? \"[^\"]*\<$s(" "$target"
done

# Each program has its page, installed (man_MANS).
for prog in memmig-cli.1 memmig-bench.1 memmigd.8; do
	check "$prog exists" test -f "$srcdir/docs/$prog"
	check "$prog is installed" grep -q "^man_MANS = .*man/$prog" "$srcdir/Makefile.am"
done

for page in "$srcdir"/docs/libmemmig.3 "$srcdir"/docs/memmig-cli.1 \
	"$srcdir"/docs/memmig-bench.1 "$srcdir"/docs/memmigd.8 "$man3"/*.3; do
	grep -q '^\.so ' "$page" && continue
	check "${page##*/} renders cleanly" exit_is 0 groff -man -Tutf8 -ww -z "$page"
	check "${page##*/}: no groff warning" test ! -s "$tmp/err"
done
summary
