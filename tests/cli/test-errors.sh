#!/bin/bash
# memmig-cli's help, -q/-v, short options and its errors as a user meets
# them: one prefix, a node that does not exist named, a calibration file
# of another CPU named, and a socket that refuses this user pointing at
# memmigd's --group (a real memmigd, the client run as nobody).
set -u
cli=${MEMMIG_CLI:-src/cli/memmig-cli}
memhog=${MEMHOG:-tests/helpers/memhog}
# shellcheck source=../testlib.sh
. "$(dirname "$0")/../testlib.sh"

not() { ! "$@"; }

# help [COMMAND]: the list, or the command's own usage, on stdout
check "help" exit_is 0 "$cli" help
check "help lists move" grep -q '^  move ' "$tmp/out"
check "help names -q" grep -q -- '-q, --quiet' "$tmp/out"
check "help move" exit_is 0 "$cli" help move
check "help move is move's usage" grep -q '^Usage: memmig-cli move' "$tmp/out"
check "help bench copy" exit_is 0 "$cli" help bench copy
check "help bench copy usage" grep -q 'bench copy' "$tmp/out"
check "help of nothing" exit_is 2 "$cli" help frobnicate
check "help of nothing says so" grep -q "^memmig-cli: error: help: unknown command 'frobnicate'" "$tmp/err"

# -q: errors only (no "via" line); -v: libmemmig's debug log
check "-q nodes" exit_is 0 "$cli" -q nodes
check "-q prints nothing on stderr" test ! -s "$tmp/err"
check "-v nodes" exit_is 0 "$cli" -v nodes
check "-v shows libmemmig's debug log" grep -q '^memmig-cli: libmemmig: debug: ' "$tmp/err"
check "-q still prints errors" exit_is 2 "$cli" -q move --pid 1 --to-node 0 --range 5-2

# one prefix: "memmig-cli: error: COMMAND: ..." for option errors too
check "option error prefix" grep -q "^memmig-cli: error: move: --range: " "$tmp/err"
check "size error prefix" exit_is 2 "$cli" move --pid 1 --to-node 0 --addr banana --len 4K
check "size error names the command" grep -q "^memmig-cli: error: move: --addr: 'banana' is not a size" "$tmp/err"
check "getopt's own message" exit_is 2 "$cli" move --bogus
check "getopt's message in the same form" grep -q "^memmig-cli: error: move: unrecognized option '--bogus'" "$tmp/err"
check "a benchmark's option error" exit_is 2 "$cli" bench copy --sizes 4K,banana
check "names the benchmark" grep -q "^memmig-bench: error: copy: --sizes: 'banana' is not a size" "$tmp/err"
check "a global option error" exit_is 2 "$cli" --bogus
check "global error form" grep -q "^memmig-cli: error: unrecognized option '--bogus'" "$tmp/err"

# short options: -l (in-process), -p, -n, -j
memhog_start 8 4
check "short options move" exit_is 0 "$cli" -l move -p "$hog" -n 0 -j
check "short options report" test "$(jq .pid "$tmp/out")" -eq "$hog"

# a node this host lacks: named, with the nodes there are
check "absent node" exit_is 1 "$cli" -l move --pid "$hog" --to-node 999
check "absent node named" grep -q "^memmig-cli: error: move: --to-node: node 999 does not exist (nodes with memory: 0" "$tmp/err"
check "no errno prose for a node" not grep -q 'No such file or directory' "$tmp/err"
memhog_stop

# a calibration file of another CPU: both CPUs named, and what to do
printf 'cpu = NoSuchVendor 1 2\nnt_min = 4M\n' >"$tmp/other.cal"
check "calibration of another CPU" exit_is 1 env MEMMIG_CALIBRATION="$tmp/other.cal" "$cli" cpu
check "other CPU named" grep -q "calibration file $tmp/other.cal was measured on CPU NoSuchVendor 1 2, this is .*: run memmig-cli bench copy --calibrate" "$tmp/err"
check "no Stale file handle" not grep -q 'Stale file handle' "$tmp/err"

# a socket that refuses this user: memmigd's --group named
chmod 755 "$tmp"
for group in root daemon; do
	sock=$tmp/$group.sock
	memmigd_start "$sock" --group "$group"
	check "nobody refused by a $group socket" exit_is 3 as_nobody "$cli" --socket "$sock" jobs
	if [ "$group" = root ]; then
		check "refusal says --group" grep -q "^memmig-cli: error: jobs: permission denied on $sock: ask the administrator to start memmigd with --group G and add you to G" "$tmp/err"
	else
		check "refusal names the group" grep -q "^memmig-cli: error: jobs: permission denied on $sock: it is for the group daemon: ask the administrator to add you to daemon" "$tmp/err"
	fi
	memmigd_stop
done

summary
