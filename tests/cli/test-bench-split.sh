#!/bin/bash
# memmig-bench, the benchmarks' and the demo's own program, and memmig-cli
# without them: memmig-cli needs no libpmem and holds no benchmark code;
# `memmig-cli bench` and `demo` run the memmig-bench beside memmig-cli (in
# the build tree too, through libtool's wrapper or its real program) with
# the global options given, and say so when there is none.
set -u
cli=${MEMMIG_CLI:-src/cli/memmig-cli}
bench=${MEMMIG_BENCH:-src/bench/memmig-bench}
# shellcheck source=../testlib.sh
. "$(dirname "$0")/../testlib.sh"

not_in() { ! grep -q ${3:-} -- "$2" "$1"; }	# FILE PATTERN [-E]

command -v readelf >/dev/null && command -v nm >/dev/null ||
	{ echo "SKIP: readelf and nm are not installed (apt-get install binutils)"; exit 77; }
# The real ELF of a build-tree program: libtool leaves a wrapper script in
# its place and the program in .libs/ (a static build: the program).
real_elf() {
	if [ "$(head -c 4 "$1" | od -An -c | tr -d ' ')" = '177ELF' ]; then
		echo "$1"
	else
		echo "$(dirname "$1")/.libs/$(basename "$1")"
	fi
}
cli_elf=$(real_elf "$cli")
bench_elf=$(real_elf "$bench")
libs=$(cd "$(dirname "$cli")/../lib/.libs" 2>/dev/null && pwd)
check "memmig-cli built ($cli_elf)" test -x "$cli_elf"
check "memmig-bench built ($bench_elf)" test -x "$bench_elf"

# What memmig-cli links and holds.
readelf -d "$cli_elf" >"$tmp/needed"
check "memmig-cli's dynamic section read (or none: linked statically)" \
	grep -Eq 'NEEDED|no dynamic section' "$tmp/needed"
check "memmig-cli needs no libpmem" not_in "$tmp/needed" 'libpmem'
nm "$cli_elf" >"$tmp/cli.nm" 2>/dev/null
nm "$bench_elf" >"$tmp/bench.nm" 2>/dev/null
# The benchmarks' and their peers' functions: src/bench, src/minivmm.
code='\<(bench_[a-z_]*|copier_run|qmp_[a-z_]*|plot_[a-z_]*|minivmm_[a-z_]*)$'
check "memmig-bench holds the benchmarks" grep -Eq "$code" "$tmp/bench.nm"
check "memmig-cli holds no benchmark, QEMU peer or minivmm code" \
	not_in "$tmp/cli.nm" "$code" -E
check "memmig-cli does not load libpmem either" not_in <(strings "$cli_elf") 'libpmem'

# The alias, from the build tree: the wrapper, and the real program with
# the library path the wrapper would set.
check "memmig-cli bench runs memmig-bench" exit_is 0 "$cli" bench --help
check "... its usage" grep -q '^Usage: memmig-bench ' "$tmp/out"
check "memmig-cli demo runs memmig-bench demo" exit_is 0 "$cli" demo --help
check "... its usage" grep -q '^Usage: memmig-bench demo ' "$tmp/out"
check "memmig-cli help bench" exit_is 0 "$cli" help bench
check "... memmig-bench's usage" grep -q '^Usage: memmig-bench ' "$tmp/out"
check "memmig-cli bench copy runs" exit_is 0 "$cli" bench copy --sizes 4K --reps 3 --sample-ms 1 --pool 64M --json
check "... and measures" test "$(jq '[.hot[].results[] | .median_bytes_per_s > 0] | all' "$tmp/out")" = true
# Its tables fit 100 columns (the JSON keeps every column): a table's lines
# begin with a space, prose with a letter; the CPU's line and thresholds too.
wide() { sed 's/±/+/g' "$1" | awk -v w=100 '(/^ / || /^(memmig bench copy|thresholds):/) && length($0) > w' ; }
check "bench copy text" exit_is 0 "$cli" bench copy --sizes 4K,3M --reps 3 --sample-ms 1 --pool 64M
check "... a table per mode" test "$(grep -c '^ *size ' "$tmp/out")" -ge 2
check "... every table line within 100 columns" test -z "$(wide "$tmp/out")"
wide "$tmp/out" | head -n 2
check "bench copy --pmem text" exit_is 0 "$cli" bench copy --pmem --sizes 4K --reps 3
check "... its table within 100 columns" test -z "$(wide "$tmp/out")"
check "demo text" exit_is 0 "$cli" demo --mem 32M --migrations 2
check "... its table and notes within 100 columns" \
	test -z "$(sed 's/±/+/g' "$tmp/out" | awk 'length($0) > 100')"
if [ "$cli_elf" != "$cli" ]; then
	check "the real memmig-cli finds the real memmig-bench" \
		exit_is 0 env LD_LIBRARY_PATH="$libs" "$cli_elf" demo --help
	check "... its usage" grep -q '^Usage: memmig-bench demo ' "$tmp/out"
fi
check "memmig-cli bench: its exit codes" exit_is 2 "$cli" bench nope
check "... memmig-bench says why" grep -q "memmig-bench: error: unknown command 'nope'" "$tmp/err"
check "memmig-bench --version" exit_is 0 "$bench" --version
check "... names itself" grep -q '^memmig-bench ' "$tmp/out"

# What memmig-bench is given: a memmig-cli with a stand-in beside it that
# prints its arguments and MEMMIG_LOG.
mkdir -p "$tmp/bin" "$tmp/alone"
cp "$cli_elf" "$tmp/bin/memmig-cli"
cp "$cli_elf" "$tmp/alone/memmig-cli"
printf '#!/bin/sh\necho "$*"\necho "log=${MEMMIG_LOG:-}"\n' >"$tmp/bin/memmig-bench"
chmod 755 "$tmp/bin/memmig-bench"
run() { env LD_LIBRARY_PATH="$libs" "$@"; }
check "the alias passes the global options" \
	exit_is 0 run "$tmp/bin/memmig-cli" -s /x.sock -l -q bench copy --sizes 4K
check "... --socket, --local, --quiet, then the command" \
	test "$(head -1 "$tmp/out")" = "--socket /x.sock --local --quiet copy --sizes 4K"
check "demo's alias" exit_is 0 run "$tmp/bin/memmig-cli" demo --mem 16M
check "... demo and its options" test "$(head -1 "$tmp/out")" = "demo --mem 16M"
check "MEMMIG_SOCKET passes" exit_is 0 env MEMMIG_SOCKET=/y.sock LD_LIBRARY_PATH="$libs" \
	"$tmp/bin/memmig-cli" bench live
check "... as --socket" test "$(head -1 "$tmp/out")" = "--socket /y.sock live"
check "-v passes" exit_is 0 run "$tmp/bin/memmig-cli" -v bench copy
check "... as MEMMIG_LOG=debug" grep -qx 'log=debug' "$tmp/out"

# None beside it: bindir's, or an error that says where it looked.
if run "$tmp/alone/memmig-cli" bench --help >"$tmp/out" 2>"$tmp/err"; then
	echo "  (an installed memmig-bench answered: $(head -1 "$tmp/out"))"
	check "an installed memmig-bench ran" grep -q '^Usage: memmig-bench ' "$tmp/out"
else
	check "no memmig-bench: exit 1" exit_is 1 run "$tmp/alone/memmig-cli" bench --help
	check "... says it is not installed, and where it looked" \
		grep -q 'memmig-bench is not installed (not beside memmig-cli, nor in /' "$tmp/err"
	check "... --json: the error object" exit_is 1 run "$tmp/alone/memmig-cli" demo --json
	check "... ENOENT" test "$(jq -r .error "$tmp/out")" = ENOENT
fi
summary
