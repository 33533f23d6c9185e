# Sourced by the shell tests: a scratch directory ($tmp), named checks,
# exit-code checks, memhog helpers, the summary.
fails=0 passes=0
tmp=$(mktemp -d)
hog=	# memhog's pid while it runs: stopped on exit

cleanup() {
	[ -n "$hog" ] && kill "$hog" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# check NAME COMMAND...: passes when the command succeeds
check() {
	local name=$1
	shift
	if "$@"; then
		passes=$((passes + 1))
	else
		echo "FAIL: $name"
		fails=$((fails + 1))
	fi
}

# exit_is CODE COMMAND...: runs the command, output to $tmp/out, $tmp/err
exit_is() {
	local want=$1 rc
	shift
	"$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ "$rc" -eq "$want" ] || { echo "  '$*' exited $rc, not $want"; cat "$tmp/err"; return 1; }
}

# memhog (tests/helpers/memhog) runs as $hog, its output in $tmp/hog.out.
# wait_line PATTERN: waits for a line of its output; prints it
wait_line() {
	for _ in $(seq 100); do
		grep -m1 "$1" "$tmp/hog.out" && return 0
		sleep 0.1
	done
	return 1
}

# verify: memhog checks its bytes and answers "verify ok N" (N its loop
# counter, which shows it kept running); prints that answer
verify() {
	local before
	before=$(grep -c '^verify' "$tmp/hog.out")
	kill -USR1 "$hog"
	for _ in $(seq 300); do
		[ "$(grep -c '^verify' "$tmp/hog.out")" -gt "$before" ] && break
		sleep 0.1
	done
	grep '^verify' "$tmp/hog.out" | tail -n 1
}

# check_alive WHAT: memhog's bytes are intact and its loop counter went on
# since the last call
last_count=0
check_alive() {
	local v
	v=$(verify)
	check "$1: data intact ($v)" test "${v% *}" = "verify ok"
	check "$1: still running" test "${v##* }" -gt "$last_count"
	last_count=${v##* }
}

# memhog_stop: SIGTERM; memhog exits 0 when its last check passed
memhog_stop() {
	kill -TERM "$hog"
	wait "$hog"
	check "memhog exits clean" test $? -eq 0
	hog=
}

# The closing line, and the exit status: 0 when nothing failed.
summary() {
	echo "$passes passed, $fails failed"
	[ "$fails" -eq 0 ]
}
