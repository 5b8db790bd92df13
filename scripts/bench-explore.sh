#!/usr/bin/env bash
# bench-explore.sh BASE [ROUNDS]: the checker's speed per core, this work tree against commit BASE, side by
# side in one run. It checks BASE out in a temporary git worktree, copies this tree's
# check/bench_explore_test.go into it, with check/bench_helpers_test.go when BASE lacks its inTest
# (BenchmarkExplore uses only what package check had at e4ea55a besides), builds
# both packages' test binaries, and runs BenchmarkExplore on one core (-test.cpu=1, the same seeds)
# alternately — base then head, head then base, and so on for ROUNDS rounds (default 5), so that the load
# of a shared machine falls on both alike. It prints, per row, the median interleavings per second of each
# side, by the wall clock and per CPU-second (the process's user and system time, which the others' load
# disturbs less), and the median of the rounds' ratios (head over base, measured one right after the other).
# Everything it makes is in a temporary directory, removed on exit with the worktree.
#
# GOZK_SEND_BUFFER=BYTES builds head against a temporary copy of go-zookeeper whose zk.Connect allocates
# BYTES for its send buffer instead of 1.5 MiB: a what-if that measures what that allocation costs the wire
# rows (docs/checker.md), never a build to ship — go-zookeeper v1.0.4 allocates the buffer before any
# option runs, so a user's build cannot avoid it.
set -euo pipefail

base=${1:?usage: scripts/bench-explore.sh BASE [ROUNDS]   e.g. scripts/bench-explore.sh e4ea55a 5}
rounds=${2:-5}
go=${GO:-go}
bench='^BenchmarkExplore$'

repo=$(git rev-parse --show-toplevel)
cd "$repo"
base_commit=$(git rev-parse --verify --quiet "$base^{commit}") || { echo "bench-explore: $base is not a commit" >&2; exit 2; }
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "bench-explore: ROUNDS must be a positive number, not $rounds" >&2; exit 2; }
[[ -z ${GOZK_SEND_BUFFER:-} || $GOZK_SEND_BUFFER =~ ^[1-9][0-9]*$ ]] || { echo "bench-explore: GOZK_SEND_BUFFER must be a size in bytes, not $GOZK_SEND_BUFFER" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-explore.XXXXXX")
cleanup() {
	git -C "$repo" worktree remove --force "$tmp/base" 2>/dev/null || true
	rm -rf "$tmp"
	git -C "$repo" worktree prune
}
trap cleanup EXIT
trap 'exit 130' INT TERM

git worktree add --quiet --detach "$tmp/base" "$base_commit"
cp check/bench_explore_test.go "$tmp/base/check/"
# BenchmarkExplore runs its explorations with inTest (check/bench_helpers_test.go): copy it too when BASE has none.
grep -qs '^func inTest(' "$tmp"/base/check/*_test.go || cp check/bench_helpers_test.go "$tmp/base/check/"
echo "building check's test binaries: base $(git rev-parse --short "$base_commit"), head $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo ' with uncommitted changes')" >&2
(cd "$tmp/base" && "$go" test -c -o "$tmp/base.test" ./check)
if [[ -n ${GOZK_SEND_BUFFER:-} ]]; then
	# A what-if, never a build anyone ships: head against a copy of go-zookeeper whose zk.Connect allocates
	# GOZK_SEND_BUFFER bytes for its send buffer instead of 1.5 MiB, through a go.mod of the temporary
	# directory's own (-modfile), so that the work tree is not touched.
	zkdir=$("$go" list -m -f '{{.Dir}}' github.com/go-zookeeper/zk)
	cp -r "$zkdir" "$tmp/zk" && chmod -R u+w "$tmp/zk"
	alloc='make([]byte, bufferSize),' # the send buffer's, in zk.Connect's struct literal (go-zookeeper v1.0.4)
	[[ $(grep -cF "$alloc" "$tmp/zk/conn.go") == 1 ]] || { echo "bench-explore: $zkdir/conn.go has no single '$alloc' (another go-zookeeper version?): cannot make the what-if build" >&2; exit 2; }
	awk -v old="$alloc" -v new="make([]byte, $GOZK_SEND_BUFFER)," '{ i = index($0, old); if (i) $0 = substr($0, 1, i - 1) new substr($0, i + length(old)) } 1' \
		"$tmp/zk/conn.go" >"$tmp/conn.go" && mv "$tmp/conn.go" "$tmp/zk/conn.go"
	cp go.mod "$tmp/head.mod" && cp go.sum "$tmp/head.sum"
	"$go" mod edit -replace "github.com/go-zookeeper/zk=$tmp/zk" "$tmp/head.mod"
	echo "head is built with go-zookeeper's send buffer at $GOZK_SEND_BUFFER bytes (a what-if: GOZK_SEND_BUFFER)" >&2
	"$go" test -modfile="$tmp/head.mod" -c -o "$tmp/head.test" ./check
else
	"$go" test -c -o "$tmp/head.test" ./check
fi

# run SIDE: one pass of BenchmarkExplore, its rates appended to $tmp/rates as "row side wall-rate cpu-rate round".
run() {
	local side=$1 dir=$repo/check
	[[ $side == base ]] && dir=$tmp/base/check
	(cd "$dir" && "$tmp/$side.test" -test.run '^$' -test.bench "$bench" -test.benchtime 1x -test.cpu 1) >"$tmp/out" 2>&1 || {
		cat "$tmp/out" >&2
		echo "bench-explore: the $side benchmark failed" >&2
		exit 1
	}
	awk -v side="$side" '/^BenchmarkExplore\// {
		wall = cpu = 0
		for (i = 3; i < NF; i++) { if ($(i+1) == "interleavings/s") wall = $i; if ($(i+1) == "interleavings/cpu-s") cpu = $i }
		sub(/^BenchmarkExplore\//, "", $1); sub(/-[0-9]+$/, "", $1); print $1, side, wall, cpu, round
	}' round="$round" "$tmp/out" | tee -a "$tmp/rates" | sed -E "s/ [0-9]+$//; s/^/  round $round: /" >&2
}

for ((round = 1; round <= rounds; round++)); do
	if ((round % 2)); then run base; run head; else run head; run base; fi
done

echo
echo "BenchmarkExplore on one core (-test.cpu=1), interleavings per second: medians of $rounds alternating rounds, and of the rounds' head/base ratios"
printf '%-16s %14s %14s %7s   %14s %14s %7s\n' row "base wall/s" "head wall/s" ratio "base cpu-s" "head cpu-s" ratio
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
rate() { awk -v r="$1" -v s="$2" -v f="$3" '$1 == r && $2 == s { print $f }' "$tmp/rates" | median; }
ratio() { # the median over rounds of head's rate over base's, field $2 (3 wall, 4 CPU)
	awk -v r="$1" -v f="$2" '$1 == r { v[$5, $2] = $f } $1 == r && $2 == "base" { n[$5] = 1 }
		END { for (k in n) if (v[k, "base"] > 0) print v[k, "head"] / v[k, "base"] }' "$tmp/rates" | median
}
for row in $(awk '{ print $1 }' "$tmp/rates" | awk '!seen[$0]++'); do
	awk -v r="$row" -v bw="$(rate "$row" base 3)" -v hw="$(rate "$row" head 3)" -v rw="$(ratio "$row" 3)" \
		-v bc="$(rate "$row" base 4)" -v hc="$(rate "$row" head 4)" -v rc="$(ratio "$row" 4)" \
		'BEGIN { printf "%-16s %14.1f %14.1f %6.2fx   %14.1f %14.1f %6.2fx\n", r, bw, hw, rw, bc, hc, rc }'
done
echo "(base $(git rev-parse --short "$base_commit"), head $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo ' with uncommitted changes')${GOZK_SEND_BUFFER:+, head with a go-zookeeper send buffer of $GOZK_SEND_BUFFER bytes})"
