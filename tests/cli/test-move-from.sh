#!/bin/bash
# memmig-cli move --from NODES, like migratepages(8): only the pages found
# on those nodes move; pages elsewhere are left where they are and counted
# as skipped.  In-process and through a real memmigd.  Here every page is
# on node 0 (moved there first), so --from 0 leaves nothing out and !0 (every
# node but 0) leaves everything out; the multi-node tier
# (tests/vm/guest-move-pid.sh) moves pages across real nodes.
set -u
cli=${MEMMIG_CLI:-src/cli/memmig-cli}
memhog=${MEMHOG:-tests/helpers/memhog}
# shellcheck source=../testlib.sh
. "$(dirname "$0")/../testlib.sh"
command -v jq >/dev/null || { echo "SKIP: jq is not installed (apt-get install jq)"; exit 77; }

# A node this host does not have: refused in a set (migratepages does).
absent=$(absent_node)
sock=$tmp/memmigd.sock
memmigd_start "$sock"

memhog_start 32 16
check "all to node 0 first" exit_is 0 "$cli" -l move --pid "$hog" --to-node 0 --json
anon0=$(placement "$anon_addr")
check_alive "before"

# mode "-l" in-process, "-s SOCK" through memmigd (--wait for the report)
for via in local daemon; do
	if [ "$via" = local ]; then mc() { "$cli" -l "$@"; }; else mc() { "$cli" -s "$sock" "$@" --wait; }; fi
	check "$via: --from 0" exit_is 0 mc move -p "$hog" -n 0 -f 0 -j
	check "$via: --from 0 skips nothing" test "$(jq .report.pages_skipped "$tmp/out")" -eq 0
	on=$(jq .report.pages_on_target "$tmp/out")
	check "$via: --from 0 pages on node 0" test "$on" -ge $((48 * 256))

	check "$via: --from !0" exit_is 0 mc move -p "$hog" -n 0 -f '!0' -j
	check "$via: --from !0 skips every present page" \
		test "$(jq .report.pages_skipped "$tmp/out")" -eq "$(jq .report.pages_on_target "$tmp/out")"
	check "$via: --from !0 skipped are memhog's" test "$(jq .report.pages_skipped "$tmp/out")" -ge $((48 * 256))
	check "$via: --from !0 nothing failed" test "$(jq .report.pages_failed "$tmp/out")" -eq 0
	check "$via: --from !0 nothing moved" test "$(jq .bytes_moved "$tmp/out")" -eq 0

	# migratepages refuses a set with a node the host lacks: so do both paths
	check "$via: --from absent node $absent" exit_is 2 mc move -p "$hog" -n 0 --from "0-$((absent - 1)),$absent" -j
	check "$via: --from absent node named" grep -q "^memmig-cli: error: move: --from: node $absent does not exist" "$tmp/err"
	check "$via: --from 0-$((absent - 1))" exit_is 0 mc move -p "$hog" -n 0 --from "0-$((absent - 1))" -j
	check "$via: a set with node 0 skips nothing" test "$(jq .report.pages_skipped "$tmp/out")" -eq 0

	check "$via: range, --from !0" exit_is 0 mc move -p "$hog" -n 0 \
		--addr "$anon_addr" --len "$anon_len" --from '!0' -j
	check "$via: range's pages skipped" test "$(jq .report.pages_skipped "$tmp/out")" -eq "$anon_pages"
	check "$via: numa_maps unchanged" test "$(placement "$anon_addr")" = "$anon0"
	check_alive "$via"
done

# in text: the pages left alone are said
check "text report" exit_is 0 "$cli" -l move -p "$hog" -n 0 -f '!0'
check "text says left alone" grep -Eq '^left alone: [0-9]+ pages on nodes outside --from$' "$tmp/out"

# page by page: not with the copy strategy
check "--from with copy" exit_is 1 "$cli" -l move -p "$hog" -n 0 -f 0 -s copy
check "--from with copy says why" grep -q "^memmig-cli: error: move: pid $hog: --from moves page by page" "$tmp/err"

# numactl's syntax; anything else is memmig's own error, exit 2
for bad in "" x 0- -1 3-1 0,,1 ,0 0, 1024 '!all' 0-1024 '0 1'; do
	check "bad nodeset '$bad'" exit_is 2 "$cli" -l move -p "$hog" -n 0 --from "$bad"
	check "bad nodeset '$bad' said" grep -q "^memmig-cli: error: move: --from: '$bad' is not a set of nodes" "$tmp/err"
done
check "all" exit_is 0 "$cli" -l move -p "$hog" -n 0 --from all -j
check "all skips nothing" test "$(jq .report.pages_skipped "$tmp/out")" -eq 0
memhog_stop

summary
