# Sourced by the shell tests: named checks, exit-code checks, the summary.
# The sourcing script sets $tmp (a scratch directory) first.
fails=0 passes=0

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

# The closing line, and the exit status: 0 when nothing failed.
summary() {
	echo "$passes passed, $fails failed"
	[ "$fails" -eq 0 ]
}
