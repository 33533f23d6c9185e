#!/bin/bash
# What an operator meets first (issue 33), without memmigd: --json errors
# as docs/json.md's object whatever failed and where, a bad MEMMIG_COPY_*
# stopping only the commands that copy, cancel's argument errors, what to
# do when memmigd is not there.
set -u
cli=${MEMMIG_CLI:-src/cli/memmig-cli}
# shellcheck source=../testlib.sh
. "$(dirname "$0")/../testlib.sh"

command -v jq >/dev/null || { echo "SKIP: jq is not installed (apt-get install jq)"; exit 77; }
not() { ! "$@"; }
nosock=$tmp/none.sock
export MEMMIG_SOCKET=$nosock

# json_error CODE ERRNO MESSAGE COMMAND...: exit CODE, one error object on
# stdout with that errno name and that message
json_error() {
	local code=$1 err=$2 msg=$3
	shift 3
	exit_is "$code" "$@" || return 1
	[ "$(jq -s length "$tmp/out")" = 1 ] || { echo "  '$*': not one JSON value"; return 1; }
	jq -e --arg e "$err" --arg m "$msg" \
		'.ok == false and .error == $e and .message == $m' "$tmp/out" >/dev/null ||
		{ echo "  '$*' printed:"; cat "$tmp/out"; return 1; }
}

# --json errors: getopt's words, not argv[0]'s prefix
check "move --bogus --json" json_error 2 EINVAL "move: unrecognized option '--bogus'" \
	"$cli" move --pid 1 --to-node 0 --bogus --json
# ... and those before the command's parser: global options, the command
check "--bogus nodes --json" json_error 2 EINVAL "unrecognized option '--bogus'" \
	"$cli" --bogus nodes --json
check "frobnicate --json" json_error 2 EINVAL "unknown command 'frobnicate'" \
	"$cli" frobnicate --json
check "the prose stays on stderr" grep -q "^memmig-cli: error: unknown command 'frobnicate'" "$tmp/err"

# a bad MEMMIG_COPY_*: the commands that copy name it, the others work
bad() { env MEMMIG_COPY_NT_MIN=banana "$@"; }
check "help with a bad variable" exit_is 0 bad "$cli" help
check "help lists the commands" grep -q '^  move ' "$tmp/out"
check "nodes -l with a bad variable" exit_is 0 bad "$cli" -l nodes --json
check "nodes -l lists node 0" test "$(jq '.nodes[0].id' "$tmp/out")" -eq 0
check "nothing said of it" not grep -q MEMMIG_COPY "$tmp/err"
check "jobs with a bad variable: memmigd's absence" exit_is 3 bad "$cli" jobs
check "where with a bad variable" exit_is 0 bad "$cli" where --pid $$ --json
check "where: this shell's memory" test "$(jq '.bytes > 0' "$tmp/out")" = true
check "tier with a bad variable: memmigd's absence" exit_is 3 bad "$cli" tier --list
check "cpu names the variable" exit_is 1 bad "$cli" cpu
check "the variable named" grep -q 'MEMMIG_COPY_NT_MIN="banana"' "$tmp/err"
check "move --json names the variable" json_error 1 EINVAL \
	'libmemmig: MEMMIG_COPY_NT_MIN="banana": not a size up to 1T, or never' \
	bad "$cli" -l move --pid $$ --to-node 0 --json

# cancel's argument: named, and the usage
check "cancel abc" exit_is 2 "$cli" cancel abc
check "cancel abc says JOB" grep -qx "memmig-cli: error: cancel: JOB: expected a job number, not 'abc'" "$tmp/err"
check "cancel abc shows the usage" grep -q '^Usage: memmig-cli cancel JOB' "$tmp/err"
check "cancel" exit_is 2 "$cli" cancel
check "cancel says JOB is missing" grep -qx "memmig-cli: error: cancel: JOB is missing" "$tmp/err"
check "cancel shows the usage" grep -q '^Usage: memmig-cli cancel JOB' "$tmp/err"
check "status 0x" exit_is 2 "$cli" status 0x
check "status 0x says JOB" grep -qx "memmig-cli: error: status: JOB: expected a job number, not '0x'" "$tmp/err"

# no memmigd: what to do, and -l where the command has it
check "jobs without memmigd" exit_is 3 "$cli" jobs
check "jobs: cannot reach" grep -q "jobs: cannot reach memmigd at $nosock: No such file or directory" "$tmp/err"
check "jobs: how to start it" grep -q "start it (systemctl start memmigd, or memmigd --foreground)$" "$tmp/err"
check "nodes without memmigd" exit_is 3 "$cli" nodes
check "nodes: or -l" grep -q "or memmigd --foreground), or run in this process with memmig-cli -l$" "$tmp/err"
summary
