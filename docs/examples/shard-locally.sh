#!/usr/bin/env bash
# Runs what the two engines' examples run, on this machine: PARTS parts of one search as separate
# processes (what a matrix's jobs or an Indexed Job's pods are), each with its index as
# JOB_COMPLETION_INDEX, then zkmodel merge. Usage, from the module's root:
#
#   docs/examples/shard-locally.sh [VARIANT] [RUNS] [PARTS] [OUTDIR]
#
# The verdict it prints is the one `go test ./check -run '^TestExploreVariant$' -check.variant=VARIANT
# -check.n=RUNS -rapid.seed=SEED` prints, whatever PARTS is (TestShardLocallyExample runs it).
set -euo pipefail
variant=${1:-recipe}
runs=${2:-2000}
parts=${3:-4}
out=${4:-$(mktemp -d)}
seed=${SEED:-20261207}
mkdir -p "$out"
go test -c -o "$out/check.test" ./check
pids=()
for ((i = 0; i < parts; i++)); do
	(
		export JOB_COMPLETION_INDEX=$i
		cd check && "$out/check.test" -test.run '^TestExploreVariant$' -test.count=1 -test.timeout 1h \
			-check.variant="$variant" -check.n="$runs" -rapid.seed="$seed" -check.parallel=1 \
			-check.shard="$JOB_COMPLETION_INDEX/$parts" -check.report="$out/part-$JOB_COMPLETION_INDEX.json" \
			-check.traces="$out/traces" >"$out/part-$i.log" 2>&1 || true
		test -f "$out/part-$i.json" || { echo "part $i/$parts wrote no report; its log:" >&2; cat "$out/part-$i.log" >&2; exit 1; }
	) &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
go run ./cmd/zkmodel merge "$out"/part-*.json
