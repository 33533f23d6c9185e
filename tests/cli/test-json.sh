#!/bin/bash
# memmig-cli --json against docs/json.md, the schema itself: the tables of
# that page are read here, and every object the real commands print -- a
# move in-process, through a real memmigd on a real socket, with and
# without --wait, by pid and by domain, status, jobs, cancel, nodes (both
# ways), domains, memmigd's status and events, errors, demo, bench live and
# bench move -- must have exactly the keys documented there, with their
# types; every memmig-bench sub-command's keys follow its units (seconds in
# _s, bytes per second, bytes).  Floats have at most 6
# significant digits; errors under --json are the error object on stdout
# with the exit code unchanged; the jobs table shows the JSON's figures.
# memhog checks its bytes before and after the moves.
set -u
cli=${MEMMIG_CLI:-src/cli/memmig-cli}
daemon=${MEMMIGD:-src/daemon/memmigd}
memhog=${MEMHOG:-tests/helpers/memhog}
doc=$(dirname "$0")/../../docs/json.md
# shellcheck source=../testlib.sh
. "$(dirname "$0")/../testlib.sh"

command -v jq >/dev/null || { echo "SKIP: jq is not installed (apt-get install jq)"; exit 77; }
[ -x "$daemon" ] || { echo "FAIL: $daemon was not built"; exit 1; }
[ -r "$doc" ] || { echo "FAIL: no $doc"; exit 1; }

# The schema: {"job": {"id": "integer|null", ...}, "report": {...}, ...}
# from the rows "| `key` | type | ..." under "## Object: NAME".
awk '/^## Object: / { obj = substr($0, 12) }
	/^\| `/ { line = $0; gsub(/\\\|/, "/", line); split(line, f, "|")
		  key = f[2]; type = f[3]; gsub(/[ `]/, "", key); gsub(/ /, "", type)
		  gsub("/", "|", type); print obj "\t" key "\t" type }' "$doc" |
	jq -Rn '[inputs | split("\t")] |
		reduce .[] as $r ({}; .[$r[0]][$r[1]] = $r[2])' >"$tmp/schema.json"
check "schema read from docs/json.md" \
	test "$(jq '[.job, .report, .["node row"], .["failed range"], .error, .nodes,
		     .node, .["dax device"], .domain, .["last job"]] |
		    map(length) | all(. >= 2)' "$tmp/schema.json")" = true

# problems(NAME) and job_problems: what is wrong with an object, as a
# list of lines; [] when it matches the schema.
cat >"$tmp/check.jq" <<'EOF'
def is($t): if $t == "integer" then type == "number" and . == floor
	elif $t == "number" then type == "number" else type == $t end;
def problems($name): . as $o | $schema[0][$name] as $k |
	[(($k | keys) - ($o | keys))[] | select($k[.] | split("|") | index("absent") | not) |
	 "\($name): no key \(.)"] +
	[(($o | keys) - ($k | keys))[] | "\($name): undocumented key \(.)"] +
	[$k | to_entries[] | . as $e | select($o | has($e.key)) |
	 select([$e.value | split("|")[] as $t | $o[$e.key] | is($t)] | any | not) |
	 "\($name).\($e.key): \($o[$e.key] | tojson) is not \($e.value)"];
def report_problems: problems("report") +
	([.nodes[]? | problems("node row")] | add // []) +
	([.failed_ranges[]? | problems("failed range")] | add // []) +
	[.errno_pages | to_entries[]? | select(.value | is("integer") | not) |
	 "errno_pages.\(.key) is not an integer"];
def job_problems: problems("job") +
	(if (.report | type) == "object" then .report | report_problems else [] end);
def error_problems: (del(.job) | problems("error")) +
	(if has("job") then .job | job_problems else [] end);
def nodes_problems: problems("nodes") +
	([.nodes[]? | problems("node") +
	  [(.cpus[]?, (.distances | to_entries[]? | .value)) |
	   select(is("integer") | not) | "node: \(tojson) is not an integer"]] | add // []) +
	([.dax[]? | problems("dax device")] | add // []);
def status_problems: problems("daemon status") +
	[(.jobs, .limits) | to_entries[] | select(.value | is("integer") | not) |
	 "daemon status: \(.key): \(.value | tojson) is not an integer"];
def event_problems: problems("event") +
	(if .event == "job" then .job | job_problems else [] end);
def stats_problems: [to_entries[] | .value | problems("metric") +
	([.samples[]? | problems("metric sample")] | add // [])] | add // [];
def domain_problems: problems("domain") +
	(if (.last_job | type) == "object" then .last_job | problems("last job") else [] end);
def demo_problems: problems("demo") +
	([.migrations[] | problems("demo migration") + (.pause | problems("demo pause"))] |
	 add // []);
def move_problems: problems("bench move") +
	([.cases[] | problems("bench move case")] | add // []);
# docs/json.md's units in any object: no key of the old benchmark names
# (seconds, GB/s, ms, MiB), durations (_s) numbers or null, rates in bytes
# per second integers.
def convention_problems:
	[.. | objects | to_entries[] |
	 if (.key | test("seconds|gbps|gbs|_ms$|^ms$|mib|kib")) then
		"key \(.key): durations end in _s, rates in bytes_per_s, sizes are bytes"
	 elif (.key | endswith("bytes_per_s")) and (.value | type == "number" and . == floor | not) then
		"\(.key): \(.value | tojson) is not an integer of bytes per second"
	 elif (.key | endswith("_s")) and (.value | type == "number" or type == "null" | not) then
		"\(.key): \(.value | tojson) is not a number of seconds"
	 else empty end];
def live_problems: problems("bench live") +
	([.cases[] | problems("bench live case") + (.memmig | problems("bench live memmig")) +
	  (if has("qemu") then .qemu | problems("bench live qemu") else [] end)] | add // []);
def where_problems: problems("where") + ([.nodes[] | problems("where node")] | add // []) +
	([.mappings[] | problems("where mapping") +
	  ([.nodes[] | problems("where node")] | add // [])] | add // []);
def dry_problems: problems("dry run") + ([.nodes[] | problems("dry run node")] | add // []) +
	([.kinds[] | problems("dry run kind")] | add // []);
EOF
# conforms WHAT FILTER: the filter (job_problems, ...) on $tmp/out is []
conforms() {
	local p
	p=$(jq -r --slurpfile schema "$tmp/schema.json" "$(cat "$tmp/check.jq") $2 | .[]" \
		"$tmp/out" 2>&1)
	[ -z "$p" ] && return 0
	echo "  $1: $p"
	return 1
}
# Every float in the output: at most 6 significant digits.
short_floats() {
	! grep -oE -- '-?[0-9]+\.[0-9]+([eE][-+]?[0-9]+)?|-?[0-9]+[eE][-+]?[0-9]+' "$tmp/out" |
		sed -E 's/[eE].*//; s/[-.]//g; s/^0+//' | grep -qE '^[0-9]{7,}$'
}
# json_error WHAT CODE ERRNO-NAME COMMAND...: exits CODE, prints one error
# object naming ERRNO-NAME on stdout and prose on stderr
json_error() {
	local what=$1 code=$2 name=$3
	shift 3
	check "$what: exit $code" exit_is "$code" "$@"
	check "$what: one JSON value" test "$(jq -s length "$tmp/out")" -eq 1
	check "$what: the error object" conforms "$what" error_problems
	check "$what: $name" test "$(jq -r .error "$tmp/out")" = "$name"
	check "$what: errno matches" test "$(jq .errno "$tmp/out")" -gt 0
	check "$what: prose on stderr" test -s "$tmp/err"
}

chmod 755 "$tmp"
sock=$tmp/memmigd.sock
memmigd_start "$sock"
mc() { "$cli" --socket "$sock" "$@"; }
check "memmigd listens" test -S "$sock"

memhog_start 32 8
check_alive "before the moves"

# The three paths of move --json: one shape.
check "in-process move" exit_is 0 "$cli" --local move --pid "$hog" --to-node 0 --json
check "in-process: the job object" conforms "in-process" job_problems
check "in-process: via local, no id" test "$(jq -c '[.via, .id, .state, .result]' "$tmp/out")" = '["local",null,"done","OK"]'
check "in-process: a report" test "$(jq -r .report.result "$tmp/out")" = OK
check "in-process: short floats" short_floats
jq -S 'keys' "$tmp/out" >"$tmp/keys.local"
# where and move --dry-run (read-only, in-process): their own objects
check "where" exit_is 0 "$cli" where --pid "$hog" --json
check "where: the where object" conforms "where" where_problems
check "dry run" exit_is 0 "$cli" move --pid "$hog" --to-node 0 --dry-run --json
check "dry run: the dry run object" conforms "dry run" dry_problems

check "move --wait" exit_is 0 mc move --pid "$hog" --to-node 0 --wait --json
check "--wait: the job object" conforms "--wait" job_problems
check "--wait: via memmigd, ended" test "$(jq -c '[.via, .state, .result]' "$tmp/out")" = '["memmigd","done","OK"]'
check "--wait: short floats" short_floats
check "--wait: the keys of in-process" cmp -s "$tmp/keys.local" <(jq -S keys "$tmp/out")
check "--wait: rate is bytes_moved / elapsed_s" \
	test "$(jq '((.rate - (if .elapsed_s > 0 then .bytes_moved / .elapsed_s else 0 end)) | fabs) < 1e-5 * .rate + 1' "$tmp/out")" = true
job=$(jq .id "$tmp/out")

check "move without --wait" exit_is 0 mc move --pid "$hog" --to-node 0 --json
check "no --wait: the job object" conforms "no --wait" job_problems
check "no --wait: the keys of in-process" cmp -s "$tmp/keys.local" <(jq -S keys "$tmp/out")
job2=$(jq .id "$tmp/out")
for _ in $(seq 100); do
	mc status "$job2" --json >"$tmp/out" 2>/dev/null
	[ "$(jq -r .state "$tmp/out")" = done ] && break
	sleep 0.1
done
check "status: the job object" conforms "status" job_problems
check "status: done" test "$(jq -r '.state + " " + .result' "$tmp/out")" = "done OK"
check "status: short floats" short_floats

check "jobs --json" exit_is 0 mc jobs --json
check "jobs: an array of jobs" conforms "jobs" '[.[] | job_problems] | add'
check "jobs: both" test "$(jq "[.[] | select(.id == $job or .id == $job2)] | length" "$tmp/out")" -eq 2
check "jobs: short floats" short_floats
# The table shows the JSON's own figures: GB/s is rate, moved is bytes_moved.
jq -r ".[] | select(.id == $job) | \"\(.rate / 1e9 * 100 | round / 100) \(.bytes_moved)\"" \
	"$tmp/out" >"$tmp/want"
check "jobs table" exit_is 0 mc jobs
check "jobs table: a moved column" grep -qE '^ *job +state .* done +moved +GB/s' "$tmp/out"
read -r rate moved <"$tmp/want"
row=$(awk -v j="$job" '$1 == j' "$tmp/out")
check "jobs table: the JSON's rate" test "$(echo "$row" | awk '{ print $(NF - 3) + 0 }')" = "$(awk -v r="$rate" 'BEGIN { print r + 0 }')"
[ "$moved" -eq 0 ] && check "jobs table: the JSON's bytes moved" grep -q ' 0 B ' <<<"$row"

# A move by domain name: the same job object, its domain named; the
# domain's own object after.
check "register a domain" exit_is 0 mc domains register --name json-vm --pid "$hog" --nodeset 0
check "move --domain" exit_is 0 mc move --domain json-vm --to-node 0 --wait --json
check "--domain: the job object" conforms "--domain" job_problems
check "--domain: the domain named" test "$(jq -r .domain "$tmp/out")" = json-vm
check "domains --json" exit_is 0 mc domains --json
check "domains: the domain objects" conforms "domains" '[.[] | domain_problems] | add // []'
# source: one of the values its row in docs/json.md names
sources=$(awk -F'|' '/^\| `source` \|/ { print $5 }' "$doc" | grep -o '`[a-z]*`' | tr -d '`')
check "domains: source documented" grep -qx hook <<<"$sources"
check "domains: the source a documented value" test "$(jq -r '.[] | .source' "$tmp/out" |
	grep -cvxF "$sources")" -eq 0
check "domains: its last job" test "$(jq -c '.[] | select(.name == "json-vm") | .last_job | [.to_node, .result]' "$tmp/out")" = '[0,"OK"]'

# stats: the metric families, each as documented
check "stats --json" exit_is 0 mc stats --json
check "stats: the metric objects" conforms "stats" stats_problems
check "stats: some families" test "$(jq length "$tmp/out")" -gt 5
check "stats: short floats" short_floats

# nodes: one shape in-process and through memmigd.
check "nodes in-process" exit_is 0 "$cli" --local nodes --json
check "nodes in-process: the nodes object" conforms "nodes in-process" nodes_problems
jq -S '[paths | map(if type == "number" then 0 else . end)] | unique' "$tmp/out" >"$tmp/paths.local"
check "nodes via memmigd" exit_is 0 mc nodes --json
check "nodes via memmigd: the nodes object" conforms "nodes via memmigd" nodes_problems
check "nodes: the same keys both ways" cmp -s "$tmp/paths.local" \
	<(jq -S '[paths | map(if type == "number" then 0 else . end)] | unique' "$tmp/out")

# memmigd itself, and its events: a job's events carry the job object.
check "daemon status" exit_is 0 mc status --json
check "daemon status: the object" conforms "daemon status" status_problems
check "daemon status: short floats" short_floats
timeout 30 "$cli" --socket "$sock" events --json --count 2 >"$tmp/events" 2>/dev/null &
evpid=$!
for _ in $(seq 50); do
	[ "$(mc status --json 2>/dev/null | jq .subscribers)" = 1 ] && break
	sleep 0.1
done
check "a move for the events" exit_is 0 mc move --pid "$hog" --to-node 0 --wait
wait "$evpid"
cp "$tmp/events" "$tmp/out"
check "events: two" test "$(jq -s length "$tmp/out")" -eq 2
check "events: the event objects" conforms "events" '[.] | map(event_problems) | add'
check "events: the job's" test "$(jq -r .event "$tmp/out" | sort -u)" = job
check "events: short floats" short_floats

# Cancelling a job that had ended: says so, and fails.
json_error "cancel of an ended job" 1 EALREADY mc cancel "$job" --json
check "cancel: the job as it ended" test "$(jq -r .job.state "$tmp/out")" = done
check "cancel in prose" exit_is 1 mc cancel "$job"
check "cancel says it had ended" grep -q "had already ended (done, OK)" "$tmp/err"

# Errors under --json.
json_error "no such node" 1 ENOENT mc move --pid "$hog" --to-node 1000 --wait --json
json_error "no such job" 1 ESRCH mc status 999999 --json
json_error "bad option" 2 EINVAL mc move --pid "$hog" --to-node 0 --bogus --json
json_error "--json before a bad value" 2 EINVAL mc move --json --pid "$hog" --to-node x
json_error "no memmigd" 3 ENOENT "$cli" --socket "$tmp/none" jobs --json
json_error "in-process, no such pid" 1 ESRCH "$cli" --local move --pid 999999999 --to-node 0 --json
check "no JSON without --json" exit_is 1 mc status 999999
check "  (stdout empty)" test ! -s "$tmp/out"

# The live migration's front ends, in-process: demo and bench live, through
# memmig-cli (which runs memmig-bench) and memmig-bench itself.
bench=${MEMMIG_BENCH:-src/bench/memmig-bench}
check "demo --json" exit_is 0 "$cli" demo --no-kvm --mem 16M --migrations 2 --nodes-only --json
check "demo: the demo objects" conforms "demo" demo_problems
check "demo: units as docs/json.md's" conforms "demo" convention_problems
check "demo: short floats" short_floats
check "memmig-bench demo --json" exit_is 0 "$bench" demo --no-kvm --mem 16M --migrations 1 --nodes-only --json
check "memmig-bench demo: the demo objects" conforms "memmig-bench demo" demo_problems
check "bench live --json" exit_is 0 "$cli" bench live --sizes 16M --reps 1 --no-qemu --busy --json
check "bench live: the bench live objects" conforms "bench live" live_problems
check "bench live: units as docs/json.md's" conforms "bench live" convention_problems
check "bench live: short floats" short_floats
# Every other benchmark at its smallest: the same units.
check "bench copy --json" exit_is 0 "$bench" copy --sizes 4K,3M --reps 3 --sample-ms 1 --pool 64M --json
check "bench copy: units as docs/json.md's" conforms "bench copy" convention_problems
check "bench copy: rates in bytes per second" \
	test "$(jq '[.hot[].results[] | .median_bytes_per_s > 1e6] | all' "$tmp/out")" = true
check "bench copy: short floats" short_floats
check "bench copy --pmem --json" exit_is 0 "$bench" copy --pmem --sizes 4K --reps 3 --json
check "bench copy --pmem: units as docs/json.md's" conforms "bench copy --pmem" convention_problems
check "bench migrate --json" exit_is 0 "$bench" migrate --size 64M --reps 1 --json
check "bench migrate: units as docs/json.md's" conforms "bench migrate" convention_problems
check "bench migrate: the ceiling a rate" \
	test "$(jq '.ceiling_1t_bytes_per_s > 1e6' "$tmp/out")" = true
check "bench migrate: short floats" short_floats
if "$bench" desc --size 64M --reps 1 --json >"$tmp/out" 2>"$tmp/err" ||
	! grep -q 'slow path is forced' "$tmp/err"; then
	check "bench desc --json" exit_is 0 "$bench" desc --size 64M --reps 1 --json
	check "bench desc: units as docs/json.md's" conforms "bench desc" convention_problems
	check "bench desc: durations in seconds" \
		test "$(jq '[.results[] | .template_s > 0 and .template_s < 60] | all' "$tmp/out")" = true
	check "bench desc: short floats" short_floats
fi
# bench move needs two nodes (the multi-node tier runs it whole): where it
# runs, its objects; else its error object.
if "$bench" move --sizes 64M --reps 1 --json >"$tmp/out" 2>"$tmp/err"; then
	check "bench move: the bench move objects" conforms "bench move" move_problems
	check "bench move: units as docs/json.md's" conforms "bench move" convention_problems
else
	check "bench move on one node: the error object" conforms "bench move" error_problems
fi

check_alive "after the moves"
memhog_stop
memmigd_stop
summary
