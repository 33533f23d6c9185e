#!/bin/bash
# What operators of numactl and numastat expect of memmig-cli (issue 33):
# where (numastat -p), move --dry-run, migratepages' from -> to mapping and
# its refusals, the move's input errors, job timestamps.  On a memhog whose
# pages are placed (all on node 0 here), in-process and through a real
# memmigd; the counts checked against the kernel's own numa_maps and the
# process's known sizes, never against figures of this host.
set -u
cli=${MEMMIG_CLI:-src/cli/memmig-cli}
memhog=${MEMHOG:-tests/helpers/memhog}
# shellcheck source=../testlib.sh
. "$(dirname "$0")/../testlib.sh"
command -v jq >/dev/null || { echo "SKIP: jq is not installed (apt-get install jq)"; exit 77; }

# A node this host does not have.
absent=$(absent_node)
sock=$tmp/memmigd.sock
memmigd_start "$sock"

memhog_start 32 16
check "all to node 0 first" exit_is 0 "$cli" -l move --pid "$hog" --to-node 0 --json
anon0=$(placement "$anon_addr") memfd0=$(placement "$memfd_addr")
check_alive "before"

# numa_bytes [NODE]: the process's resident bytes (on NODE), as the
# kernel's numa_maps counts them
numa_bytes() {
	awk -v want="${1:-}" '{
		kb = 4
		for (i = 2; i <= NF; i++) if ($i ~ /^kernelpagesize_kB=/) { split($i, a, "="); kb = a[2] }
		for (i = 2; i <= NF; i++) if ($i ~ /^N[0-9]+=/) {
			split(substr($i, 2), a, "=")
			if (want == "" || a[1] == want) s += a[2] * kb * 1024
		}
	} END { printf "%d\n", s }' "/proc/$hog/numa_maps"
}

# ---- where: per node and per mapping, like numastat -p ----
check "where --json" exit_is 0 "$cli" where --pid "$hog" --json
cp "$tmp/out" "$tmp/where.json"
check "where: pid" test "$(jq .pid "$tmp/where.json")" -eq "$hog"
check "where: domain null" test "$(jq .domain "$tmp/where.json")" = null
anon_b=$(jq --arg a "$anon_addr" '.mappings[] | select(.addr == $a) | .bytes' "$tmp/where.json")
check "where: the anonymous mapping is memhog's $anon_len bytes" test "$anon_b" -eq "$anon_len"
check "where: its kind anon" test "$(jq -r --arg a "$anon_addr" \
	'.mappings[] | select(.addr == $a) | .kind' "$tmp/where.json")" = anon
check "where: all of it on node 0" test "$(jq --arg a "$anon_addr" \
	'.mappings[] | select(.addr == $a) | .nodes[] | select(.node == 0) | .bytes' \
	"$tmp/where.json")" -eq "$anon_len"
memfd_b=$(jq --arg a "$memfd_addr" '.mappings[] | select(.addr == $a) | .bytes' "$tmp/where.json")
check "where: the memfd is memhog's $memfd_len bytes" test "$memfd_b" -eq "$memfd_len"
# numa_maps writes the space as \040: where gives the name back
check "where: the memfd's kind file, its name" test "$(jq -r --arg a "$memfd_addr" \
	'.mappings[] | select(.addr == $a) | "\(.kind) \(.path)"' "$tmp/where.json")" = \
	"file /memfd:memhog (deleted)"
check "where: page size 4 KiB" test "$(jq --arg a "$anon_addr" \
	'.mappings[] | select(.addr == $a) | .page_size' "$tmp/where.json")" -eq 4096
# memhog's memory does not change meanwhile: the totals are numa_maps' now
check "where: total is numa_maps' sum" test "$(jq .bytes "$tmp/where.json")" -eq "$(numa_bytes)"
check "where: node 0 is numa_maps' node 0" \
	test "$(jq '.nodes[] | select(.node == 0) | .bytes' "$tmp/where.json")" -eq "$(numa_bytes 0)"
check "where: the nodes add up" test "$(jq '[.nodes[].bytes] | add' "$tmp/where.json")" \
	-eq "$(jq .bytes "$tmp/where.json")"
check "where: the mappings add up" test "$(jq '[.mappings[].bytes] | add' "$tmp/where.json")" \
	-eq "$(jq .bytes "$tmp/where.json")"
if command -v numastat >/dev/null; then
	# numastat -p's total in MB (2 decimals) against where's, to 0.01 MB
	ns=$(numastat -p "$hog" | awk '$1 == "Total" { print $NF }')
	check "where: numastat -p's total ($ns MB)" awk -v n="$ns" \
		-v b="$(jq .bytes "$tmp/where.json")" 'BEGIN { d = b / 1048576 - n; exit !(d < 0.01 && d > -0.01) }'
fi
check "where text" exit_is 0 "$cli" where --pid "$hog"
check "where text: the total line" grep -Eq "^pid $hog: .+ resident$" "$tmp/out"
check "where text: a node 0 column" grep -Eq '^address +kind +page +node 0 +total +path$' "$tmp/out"
check "where text: memhog's anon mapping" grep -Eq "^$anon_addr +anon +4 KiB +32.0 MiB +32.0 MiB" "$tmp/out"
check "where: no such process" exit_is 1 "$cli" where --pid 999999999
check "where: no such process said" grep -q "^memmig-cli: error: where: pid 999999999: No such process" "$tmp/err"
check "where: --pid or --domain" exit_is 2 "$cli" where
check "where: not both" exit_is 2 "$cli" where --pid "$hog" --domain x
# a domain's pid from memmigd (registered as the libvirt hook would)
check "register a domain" exit_is 0 "$cli" -s "$sock" domains register --name numa-dom --pid "$hog"
check "where --domain" exit_is 0 "$cli" -s "$sock" where --domain numa-dom --json
check "where --domain: its pid" test "$(jq .pid "$tmp/out")" -eq "$hog"
check "where --domain: its name" test "$(jq -r .domain "$tmp/out")" = numa-dom
check "where --domain: the same anon mapping" test "$(jq --arg a "$anon_addr" \
	'.mappings[] | select(.addr == $a) | .bytes' "$tmp/out")" -eq "$anon_len"
check "where --domain unknown" exit_is 1 "$cli" -s "$sock" where --domain nosuch
check "where --domain unknown said" grep -q "where: --domain: memmigd knows no running domain 'nosuch'" "$tmp/err"

# ---- move --dry-run: counts, nothing moved ----
anon_end=$(printf '0x%x' $((anon_addr + anon_len)))
for via in local daemon; do
	if [ "$via" = local ]; then mc() { "$cli" -l "$@"; }; else mc() { "$cli" -s "$sock" "$@"; }; fi
	check "$via: dry run of the anon range" exit_is 0 mc move --pid "$hog" --to-node 0 \
		--range "$anon_addr-$anon_end" --dry-run --json
	check "$via: dry run says so" test "$(jq .dry_run "$tmp/out")" = true
	check "$via: node 0's pages are the range's" \
		test "$(jq '.nodes[] | select(.node == 0) | .pages' "$tmp/out")" -eq "$anon_pages"
	check "$via: they stay (node 0 to node 0)" \
		test "$(jq '.nodes[] | select(.node == 0) | .to_node' "$tmp/out")" -eq 0
	check "$via: nothing to move onto the node they are on" test "$(jq .pages_to_move "$tmp/out")" -eq 0
	check "$via: kind anon, the range's pages" \
		test "$(jq '.kinds[] | select(.kind == "anon") | .pages' "$tmp/out")" -eq "$anon_pages"
	check "$via: whole process dry run" exit_is 0 mc move --pid "$hog" --to-node 0 --dry-run --json
	check "$via: its pages are numa_maps'" \
		test "$(($(jq '[.nodes[].pages] | add' "$tmp/out") * 4096))" -eq "$(numa_bytes)"
	check "$via: --from $absent is refused before a dry run" exit_is 2 mc move --pid "$hog" \
		--to-node 0 --from "$absent" --dry-run
	check "$via: dry run, text" exit_is 0 mc move --pid "$hog" --to-node 0 --dry-run
	check "$via: text says nothing moved" grep -Eq "^dry run of pid $hog: would move 0 pages \(0 B\); nothing moved$" "$tmp/out"
	check "$via: placement unchanged" test "$(placement "$anon_addr") $(placement "$memfd_addr")" = "$anon0 $memfd0"
	check_alive "$via dry run"
done
check "no job made by a dry run" exit_is 0 "$cli" -s "$sock" jobs --json
check "memmigd has no job" test "$(jq length "$tmp/out")" -eq 0

# ---- input errors: one reason, one exit code, both paths ----
for via in local daemon; do
	if [ "$via" = local ]; then mc() { "$cli" -l "$@"; }; else mc() { "$cli" -s "$sock" "$@" --wait; }; fi
	check "$via: --from $absent refused" exit_is 2 mc move --pid "$hog" --to-node 0 --from "$absent"
	check "$via: --from $absent named" grep -q "^memmig-cli: error: move: --from: node $absent does not exist (nodes with memory: " "$tmp/err"
	check "$via: --from 0,$absent refused" exit_is 2 mc move --pid "$hog" --to-node 0 --from "0,$absent"
	check "$via: --from !$absent refused" exit_is 2 mc move --pid "$hog" --to-node 0 --from "!$absent"
	check "$via: --from $absent, JSON ENOENT" exit_is 2 mc move --pid "$hog" --to-node 0 --from "$absent" --json
	check "$via: --from $absent, JSON ENOENT said" test "$(jq -r .error "$tmp/out")" = ENOENT
	check "$via: unaligned --range" exit_is 2 mc move --pid "$hog" --to-node 0 --range 0x1001-0x2001
	check "$via: unaligned --range said" grep -qx "memmig-cli: error: move: --range: 0x1001 is not page-aligned" "$tmp/err"
	check "$via: unaligned --range end" exit_is 2 mc move --pid "$hog" --to-node 0 --range 0x1000-0x2001
	check "$via: unaligned end said" grep -qx "memmig-cli: error: move: --range: 0x2001 is not page-aligned" "$tmp/err"
	check "$via: unaligned --len" exit_is 2 mc move --pid "$hog" --to-node 0 --addr 0x1000 --len 100
	check "$via: unaligned --len said" grep -qx "memmig-cli: error: move: --len: 100 is not page-aligned" "$tmp/err"
	# migratepages' mapping: sets of equal size, no cycle, nodes that exist
	check "$via: 2 targets for 1 source" exit_is 2 mc move --pid "$hog" --from 0 --to-node 0,1
	check "$via: unequal sets said" grep -q "several --to-node nodes map in order onto as many --from nodes" "$tmp/err"
	check "$via: a mapping with an absent target" exit_is 1 mc move --pid "$hog" --from 0 --to-node "$absent"
	check "$via: nothing moved" test "$(placement "$anon_addr")" = "$anon0"
done
check_alive "after the refusals"


# ---- job timestamps ----
t0=$(date +%s)
check "local move --json" exit_is 0 "$cli" -l move --pid "$hog" --to-node 0 --json
for k in created_at_s started_at_s ended_at_s; do
	check "local: $k is now" test "$(jq ".$k" "$tmp/out")" -ge "$t0" -a \
		"$(jq ".$k" "$tmp/out")" -le "$(date +%s)"
done
check "local: started <= ended" test "$(jq '.ended_at_s - .started_at_s' "$tmp/out")" -ge 0
check "daemon move --wait --json" exit_is 0 "$cli" -s "$sock" move --pid "$hog" --to-node 0 --wait --json
id=$(jq .id "$tmp/out")
for k in created_at_s started_at_s ended_at_s; do
	check "daemon: $k is now" test "$(jq ".$k" "$tmp/out")" -ge "$t0" -a \
		"$(jq ".$k" "$tmp/out")" -le "$(date +%s)"
done
check "daemon: created <= started <= ended" test "$(jq '(.started_at_s - .created_at_s) * (.ended_at_s - .started_at_s) >= 0 and .started_at_s >= .created_at_s' "$tmp/out")" = true
check "status JOB keeps them" exit_is 0 "$cli" -s "$sock" status "$id" --json
check "status: created_at_s" test "$(jq .created_at_s "$tmp/out")" -ge "$t0"
check "jobs table: a created column" exit_is 0 "$cli" -s "$sock" jobs
check "jobs: the header" grep -Eq '^ *job +state .* result +created *$' "$tmp/out"
check "jobs: the row's ISO 8601 time" grep -Eq "^ *$id +done .* [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2} *$" "$tmp/out"
# A process this user may not move: one errno (EPERM) and one wording,
# in-process and through memmigd.
# memmigd again, on a socket for nobody's group.
chmod 755 "$tmp"
memmigd_stop
sock=$tmp/nogroup.sock
memmigd_start "$sock" --group "$(id -gn nobody)"
rule="may not move pid $hog.*: the same rule as move_pages(2)\$"
for via in local daemon; do
	if [ "$via" = local ]; then where=-l; else where="-s $sock"; fi
	# shellcheck disable=SC2086
	check "$via: nobody moves root's process" exit_is 1 as_nobody "$cli" $where move \
		--pid "$hog" --to-node 0 --wait --json
	check "$via: EPERM" test "$(jq -r .error "$tmp/out")" = EPERM
	check "$via: move_pages(2)'s rule said" grep -q "^memmig-cli: error: move: .*uid $(id -u nobody) gid $(id -g nobody) $rule" "$tmp/err"
done
check "nobody's dry run" exit_is 1 as_nobody "$cli" -l move --pid "$hog" --to-node 0 --dry-run --json
check "nobody's dry run: EPERM" test "$(jq -r .error "$tmp/out")" = EPERM
check "nobody's dry run: the rule said" grep -q "^memmig-cli: error: move: --dry-run: uid $(id -u nobody) gid $(id -g nobody) $rule" "$tmp/err"
check "nothing moved for nobody" test "$(placement "$anon_addr")" = "$anon0"
check_alive "end"
memhog_stop

summary
