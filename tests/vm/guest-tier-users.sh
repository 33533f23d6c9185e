#!/bin/bash
# In the multi-node tier: memmigd's tierings against its own users (issue
# 34), through a real memmigd of root's and its CLI run as nobody and as
# other uids (util-linux's setpriv; the socket in group nogroup, 65534,
# every client's gid here).  Tierings have to start, which needs two nodes
# with memory: the processes are idle sleeps, tiered between nodes 0 and 2
# at a 60 s interval, so that the engine has nothing to do meanwhile.
#   - nobody asking about root's tiering (tier_clear by pid and by id, tier)
#     gets the same answer, word for word but the number, as for a pid or
#     an id nobody tiers: no oracle of the pids root tiers;
#   - nobody's metrics have nobody's tiering and not root's; root's have both;
#   - ended tierings are kept per user: nobody's 20 set and clear leave
#     root's ended one readable by root;
#   - root's share of the tierings: 8 uids each tiering as many processes
#     as they may, root's tier_set still starts.
set -u
# shellcheck source=../testlib.sh
. "$(dirname "$0")/../testlib.sh"
cli=${MEMMIG_CLI:-memmig-cli}
daemon=${MEMMIGD:-memmigd}
fast=0 slow=2
tier_args=(--fast "$fast" --slow "$slow" --interval 60s)
NOBODY=65534
users=(65534 1001 1002 1003 1004 1005 1006 1007)

need_nodes "$fast" "$slow"
for p in setpriv.util-linux jq; do
	command -v "$p" >/dev/null || { echo "FAIL: no $p in the guest"; exit 1; }
done

pids=()
trap 'kill "${pids[@]}" 2>/dev/null; cleanup' EXIT
# A socket directory others may enter; the socket in their group.
dir=/tmp/memmigd-users
sock=$dir/memmigd.sock
mkdir -p "$dir" && chmod 755 "$dir"
check "memmigd starts" daemon_start
chgrp "$NOBODY" "$sock"

# as UID COMMAND...: COMMAND as UID, gid nogroup, no other group
as() {
	local u=$1

	shift
	setpriv.util-linux --reuid="$u" --regid="$NOBODY" --clear-groups "$@"
}
# mc_as UID ARGS...: memmig-cli on the socket as UID (root: 0)
mc_as() {
	local u=$1

	shift
	if [ "$u" = 0 ]; then mc "$@"; else as "$u" "$cli" --socket "$sock" "$@"; fi
}
# spawn UID: an idle process of UID's (root: 0), its pid in $spawned, once
# it runs as UID (wait_runs_as).  Not through as(): $! would be a subshell
# of root's.
spawn() {
	if [ "$1" = 0 ]; then
		sleep 1000 &
	else
		setpriv.util-linux --reuid="$1" --regid="$NOBODY" --clear-groups sleep 1000 &
	fi
	spawned=$!
	[ "$1" = 0 ] || wait_runs_as "$spawned" "$1" sleep
	pids+=("$spawned")
}
# tier_as UID PID: tiers PID as UID; the reply's (or the error's) JSON in
# $tmp/tier.json, the tiering's id in $tier_id (empty when refused)
tier_as() {
	mc_as "$1" tier --pid "$2" "${tier_args[@]}" --json >"$tmp/tier.json" 2>"$tmp/tier.err"
	tier_id=$(jq -r '.id // empty' "$tmp/tier.json")
}
# wait_ended UID ID: until tiering ID is ended, as UID sees it
wait_ended() {
	for _ in $(seq 100); do
		[ "$(mc_as "$1" tier --show "$2" --json | jq -r .state)" = ended ] && return 0
		sleep 0.1
	done
	return 1
}
# answer UID NUMBER ARGS...: memmig-cli's error and message (NUMBER, a
# pid or an id, written N in it) and exit code for ARGS --json as UID
answer() {
	local u=$1 n=$2 out rc

	shift 2
	out=$(mc_as "$u" "$@" --json 2>/dev/null)
	rc=$?
	echo "$(jq -c --arg n "$n" '{error, message: (.message // "" |
		gsub("\\b" + $n + "\\b"; "N"))}' <<<"$out") exit $rc"
}

spawn 0
rp=$spawned
spawn 0
untiered=$spawned
spawn "$NOBODY"
np=$spawned

# ---- root's tiering, and what nobody may learn of it ----
tier_as 0 "$rp"
rid=$tier_id
check "root tiers its process $rp ($(jq -c '{id, state, error, message}' "$tmp/tier.json"))" \
	test -n "$rid"
unused=$((rid + 1000))
cmp_answers() {
	local what=$1 a=$2 b=$3

	echo "  nobody's $what: [$a] and, not tiered, [$b]"
	check "nobody's $what: the same answer as for one not tiered" test "$a" = "$b"
	check "nobody's $what: ENOENT" grep -q '"error":"ENOENT"' <<<"$a"
}
cmp_answers "tier_clear of root's tiered pid" \
	"$(answer "$NOBODY" "$rp" tier --off --pid "$rp")" \
	"$(answer "$NOBODY" "$untiered" tier --off --pid "$untiered")"
cmp_answers "tier_clear of root's tiering by id" \
	"$(answer "$NOBODY" "$rid" tier --off --id "$rid")" \
	"$(answer "$NOBODY" "$unused" tier --off --id "$unused")"
cmp_answers "tier of root's tiering" \
	"$(answer "$NOBODY" "$rid" tier --show "$rid")" \
	"$(answer "$NOBODY" "$unused" tier --show "$unused")"
check "root's tiering still runs" \
	test "$(mc tier --show "$rid" --json | jq -r .state)" = running

# ---- the metrics: each client's own tierings, root's all ----
tier_as "$NOBODY" "$np"
nid=$tier_id
check "nobody tiers its process $np ($(jq -c '{id, state, error, message}' "$tmp/tier.json"))" \
	test -n "$nid"
mc_as "$NOBODY" stats --prometheus >"$tmp/nobody.prom" 2>&1
mc stats --prometheus >"$tmp/root.prom" 2>&1
grep '^memmigd_tier_fast_bytes\|^memmigd_tiers ' "$tmp/nobody.prom" | sed 's/^/  nobody: /'
grep '^memmigd_tier_fast_bytes\|^memmigd_tiers ' "$tmp/root.prom" | sed 's/^/  root: /'
check "root's metrics have root's tiering" grep -q "^memmigd_tier_fast_bytes{tier=\"$rid\"" "$tmp/root.prom"
check "root's metrics have nobody's tiering" grep -q "^memmigd_tier_fast_bytes{tier=\"$nid\"" "$tmp/root.prom"
check "nobody's metrics have nobody's tiering" grep -q "^memmigd_tier_fast_bytes{tier=\"$nid\"" "$tmp/nobody.prom"
check "nobody's metrics do not have root's tiering" \
	test "$(grep -c "tier=\"$rid\"\|pid=\"$rp\"" "$tmp/nobody.prom")" = 0
check "nobody's metrics count nobody's one tiering" grep -qx 'memmigd_tiers 1' "$tmp/nobody.prom"

# ---- ended tierings, kept per user ----
check "root ends its tiering" quiet mc tier --off --id "$rid" --json
check "root's tiering ended" wait_ended 0 "$rid"
mc_as "$NOBODY" tier --off --id "$nid" --json >/dev/null
wait_ended "$NOBODY" "$nid"
pairs=0
for _ in $(seq 20); do
	tier_as "$NOBODY" "$np"
	[ -n "$tier_id" ] || { echo "  nobody's tier_set: $(cat "$tmp/tier.json")"; break; }
	mc_as "$NOBODY" tier --off --id "$tier_id" --json >/dev/null
	wait_ended "$NOBODY" "$tier_id" || break
	pairs=$((pairs + 1))
done
check "nobody set and cleared its tiering 20 times ($pairs)" test "$pairs" = 20
keep=$(mc status --json | jq '.limits.keep_ended_tiers_per_user // 16')
n=$(mc_as "$NOBODY" tier --list --json | jq 'map(select(.state == "ended")) | length')
check "nobody lists its $keep newest ended tierings ($n)" test "$n" = "$keep"
mc tier --show "$rid" --json >"$tmp/root-ended.json"
echo "  root's ended tiering $rid after nobody's 20: $(jq -c '{id, state, result, error, message}' \
	"$tmp/root-ended.json")"
check "root's ended tiering is still listed" test "$(jq -r .state "$tmp/root-ended.json")" = ended

# ---- root's share: every user tiers what it may, root still can ----
mc status --json >"$tmp/status.json"
jq -c '.limits | with_entries(select(.key | test("tier")))' "$tmp/status.json" | sed 's/^/  limits: /'
per_user=$(jq '.limits.max_tiers_per_user' "$tmp/status.json")
users_max=$(jq '.limits.max_tiers - (.limits.root_tiers // 0)' "$tmp/status.json")
admitted=0 refused=0
for u in "${users[@]}"; do
	for _ in $(seq "$per_user"); do
		spawn "$u"
		tier_as "$u" "$spawned"
		if [ -n "$tier_id" ]; then
			admitted=$((admitted + 1))
		else
			refused=$((refused + 1))
			jq -r '"  uid '"$u"': " + .error + ": " + .message' "$tmp/tier.json" | head -n 1
		fi
	done
done
echo "  ${#users[@]} users, $per_user processes each: $admitted tiered, $refused refused"
check "the users tier $users_max processes together ($admitted)" test "$admitted" = "$users_max"
spawn 0
tier_as 0 "$spawned"
check "root's tier_set still starts ($(jq -c '{id, state, error, message}' "$tmp/tier.json"))" \
	test -n "$tier_id"

kill "${pids[@]}" 2>/dev/null
memmigd_stop
summary
