#!/bin/bash
# In the multi-node guest (run-vm.sh): memmig-cli move --pid moves an outside
# process's anonymous and memfd memory between nodes for real -- to the
# CPU-less node 2, to 1, back to 0, and a small process to the node of CXL
# memory and back where the tier has one (guest-cxl.sh) -- while it keeps running with its bytes
# intact; /proc/PID/numa_maps (the kernel's own view) agrees; and numactl's
# migratepages and memmig agree on where the pages are.  Parses the JSON
# with sed/awk (no jq needed).
set -u
cli=${MEMMIG_CLI:-memmig-cli}
memhog=${MEMHOG:-memhog}
anon_mib=64 memfd_mib=32
# shellcheck source=../testlib.sh
. "$(dirname "$0")/../testlib.sh"
need_nodes 0 1 2

# A top-level number of the job (docs/json.md): json KEY
json() {
	sed -n "s/^  \"$1\": *\([-0-9.e]*\),\{0,1\}$/\1/p" "$tmp/out"
}
# A number of the job's report: rjson KEY
rjson() {
	sed -n "s/^    \"$1\": *\([-0-9.e]*\),\{0,1\}$/\1/p" "$tmp/out"
}
# A node row's field: json_node NODE FIELD (0 when the node has no row)
json_node() {
	awk -v n="$1" -v f="$2" '
		function val(s) { sub(/^[^:]*:[ ]*/, "", s); sub(/,$/, "", s); return s + 0 }
		/^ *"node":/ { cur = val($0); next }
		$0 ~ "^ *\"" f "\":" && cur == n { print val($0); found = 1; exit }
		END { if (!found) print 0 }' "$tmp/out"
}
# MemFree of each node, for the log: "N0 301 MiB N1 ..."
nodes_free() {
	local n out=
	for n in /sys/devices/system/node/node[0-9]*; do
		out="$out ${n##*node}:$(node_free_mib "${n##*node}")M"
	done
	echo "free${out}"
}
# The kernel's own counters of migration and compaction, for a slow move
vmstat_moves() {
	grep -E '^(pgmigrate_success|pgmigrate_fail|thp_migration_success|thp_migration_split|compact_stall|compact_fail|compact_success) ' /proc/vmstat
}
vmstat_diff() {
	awk 'NR == FNR { a[$1] = $2; next } $2 != a[$1] { printf "%s +%d ", $1, $2 - a[$1] }' \
		<(echo "$1") <(echo "$2")
}
move() {
	"$cli" -v move --pid "$hog" "$@" --wait --json >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ "$rc" -eq 0 ] || { echo "  memmig-cli move $* exited $rc"; cat "$tmp/err" "$tmp/out"; }
	return "$rc"
}

memhog_start "$anon_mib" "$memfd_mib"
echo "memhog $hog: anon $anon_addr [$(placement "$anon_addr")]," \
	"memfd $memfd_addr [$(placement "$memfd_addr")]"
check_alive "start"

# The whole process in one walk (migrate_pages(2)) to nodes 2 and 0, region
# by region (move_pages(2), MEMMIG_MOVE_WALK=0) to node 1: the same report.
for node in 2 1 0; do
	walk=$([ "$node" = 1 ] && echo 0 || echo 1)
	echo "  $(nodes_free)"
	# (an assignment before a function is in its commands' environment)
	vm0=$(vmstat_moves)
	MEMMIG_MOVE_WALK=$walk check "move all to node $node (walk $walk)" move --to-node "$node"
	echo "  the kernel meanwhile: $(vmstat_diff "$vm0" "$(vmstat_moves)")"
	echo "  to node $node (walk $walk): $(json bytes_moved) bytes moved in $(json elapsed_s) s" \
		"(plan $(rjson plan_s) s, queries $(rjson query_s) s, kernel $(rjson copy_s) s)," \
		"$(rjson pages_on_target) pages on target, $(rjson pages_failed) failed"
	if [ "$walk" = 1 ]; then
		check "node $node: in one walk" grep -q "in one walk to node $node" "$tmp/err"
	else
		check "node $node: region by region" test -z "$(grep "in one walk" "$tmp/err")"
	fi
	check "node $node: result OK" grep -q '^  "result": *"OK"' "$tmp/out"
	check "node $node: nothing failed" test "$(rjson pages_failed)" = 0
	check "node $node: every page counted after is on the target" \
		test "$(json_node "$node" pages_after)" = "$(rjson pages_on_target)"
	check "node $node: bytes moved" test "$(json bytes_moved)" -ge $(((anon_pages + memfd_pages) * 4096))
	a=$(placement "$anon_addr") m=$(placement "$memfd_addr")
	echo "  numa_maps: anon [$a], memfd [$m]"
	check "node $node: numa_maps: anon on N$node" test "$a" = "N$node=$anon_pages"
	check "node $node: numa_maps: memfd on N$node" test "$m" = "N$node=$memfd_pages"
	[ "$a" = "N$node=$anon_pages" ] && [ "$m" = "N$node=$memfd_pages" ] ||
		{ echo "  $(nodes_free)"; cat /proc/buddyinfo "$tmp/out"; grep -i thp /proc/vmstat; }
	check_alive "node $node"
done

# numactl's migratepages moves it all from node 0 to 2; memmig then finds
# nothing to move and every page on node 2.
command -v migratepages >/dev/null || { echo "SKIP: no migratepages (numactl) in the guest"; exit 77; }
check "migratepages 0 2" migratepages "$hog" 0 2
a=$(placement "$anon_addr") m=$(placement "$memfd_addr")
echo "  after migratepages $hog 0 2: numa_maps anon [$a], memfd [$m]"
check "migratepages: anon on N2" test "$a" = "N2=$anon_pages"
check "migratepages: memfd on N2" test "$m" = "N2=$memfd_pages"
for r in "anon $anon_addr $anon_len $anon_pages" "memfd $memfd_addr $memfd_len $memfd_pages"; do
	set -- $r
	check "$1 range after migratepages" move --to-node 2 --addr "$2" --len "$3"
	echo "  memmig on the $1 range: $(json bytes_moved) bytes moved," \
		"node 2 before $(json_node 2 pages_before) after $(json_node 2 pages_after)"
	check "$1: memmig moved nothing" test "$(json bytes_moved)" = 0
	check "$1: memmig saw every page on node 2 before" test "$(json_node 2 pages_before)" = "$4"
	check "$1: and after" test "$(rjson pages_on_target)" = "$4"
	check "$1: nothing on node 0" test "$(json_node 0 pages_before)" = 0
done
# And the other way: memmig moves, migratepages finds nothing left on node 1.
check "move all to node 1" move --to-node 1
check "migratepages 2 1 after memmig" migratepages "$hog" 2 1
check "anon still on N1 only" test "$(placement "$anon_addr")" = "N1=$anon_pages"
check_alive "after migratepages"

# --from, like migratepages FROM TO: the anonymous memory in thirds on
# nodes 0, 1 and 2 (2 MiB-aligned, whole THPs), then --from 0,2 --to-node 1
# moves the thirds on 0 and 2 and leaves the one on 1 alone; migratepages
# from the same spread ends where memmig did.
third=$(((anon_len / 3) & ~((2 << 20) - 1)))
spread() {
	move --to-node 0 --addr "$anon_addr" --len "$third" &&
	move --to-node 1 --addr "$((anon_addr + third))" --len "$third" &&
	move --to-node 2 --addr "$((anon_addr + 2 * third))" --len "$((anon_len - 2 * third))"
}
check "spread over 0, 1, 2" spread
a=$(placement "$anon_addr")
echo "  spread: numa_maps anon [$a]"
check "spread: anon on N0, N1, N2" test "$a" = "N0=$((third / 4096)) N1=$((third / 4096)) N2=$(((anon_len - 2 * third) / 4096))"
check "--from 0,2 --to-node 1" move --to-node 1 --from 0,2 --addr "$anon_addr" --len "$anon_len"
echo "  --from 0,2: $(json bytes_moved) bytes moved in $(json elapsed_s) s," \
	"$(rjson pages_skipped) pages skipped, numa_maps anon [$(placement "$anon_addr")]"
check "--from: the third on node 1 left alone" test "$(rjson pages_skipped)" = "$((third / 4096))"
check "--from: the thirds on 0 and 2 moved" test "$(json bytes_moved)" = "$((anon_len - third))"
check "--from: anon on N1 only" test "$(placement "$anon_addr")" = "N1=$anon_pages"
check_alive "after --from 0,2"
check "spread again" spread
# busybox's date has no %N: the uptime's hundredths time it.
t0=$(cut -d' ' -f1 /proc/uptime)
check "migratepages 0,2 1" migratepages "$hog" 0,2 1
echo "  migratepages $hog 0,2 1: $(awk -v t0="$t0" '{ printf "%.2f", $1 - t0 }' /proc/uptime) s" \
	"(the whole process), numa_maps anon [$(placement "$anon_addr")]"
check "migratepages ends where memmig --from did" test "$(placement "$anon_addr")" = "N1=$anon_pages"
check_alive "after migratepages 0,2 1"

# migratepages' mapping, --from 0,1 --to-node 1,2: anon on node 0 goes to
# 1 and the memfd on node 1 to 2, the memfd first (else anon, once on 1,
# would go on to 2 with it); a dry run says so first and moves nothing;
# the sets ascend (as migratepages' nodemasks do), so --to-node 1,0 is 0,1
# and maps each node onto itself; migratepages PID 0,1 1,2 ends where
# memmig did.
ranges() {
	echo --range "$anon_addr-$(printf '0x%x' $((anon_addr + anon_len)))" \
		--range "$memfd_addr-$(printf '0x%x' $((memfd_addr + memfd_len)))"
}
place01() {
	move --to-node 0 --addr "$anon_addr" --len "$anon_len" &&
	move --to-node 1 --addr "$memfd_addr" --len "$memfd_len"
}
check "anon on 0, memfd on 1" place01
# shellcheck disable=SC2046
check "dry run of 0,1 -> 1,2" quiet "$cli" move --pid "$hog" --from 0,1 --to-node 1,2 $(ranges) --dry-run
cat "$tmp/out"
check "dry run: node 0's anon pages would go to 1" grep -Eq "^ +0 +1 +$anon_pages " "$tmp/out"
check "dry run: node 1's memfd pages would go to 2" grep -Eq "^ +1 +2 +$memfd_pages " "$tmp/out"
check "dry run moved nothing" test "$(placement "$anon_addr") $(placement "$memfd_addr")" = \
	"N0=$anon_pages N1=$memfd_pages"
# shellcheck disable=SC2046
check "move --from 0,1 --to-node 1,2" quiet "$cli" move --pid "$hog" --from 0,1 --to-node 1,2 $(ranges) --json
echo "  0,1 -> 1,2: anon [$(placement "$anon_addr")], memfd [$(placement "$memfd_addr")]"
check "mapping: anon on N1" test "$(placement "$anon_addr")" = "N1=$anon_pages"
check "mapping: memfd on N2" test "$(placement "$memfd_addr")" = "N2=$memfd_pages"
check "mapping: two jobs" test "$(grep -c '"via"' "$tmp/out")" -eq 2
# where, across nodes: the anon mapping on N1, the memfd on N2 (a node 0
# column only if something of memhog's is still there: "-" in these rows)
check "where after the mapping" quiet "$cli" where --pid "$hog"
cat "$tmp/out"
check "where: nodes 1 and 2 are columns" grep -Eq "^address +kind +page( +node 0)? +node 1 +node 2 +total +path$" "$tmp/out"
check "where: anon's row, all of it on node 1" grep -Eq "^$anon_addr +anon +4 KiB( +-)? +$((anon_len >> 20))(\.0)? MiB +- +$((anon_len >> 20))(\.0)? MiB" "$tmp/out"
check "where: memfd's row, all of it on node 2" grep -Eq "^$memfd_addr +file +4 KiB( +-)? +- +$((memfd_len >> 20))(\.0)? MiB +$((memfd_len >> 20))(\.0)? MiB +/memfd:memhog" "$tmp/out"
check_alive "after the mapping"
# shellcheck disable=SC2046
check "--from 0,1 --to-node 1,0" quiet "$cli" move --pid "$hog" --from 0,1 --to-node 1,0 $(ranges) --json
check "1,0 is 0,1: nothing moved" test "$(placement "$anon_addr") $(placement "$memfd_addr")" = \
	"N1=$anon_pages N2=$memfd_pages"
# The same through memmigd: a job a pair, each after the last.
daemon=$(command -v "${MEMMIGD:-memmigd}")
memmigd_start "$tmp/memmigd.sock"
check "anon on 0, memfd on 1 for memmigd" place01
# shellcheck disable=SC2046
check "memmigd: --from 0,1 --to-node 1,2" quiet "$cli" -s "$tmp/memmigd.sock" move --pid "$hog" \
	--from 0,1 --to-node 1,2 $(ranges) --json
echo "  memmigd 0,1 -> 1,2: anon [$(placement "$anon_addr")], memfd [$(placement "$memfd_addr")]"
check "memmigd mapping: anon on N1" test "$(placement "$anon_addr")" = "N1=$anon_pages"
check "memmigd mapping: memfd on N2" test "$(placement "$memfd_addr")" = "N2=$memfd_pages"
check "memmigd mapping: two jobs of memmigd" test "$(grep -c '"via":"memmigd"' "$tmp/out")" -eq 2
memmigd_stop
check_alive "after memmigd's mapping"
check "anon on 0, memfd on 1 again" place01
check "migratepages 0,1 1,2" migratepages "$hog" 0,1 1,2
check "migratepages: anon on N1 as memmig did" test "$(placement "$anon_addr")" = "N1=$anon_pages"
check "migratepages: memfd on N2 as memmig did" test "$(placement "$memfd_addr")" = "N2=$memfd_pages"
check_alive "after migratepages 0,1 1,2"

# SIGTERM in the middle of a move: a clear message, exit 1, what moved is on
# the target, the rest where it was, memhog's bytes intact.
"$cli" move --pid "$hog" --to-node 2 --threads 1 >"$tmp/out" 2>"$tmp/err" &
mover=$!
# Once it said how it runs (in-process), it takes SIGTERM as a cancel.
for _ in $(seq 100); do
	grep -q 'in-process' "$tmp/err" && break
	sleep 0.05
done
sleep 0.3
kill -TERM "$mover" 2>/dev/null
wait "$mover"
rc=$?
a=$(placement "$anon_addr") m=$(placement "$memfd_addr")
echo "  SIGTERM after 0.3 s: exit $rc, anon [$a], memfd [$m]: $(head -c 200 "$tmp/err")"
if [ "$rc" -eq 1 ]; then
	check "SIGTERM: says it was cancelled" grep -q "cancelled" "$tmp/err"
	check "SIGTERM: the report says where the pages are" grep -q "^node " "$tmp/out"
else
	check "SIGTERM came after the end: the move succeeded" test "$rc" -eq 0
fi
check_alive "after SIGTERM"

memhog_stop
cxl_round_trip "CXL" "$cli" move
summary
