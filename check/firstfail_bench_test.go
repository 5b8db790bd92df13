//go:build unix

package check

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkmodel/zkmodel/check/shard"
)

// BenchmarkFirstFailure makes README's table of the sampling strategies: for every mutant row of Variants
// (those that break a property in some run: not the recipes, the controls, or a row whose only finding is a
// property of all the runs together), the interleavings and the wall time to the first failing run, under
// the random strategy, under PCT of depth 3 and under the portfolio of both, the median of 10 seeds (1…10), on one worker (so the
// time is one core's). A search gives up after firstFailCap runs: a median past it is shown as ">cap". No
// shrinking: the time is to the failing run as found. PCT's time includes its calibration runs, whose own
// median time is shown beside it. The runs are the same on every machine (fixed seeds); the times are not.
//
// Each row is a sub-benchmark that prints its line of the table (a Markdown row) to stdout; run them all
// with `make pct-table`, or some with -bench 'FirstFailure/mutant-b'. -benchtime=1x: one measurement each.
func BenchmarkFirstFailure(b *testing.B) {
	fmt.Printf("| row | random: runs | random: time | PCT d=3: runs | PCT d=3: time | of which calibration | portfolio: runs | portfolio: time | PCT's bound per run (d=3) |\n|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, v := range Variants() {
		if !firstFailRow(v) {
			continue
		}
		b.Run(v.Name, func(b *testing.B) {
			var line string
			measure := func(t *testing.T) { line = firstFailLine(t, v) }
			ok := inTest("BenchmarkFirstFailure/"+v.Name, measure)
			if !ok {
				b.Fatalf("%s: the measurement failed", v.Name)
			}
			fmt.Println(line)
		})
	}
}

// firstFailSeeds and firstFailCap: the seeds each strategy runs from, and the runs a search may take.
const (
	firstFailSeeds = 10
	firstFailCap   = 3000
)

// firstFailRow reports whether v is a row of the table: a mutant some run of which fails.
func firstFailRow(v Variant) bool {
	if v.Expect == "" {
		return false
	}
	for _, p := range strings.Split(v.Expect, "|") {
		if !isReachability(p) {
			return true
		}
	}
	return false
}

// firstFailLine measures v's row.
func firstFailLine(t *testing.T, v Variant) string {
	cells := []string{v.Name}
	var bound PCTBound
	var calibrations []time.Duration
	for _, s := range []Strategy{Random, PCT(3), Portfolio(3)} {
		runs, took := make([]int, 0, firstFailSeeds), make([]time.Duration, 0, firstFailSeeds)
		for seed := uint64(1); seed <= firstFailSeeds; seed++ {
			n, d, b, c := firstFailure(t, v, s, seed)
			runs, took = append(runs, n), append(took, d)
			if s.String() == "pct" {
				bound, calibrations = b, append(calibrations, c)
			}
		}
		slices.Sort(runs)
		slices.Sort(took)
		mr, mt := median(runs), time.Duration(median(took)).Round(time.Millisecond)
		if mr > firstFailCap {
			cells = append(cells, fmt.Sprintf(">%d", firstFailCap), fmt.Sprintf(">%s", mt))
		} else {
			cells = append(cells, fmt.Sprintf("%g", mr), mt.String())
		}
		if s.String() == "pct" {
			slices.Sort(calibrations)
			cells = append(cells, time.Duration(median(calibrations)).Round(time.Millisecond).String())
		}
	}
	cells = append(cells, fmt.Sprintf("1/%.0f (n=%d, k=%d)", 1/bound.PerRun(), bound.Threads, bound.Steps))
	return "| " + strings.Join(cells, " | ") + " |"
}

// median of sorted values: the middle one, or the mean of the middle two.
func median[N int | time.Duration](sorted []N) float64 {
	return float64(sorted[(len(sorted)-1)/2]+sorted[len(sorted)/2]) / 2
}

// firstFailure is the number of runs (counting the failing one) and the wall time until strategy s, from
// seed, on one worker, meets v's first failing run; firstFailCap+1 when none fails within the cap. The
// failing run is not shrunk. It also returns PCT's bound (for PCT and the portfolio) and the time the
// strategy's calibration took (part of took).
func firstFailure(t *testing.T, v Variant, s Strategy, seed uint64) (runs int, took time.Duration, bound PCTBound, calibration time.Duration) {
	cfg := v.Config
	cfg.Checks, cfg.Seed, cfg.Parallel, cfg.TraceDir = firstFailCap, seed, 1, t.TempDir()
	cfg = cfg.withDefaults()
	x := &exploration{t: t, kind: v.clients(), cfg: cfg, part: shard.Part{Index: 0, Count: 1}, workers: 1, started: time.Now()}
	run, b := s.(sampler).runs(x, seed)
	if b != nil {
		bound = *b
	}
	calibration = time.Since(x.started)
	rep, _ := x.sampleRuns(seed, true, run, "")
	if !rep.Failed {
		return firstFailCap + 1, time.Since(x.started), bound, calibration
	}
	if os.Getenv("ZKMODEL_FIRSTFAIL_VERBOSE") != "" {
		fmt.Fprintf(os.Stderr, "%s %s seed %d: %s at run %d\n", v.Name, s, seed, rep.Property, rep.FailIndex)
	}
	return rep.FailIndex + 1, rep.FirstFail, bound, calibration
}
