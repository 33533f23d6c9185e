#!/bin/bash
# Two moves of one process never run at once, whoever runs them (issue
# 37): each whole-process move holds an flock(2) on the process's
# /proc/PID/mem while it runs.  One memmig-cli -l move is held running
# (MEMMIG_MOVE_HOLD); meanwhile a second memmig-cli -l move and a memmigd
# job of the same process end EBUSY, nothing moved, saying why; a move of
# another process runs.  Once the first ends, the same move runs.  memhog
# checks its bytes throughout.
set -u
cli=${MEMMIG_CLI:-src/cli/memmig-cli}
memhog=${MEMHOG:-tests/helpers/memhog}
# shellcheck source=../testlib.sh
. "$(dirname "$0")/../testlib.sh"
command -v jq >/dev/null || { echo "SKIP: jq is not installed (apt-get install jq)"; exit 77; }

sock=$tmp/memmigd.sock
memmigd_start "$sock"
memhog_start 64 16
check_alive "before"

hold=$tmp/hold
touch "$hold"
MEMMIG_MOVE_HOLD=$hold "$cli" -l move --pid "$hog" --to-node 0 --json >"$tmp/first.json" 2>"$tmp/first.err" &
first=$!
# The first move holds its lock: /proc/locks has its flock on the inode
# of /proc/$hog/mem.
locked() {
	local ino

	ino=$(stat -c %i "/proc/$hog/mem") &&
		awk -v p="$first" -v i=":$ino" '$2 == "FLOCK" && $5 == p && substr($6, length($6) - length(i) + 1) == i { f = 1 } END { exit !f }' /proc/locks
}
for _ in $(seq 300); do locked && break; sleep 0.1; done
check "the held move holds the process's move lock" locked

check "a second memmig-cli -l move of the process fails" exit_is 1 "$cli" -l move --pid "$hog" --to-node 0 --json
echo "  -l: $(jq -c "{state, result, bytes_moved, message}" "$tmp/out" 2>/dev/null) $(head -n 1 "$tmp/err")"
check "... EBUSY" test "$(jq -r .result "$tmp/out")" = EBUSY
check "... nothing moved" test "$(jq .bytes_moved "$tmp/out")" -eq 0
check "... and says why" grep -q "another move of this process runs" "$tmp/out"

check "a memmigd job of the process fails" exit_is 1 "$cli" -s "$sock" move --pid "$hog" --to-node 0 --wait --json
echo "  memmigd: $(jq -c "{state, result, bytes_moved, message}" "$tmp/out" 2>/dev/null)"
check "... EBUSY, nothing moved" jq -e '.result == "EBUSY" and .bytes_moved == 0' "$tmp/out"

sleep 300 &
other=$!
check "a move of another process runs meanwhile" exit_is 0 "$cli" -l move --pid "$other" --to-node 0 --json
kill "$other"
check_alive "while held"

rm -f "$hold"
wait "$first"
check "the first move ends done" test $? -eq 0
check "... its report whole" jq -e '.state == "done" and .report.pages_failed == 0' "$tmp/first.json"
check "... and its lock is released" sh -c "! awk '\$5 == $first' /proc/locks | grep -q ."
check "the same move now runs" exit_is 0 "$cli" -l move --pid "$hog" --to-node 0 --json
check "... through memmigd too" exit_is 0 "$cli" -s "$sock" move --pid "$hog" --to-node 0 --wait --json
check_alive "after"
memhog_stop
summary
