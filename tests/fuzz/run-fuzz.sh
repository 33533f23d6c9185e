#!/bin/bash
# Runs the request parser's libFuzzer target for FUZZ_SECONDS (default 60)
# from the seed corpus; any crash, sanitizer report, leak or failed round
# trip fails the test and leaves the input in the log.
set -u
fuzzer=${FUZZ_PROTO:-tests/fuzz/fuzz-proto}
corpus=${FUZZ_CORPUS:-$(dirname "$0")/corpus}
seconds=${FUZZ_SECONDS:-60}
# The protocol's ops and members, which random bytes would seldom spell.
dict=${FUZZ_DICT:-$(dirname "$0")/proto.dict}
[ -x "$fuzzer" ] || { echo "SKIP: no libFuzzer target: configure found no clang with -fsanitize=fuzzer (apt-get install clang libclang-rt-14-dev)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# New inputs go to a scratch copy: the seed corpus in git stays small.
cp -r "$corpus" "$tmp/corpus"
"$fuzzer" -max_total_time="$seconds" -max_len=70000 -timeout=10 -rss_limit_mb=2048 \
	-print_final_stats=1 -artifact_prefix="$tmp/" -dict="$dict" "$tmp/corpus" >"$tmp/log" 2>&1
rc=$?
grep -E '^(stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb)|^#[0-9]+.*DONE|ERROR|SUMMARY' "$tmp/log"
if [ "$rc" -ne 0 ]; then
	echo "FAIL: the fuzzer exited $rc"
	tail -n 40 "$tmp/log"
	for f in "$tmp"/crash-* "$tmp"/leak-* "$tmp"/timeout-* "$tmp"/oom-*; do
		[ -f "$f" ] && { echo "input $f:"; od -c "$f" | head -n 20; }
	done
	exit 1
fi
echo "fuzzed $seconds s: no crash"
