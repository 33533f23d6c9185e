#!/bin/bash
# memmig-cli move --pid on a process that does not link libmemmig: its data
# stays the same and it keeps running.  This machine has one node, so the
# pages cannot change node here (the multi-node tier moves them for real);
# what is checked here is the path, the report, the errors and the bytes.
set -u
cli=${MEMMIG_CLI:-src/cli/memmig-cli}
memhog=${MEMHOG:-tests/helpers/memhog}
# shellcheck source=../testlib.sh
. "$(dirname "$0")/../testlib.sh"

command -v jq >/dev/null || { echo "SKIP: jq is not installed (apt-get install jq)"; exit 77; }

memhog_start 128 64
first=$(verify)
check "data intact before" test "${first% *}" = "verify ok"

# every mapping of the process, to the only node: nothing to move, no failure
check "move all" exit_is 0 "$cli" move --pid "$hog" --to-node 0 --wait --json
# the job object (docs/json.md), its report within
check "job ended OK" test "$(jq -r '.state + " " + .result' "$tmp/out")" = "done OK"
jq .report "$tmp/out" >"$tmp/rep"
check "report pid" test "$(jq .pid "$tmp/rep")" -eq "$hog"
check "report result" test "$(jq -r .result "$tmp/rep")" = OK
check "report strategy" test "$(jq -r .strategy "$tmp/rep")" = kernel
check "regions listed" test "$(jq .regions "$tmp/rep")" -ge 3
check "nothing failed" test "$(jq .pages_failed "$tmp/rep")" -eq 0
check "all present pages on node 0" \
	test "$(jq '.nodes[] | select(.node == 0) | .pages_after' "$tmp/rep")" -eq \
	     "$(jq .pages_on_target "$tmp/rep")"
check "memhog's 192 MiB counted" test "$(jq .pages_on_target "$tmp/rep")" -ge $((192 * 256))
# where the time went: planning before, queries and the move within
check "time parts" test "$(jq '.plan_s > 0 and .query_s > 0 and .copy_s > 0 and .prepare_s >= 0 and .query_s + .copy_s <= .elapsed_s' "$tmp/rep")" = true
second=$(verify)
check "data intact after move" test "${second% *}" = "verify ok"
check "still running" test "${second##* }" -gt "${first##* }"

# one range, in text
check "move range" exit_is 0 "$cli" move --pid "$hog" --to-node 0 --addr "$anon_addr" --len "$anon_len"
check "range report" grep -q "^pid $hog: moved 0 B of 128 MiB to node 0" "$tmp/out"
check "range node table" grep -q '^node 0 ' "$tmp/out"
check "range time line" grep -Eq '^time: planning [0-9.]+ ms before; of the [0-9.]+ ms: placement queries' "$tmp/out"
third=$(verify)
check "data intact after range move" test "${third% *}" = "verify ok"

# errors: clear messages, exit 1 or 2, nothing changed
check "no such node" exit_is 1 "$cli" move --pid "$hog" --to-node 9
check "no such node message" grep -q "No such file or directory\|does not exist" "$tmp/err"
check "copy strategy refused for another process" \
	exit_is 1 "$cli" move --pid "$hog" --to-node 0 --strategy copy
check "unmapped range" exit_is 1 "$cli" move --pid "$hog" --to-node 0 --addr 0x1000 --len 4096
check "unmapped range message" grep -q "Bad address" "$tmp/err"
check "unaligned range" exit_is 2 "$cli" move --pid "$hog" --to-node 0 --addr "$anon_addr" --len 100
check "unaligned range: a usage error naming the length" grep -q "not page-aligned" "$tmp/err"
check "addr without len" exit_is 2 "$cli" move --pid "$hog" --to-node 0 --addr "$anon_addr"
check "missing node" exit_is 2 "$cli" move --pid "$hog"
check "bad strategy" exit_is 2 "$cli" move --pid "$hog" --to-node 0 --strategy fast
sh -c 'exit 0' & gone=$!
wait "$gone"
check "gone pid" exit_is 1 "$cli" move --pid "$gone" --to-node 0
check "gone pid message" grep -q "No such process" "$tmp/err"
fourth=$(verify)
check "data intact after errors" test "${fourth% *}" = "verify ok"

memhog_stop
summary
