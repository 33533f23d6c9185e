# Sourced by the shell tests: a scratch directory ($tmp), named checks,
# exit-code checks, memhog helpers, the summary.
fails=0 passes=0
tmp=$(mktemp -d)
hog=	# memhog's pid while it runs: stopped on exit

cleanup() {
	[ -n "$hog" ] && kill "$hog" 2>/dev/null
	[ -n "${dpid:-}" ] && kill "$dpid" 2>/dev/null
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

# daemon_start [OPTIONS...]: $daemon in the foreground on $sock, its log in
# $tmp/daemon.log, its pid in $dpid; fails if the socket does not appear
# within 10 s.  mc: memmig-cli on that socket.
daemon_start() {
	"$daemon" --foreground --socket "$sock" --no-libvirt --config /dev/null "$@" \
		2>>"$tmp/daemon.log" &
	dpid=$!
	for _ in $(seq 100); do
		[ -S "$sock" ] && return 0
		sleep 0.1
	done
	return 1
}
mc() { "$cli" --socket "$sock" "$@"; }

# node_free_mib N: node N's MemFree in MiB
node_free_mib() {
	echo $(($(sed -n 's/.*MemFree: *\([0-9]*\) kB/\1/p' \
		"/sys/devices/system/node/node$1/meminfo") / 1024))
}

# memhog_start ANON_MIB MEMFD_MIB: starts memhog as $hog, waits until it
# is ready, and sets anon_addr, anon_len, memfd_addr, memfd_len and the
# 4 KiB page counts anon_pages and memfd_pages
memhog_start() {
	"$memhog" "$1" "$2" >"$tmp/hog.out" &
	hog=$!
	check "memhog ready" wait_line '^ready' >/dev/null
	read -r _ anon_addr anon_len < <(grep '^anon' "$tmp/hog.out")
	read -r _ memfd_addr memfd_len < <(grep '^memfd' "$tmp/hog.out")
	anon_pages=$((anon_len / 4096)) memfd_pages=$((memfd_len / 4096))
}

# placement ADDR: the N<node>=<pages> fields of the numa_maps line of
# memhog's mapping at ADDR ("N2=16384"), the kernel's own view
placement() {
	awk -v a="${1#0x}" '$1 == a {
		s = ""
		for (i = 2; i <= NF; i++) if ($i ~ /^N[0-9]+=/) s = s (s ? " " : "") $i
		print s; exit }' "/proc/$hog/numa_maps"
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

# cxl_round_trip NAME MOVE...: a small memhog's memory (1 MiB anonymous,
# 1 MiB memfd) to the node of CXL memory (MEMMIG_CXL_NODE, from
# guest-cxl.sh) and back to node 0 with MOVE (a memmig-cli move, given
# --pid, --range, --to-node, --wait, --json); /proc/PID/numa_maps and its
# bytes checked after each.  Small: QEMU 7.2 emulates each access to CXL
# memory (page migration there ran at about 1 MB/s).  Its two ranges, not
# the whole process: that would take the C library's pages, which every
# process runs, to CXL memory with it, and QEMU runs no code from there at
# any useful speed.  Nothing without a CXL node.
cxl_round_trip() {
	local name=$1 node a m last=$last_count

	shift
	[ -n "${MEMMIG_CXL_NODE:-}" ] || { echo "  ($name: no node of CXL memory here)"; return 0; }
	memhog_start 1 1
	last_count=0
	for node in "$MEMMIG_CXL_NODE" 0; do
		check "$name: to node $node" quiet "$@" --pid "$hog" --to-node "$node" \
			--range "$anon_addr-$(printf '0x%x' $((anon_addr + anon_len)))" \
			--range "$memfd_addr-$(printf '0x%x' $((memfd_addr + memfd_len)))" \
			--wait --json
		a=$(placement "$anon_addr") m=$(placement "$memfd_addr")
		echo "  $name: to node $node: numa_maps anon [$a] memfd [$m]"
		check "$name: anon on N$node" test "$a" = "N$node=$anon_pages"
		check "$name: memfd on N$node" test "$m" = "N$node=$memfd_pages"
		check_alive "$name, node $node"
	done
	memhog_stop
	last_count=$last
}

# quiet COMMAND...: its output to $tmp/out and $tmp/err
quiet() {
	"$@" >"$tmp/out" 2>"$tmp/err"
}

# need_nodes N...: exits 77 unless each node has memory (has_memory is a
# list like 0-3,5)
need_nodes() {
	local have n r

	have=$(tr ',' '\n' </sys/devices/system/node/has_memory 2>/dev/null |
		while IFS=- read -r a b; do seq "$a" "${b:-$a}"; done)
	for n in "$@"; do
		echo "$have" | grep -qx "$n" || {
			echo "SKIP: needs memory on nodes $*, has_memory is" \
				"'$(cat /sys/devices/system/node/has_memory 2>/dev/null)'"
			exit 77
		}
	done
}

# absent_node: the lowest node id this host does not have
absent_node() {
	local n=1

	while [ -e "/sys/devices/system/node/node$n" ]; do n=$((n + 1)); done
	echo "$n"
}

# as_nobody COMMAND...: the command as user nobody, group nogroup
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }

# wait_runs_as PID UID COMM: until PID has exec'd COMM as UID, without
# capabilities; 10 s at most.  A process started through setpriv (or
# taskset) is root until it execs: a request for it made sooner is refused
# ("pid N holds capabilities"), seen once in guest-tier-perm.
wait_runs_as() {
	for _ in $(seq 500); do
		[ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$3" ] &&
			[ "$(awk '/^Uid:/ { print $2 } /^CapEff:/ { print $2 }' "/proc/$1/status" 2>/dev/null |
				tr '\n' ' ')" = "$2 0000000000000000 " ] && return 0
		sleep 0.02
	done
	return 1
}

# The closing line, and the exit status: 0 when nothing failed.
summary() {
	echo "$passes passed, $fails failed"
	[ "$fails" -eq 0 ]
}

# memmigd_start SOCK [ARG...]: a real memmigd ($daemon, else $MEMMIGD, else
# the build tree's) in the foreground on SOCK, without libvirt or a config
# file, its log in $tmp/daemon.log, as $dpid; waits for its socket (fails
# the test without it).  memmigd_stop (also on exit) stops it.
dpid=
memmigd_stop() {
	[ -n "$dpid" ] && kill "$dpid" 2>/dev/null && wait "$dpid"
	dpid=
}
memmigd_start() {
	local sock=$1 bin=${daemon:-${MEMMIGD:-src/daemon/memmigd}}

	shift
	[ -x "$bin" ] || { echo "FAIL: $bin was not built"; exit 1; }
	"$bin" --foreground --socket "$sock" --no-libvirt --config /dev/null "$@" \
		2>"$tmp/daemon.log" &
	dpid=$!
	trap 'memmigd_stop; cleanup' EXIT
	for _ in $(seq 100); do
		[ -S "$sock" ] && return 0
		sleep 0.1
	done
	echo "FAIL: memmigd did not listen on $sock"
	cat "$tmp/daemon.log"
	exit 1
}
