#!/bin/bash
# memmig-cli's pictures (--plot FILE, --plot-data FILE): bench copy, bench
# copy --pmem and demo draw valid SVG and PNG with their series named; a bad
# name, a failing or missing gnuplot give a clear error and leave no file.
set -u
cli=${MEMMIG_CLI:-src/cli/memmig-cli}
# shellcheck source=../testlib.sh
. "$(dirname "$0")/../testlib.sh"

small=(bench copy --sizes 64,4K --reps 3 --sample-ms 1 --pool 8M)
export TMPDIR=$tmp/tmpdir	# plot.c's private directories: none may stay
mkdir "$TMPDIR"

# nothing_at PATH: no file there, and no temporary one beside it
nothing_at() {
	! compgen -G "$1*" >/dev/null
}

# --- bad names: refused before anything is measured ---
check "--plot .jpg refused" exit_is 2 "$cli" "${small[@]}" --plot "$tmp/x.jpg"
check "--plot .jpg message" grep -q "the name must end in .svg or .png" "$tmp/err"
check "--plot .jpg: no file" nothing_at "$tmp/x.jpg"
check "--plot in a missing directory" exit_is 2 "$cli" "${small[@]}" --plot "$tmp/no/x.png"
check "missing directory message" grep -q "cannot write in $tmp/no: No such file" "$tmp/err"
mkdir "$tmp/dir.svg"
check "--plot a directory" exit_is 2 "$cli" "${small[@]}" --plot "$tmp/dir.svg"
check "directory message" grep -q "is a directory" "$tmp/err"
check "--plot-data in a missing directory" exit_is 2 "$cli" "${small[@]}" \
	--plot-data "$tmp/no/x.dat"
check "--plot with --calibrate" exit_is 2 "$cli" bench copy --calibrate --plot "$tmp/c.svg"
check "demo --plot .pdf refused" exit_is 2 "$cli" demo --plot "$tmp/d.pdf"

# --- no gnuplot on the PATH: said, with the package; --plot-data still works ---
gp=$(command -v gnuplot || true)
nogp=$tmp/nognuplot
mkdir "$nogp"
for f in /usr/bin/* /bin/*; do
	case ${f##*/} in gnuplot*) ;; *) [ -e "$nogp/${f##*/}" ] || ln -s "$f" "$nogp/";; esac
done
check "no gnuplot: fails" exit_is 1 env PATH="$nogp" "$cli" "${small[@]}" --plot "$tmp/g.png"
check "no gnuplot: names the package" \
	grep -q "gnuplot, which is not on the PATH (apt-get install gnuplot-nox)" "$tmp/err"
check "no gnuplot: offers --plot-data" grep -q -- "--plot-data FILE" "$tmp/err"
check "no gnuplot: before measuring" test ! -s "$tmp/out"
check "no gnuplot: no file" nothing_at "$tmp/g.png"
check "--plot-data without gnuplot" exit_is 0 env PATH="$nogp" "$cli" "${small[@]}" \
	--plot-data "$tmp/g.dat"
check "data names glibc" grep -q '^# index .*: glibc;' "$tmp/g.dat"
check "data names memmig" grep -q '^# index .*: memmig;' "$tmp/g.dat"
check "data: 2 sizes a series" \
	test "$(awk '/^# index 0,/ { on = 1; next } on && NF == 2 { n++ } on && !NF { exit } END { print n }' \
		"$tmp/g.dat")" -eq 2

# --- a gnuplot that fails half-way: its words shown, no partial picture ---
mkdir "$tmp/badgp"
cat >"$tmp/badgp/gnuplot" <<'EOF'
#!/bin/sh
cat >/dev/null
echo "line 7: simulated failure" >&2
echo partial >picture.svg
exit 1
EOF
chmod +x "$tmp/badgp/gnuplot"
check "failing gnuplot" exit_is 1 env PATH="$tmp/badgp:$PATH" "$cli" "${small[@]}" \
	--plot "$tmp/b.svg"
check "failing gnuplot: said" grep -q "gnuplot failed" "$tmp/err"
check "failing gnuplot: its words" grep -q "gnuplot: line 7: simulated failure" "$tmp/err"
check "failing gnuplot: no file" nothing_at "$tmp/b.svg"
check "failing gnuplot: table still printed" grep -q '^hot copies' "$tmp/out"

if [ -z "$gp" ]; then
	check "no temporary directory left" test -z "$(ls -A "$TMPDIR")"
	echo "SKIP: gnuplot is not installed (apt-get install gnuplot-nox): no picture drawn"
	summary >/dev/null || { echo "$passes passed, $fails failed"; exit 1; }
	exit 77
fi

# --- pictures ---
# is_svg FILE: well-formed XML with an <svg> root
is_svg() {
	if command -v xmllint >/dev/null; then
		xmllint --noout "$1" || return 1
	fi
	grep -q '<svg' "$1"
}
# is_png FILE: the PNG signature, and file(1) agrees
is_png() {
	[ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || return 1
	! command -v file >/dev/null || file "$1" | grep -q 'PNG image data'
}
today=$(date -u +%Y-%m-%d)

check "bench copy --plot svg" exit_is 0 "$cli" "${small[@]}" --plot "$tmp/copy.svg"
check "svg valid" is_svg "$tmp/copy.svg"
for name in memmig memmig-cold glibc "hot copies" "cold copies" "bandwidth (GB/s" \
	"copy size (bytes, log scale)" "64 B" "4 KiB" "memmig bench copy on" "$today"; do
	check "svg names '$name'" grep -qF "$name" "$tmp/copy.svg"
done
check "svg mode 0644" test "$(stat -c %a "$tmp/copy.svg")" = 644
check "no temporary file beside it" test "$(compgen -G "$tmp/copy.svg*")" = "$tmp/copy.svg"

check "bench copy --plot png --plot-data" exit_is 0 "$cli" "${small[@]}" --hot \
	--plot "$tmp/copy.PNG" --plot-data "$tmp/copy.dat"
check "png valid" is_png "$tmp/copy.PNG"
check "png's data names memmig" grep -q ': memmig;' "$tmp/copy.dat"
check "--hot: one panel" sh -c "! grep -q 'cold copies' '$tmp/copy.dat'"

# Names gnuplot or a shell would take for their own words: a picture name,
# and a tier directory, which names series in demo's legend.
odd="$tmp/we\"ird \`touch pwned\` \$(touch pwned) ' name.svg"
check "odd name" exit_is 0 "$cli" "${small[@]}" --hot --plot "$odd"
check "odd name: written as given" is_svg "$odd"
check "odd name: nothing run" test -z "$(find "$TMPDIR" . -maxdepth 2 -name pwned)"

check "--json and --plot" exit_is 0 "$cli" "${small[@]}" --json --plot "$tmp/j.svg"
if command -v jq >/dev/null; then
	check "--json stdout still JSON" jq -e .hot "$tmp/out" >/dev/null
fi
check "--json picture" is_svg "$tmp/j.svg"

check "an old picture replaced" exit_is 0 "$cli" "${small[@]}" --hot --plot "$tmp/copy.svg"
check "replaced picture valid" is_svg "$tmp/copy.svg"

check "bench copy --pmem --plot" exit_is 0 "$cli" bench copy --pmem --sizes 4K,64K \
	--reps 3 --pool 8M --plot "$tmp/pmem.svg"
check "pmem svg valid" is_svg "$tmp/pmem.svg"
for name in memmig-pmem memmig-mc memmig-mc-batch "pmem copies, cold"; do
	check "pmem svg names '$name'" grep -qF "$name" "$tmp/pmem.svg"
done

check "demo --plot" exit_is 0 "$cli" demo --mem 16M --migrations 2 --nodes-only \
	--plot "$tmp/demo.svg" --plot-data "$tmp/demo.dat"
check "demo svg valid" is_svg "$tmp/demo.svg"
mkdir "$tmp/tier \`touch pwned\` 'q\""
check "demo --plot, odd tier" exit_is 0 "$cli" demo --mem 16M --migrations 2 \
	--file-tier "$tmp/tier \`touch pwned\` 'q\"" --plot "$tmp/tier.svg" --plot-data "$tmp/tier.dat"
check "odd tier: named as given" grep -qF "#2 to $tmp/tier \`touch pwned\` 'q\"" "$tmp/tier.dat"
check "odd tier: in the legend (shortened)" grep -qF "pwned\` 'q\"" "$tmp/tier.svg"
check "odd tier: nothing run" test -z "$(find "$TMPDIR" . -maxdepth 2 -name pwned)"
for name in "#1 to node" "#2 to node" stop harvest copy swap other "budget 5 ms" \
	"bytes copied (MiB, log scale)" "duration (ms, log scale)" "pause (ms)"; do
	check "demo svg names '$name'" grep -qF "$name" "$tmp/demo.svg"
done
check "demo data: the pause's rest" grep -q '^# index .*: other;' "$tmp/demo.dat"

check "bench live --plot" exit_is 0 "$cli" bench live --sizes 16M --reps 1 --no-qemu \
	--plot "$tmp/live.svg"
check "live svg valid" is_svg "$tmp/live.svg"
for name in "memmig pause" "budget 5 ms" "16 MiB idle" "16 MiB writing" "one raw copy" \
	stop swap "pause (ms, log scale)"; do
	check "live svg names '$name'" grep -qF "$name" "$tmp/live.svg"
done

check "no temporary directory left" test -z "$(ls -A "$TMPDIR")"
summary
