#!/bin/bash
# memmigd under valgrind through the bad-input suite, then moves (cancel,
# disconnect, SIGTERM during jobs), then events and metrics (subscribers,
# one dropped, the metrics file): no definite leak, no memory error.
# valgrind's own exit status (99) on an error turns into the daemon's
# exit status, which the test programs check after SIGTERM.
set -u
tests=${DAEMON_TESTS:-tests/daemon}
command -v valgrind >/dev/null || { echo "SKIP: valgrind is not installed (apt-get install valgrind)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export MEMMIGD_WRAPPER="valgrind --quiet --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=99 --log-file=$tmp/vg.%p"
fails=0
for t in test-daemon-input test-daemon-move test-daemon-obs; do
	echo "== $t under valgrind"
	"$tests/$t" | grep -v '^memmigd: info: job'
	rc=${PIPESTATUS[0]}
	[ "$rc" -eq 0 ] || { echo "FAIL: $t exited $rc"; fails=$((fails + 1)); }
done
for log in "$tmp"/vg.*; do
	[ -s "$log" ] || continue
	echo "== valgrind said ($log):"
	cat "$log"
	fails=$((fails + 1))
done
echo "valgrind runs: $fails failed"
[ "$fails" -eq 0 ]
