#!/bin/bash
# memmigd where io_uring_setup(2) is refused (a container's seccomp
# profile, sysctl kernel.io_uring_disabled): it stops at once with a
# status of 1 and says what to allow, instead of a bare "Operation not
# permitted" -- and leaves no socket behind.
set -u
daemon=${MEMMIGD:-src/daemon/memmigd}
helper=${NO_IO_URING:-tests/helpers/no-io-uring}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

"$helper" true
rc=$?
[ "$rc" -eq 77 ] && { echo "SKIP: no seccomp filters here"; exit 77; }
[ "$rc" -eq 0 ] || { echo "FAIL: $helper true: exit $rc"; exit 1; }

timeout 20 "$helper" "$daemon" --foreground --socket "$tmp/s.sock" --no-libvirt \
	--config /dev/null 2>"$tmp/err"
rc=$?
sed 's/^/  memmigd: /' "$tmp/err"
[ "$rc" -eq 124 ] && fail "memmigd did not stop without io_uring"
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "exit status $rc, want a failure"
grep -q 'io_uring_setup: Operation not permitted' "$tmp/err" || fail "no io_uring error"
grep -q 'kernel.io_uring_disabled' "$tmp/err" && grep -q 'seccomp' "$tmp/err" ||
	fail "the message does not say what to allow"
[ -e "$tmp/s.sock" ] && fail "the socket was left behind"
[ "$fails" -eq 0 ] && echo "memmigd without io_uring: a clear refusal"
exit $((fails > 0))
