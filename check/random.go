package check

import (
	"flag"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/zkmodel/zkmodel/check/shard"
	"pgregory.net/rapid"
)

// This file is the random strategy: rapid draws every decision of a run, and shrinks a failing run's draws
// towards fewer and earlier decisions and fewer faults, which makes its trace short.
//
// Run i of a search draws from seed base+i(i+1)/2 (see sample.go) — the seeds rapid.Check gives its runs, so
// that a search of N runs from a seed is the very search rapid.Check would make, and -rapid.seed reproduces
// it. The lowest failing run alone is handed to rapid.Check to shrink.

// Random samples schedules with rapid and shrinks a failure (the default strategy).
var Random Strategy = randomStrategy{}

type randomStrategy struct{}

func (randomStrategy) String() string { return shard.Random }

func (r randomStrategy) explore(x *exploration) (Report, *outcome) {
	base, fixed := baseSeed(x.cfg)
	run, _ := r.runs(x, base)
	rep, s := x.sampleRuns(base, fixed, run, "")
	if s.failOut == nil {
		return rep, nil
	}
	rep.FoundBy = shard.Random
	return rep, x.shrinkFound(&rep, s)
}

// runs makes run i of a search from base: rapid's draws from seed base+i(i+1)/2.
func (randomStrategy) runs(x *exploration, base uint64) (run func(i int) *outcome, bound *PCTBound) {
	return func(i int) *outcome { return x.runSeeded(seedOf(base, i)) }, nil
}

// shrinkFound hands the search's failing run to rapid to shrink, counts the runs that took in rep, and
// returns the smallest failing run (the run as found, if the reproduction passed: a nondeterministic lock).
func (x *exploration) shrinkFound(rep *Report, s *sample) *outcome {
	last, runs := x.shrink(seedOf(s.base, s.fail), s.failOut.property)
	rep.Runs += runs
	rep.shrinkRuns = runs
	if last == nil {
		return s.failOut
	}
	return last
}

// runSeeded makes one run in a bubble of its own, its decisions drawn by rapid from seed exactly as
// rapid.Check draws those of its run with that seed.
func (x *exploration) runSeeded(seed uint64) *outcome {
	var out *outcome
	gen := rapid.Custom(func(rt *rapid.T) (o *outcome) {
		defer func() {
			if p := recover(); p != nil {
				o = &outcome{clientKind: x.kind.name, property: "panic", verdict: fmt.Sprint(p)}
			}
		}()
		return executeWith(x.kind, x.cfg, rapidDecider{t: rt})
	})
	synctest.Test(x.t, func(*testing.T) { out = gen.Example(int(seed)) })
	return out
}

// shrink hands the failing run's seed to rapid.Check, which makes that run again and shrinks it while it
// breaks the same property; it returns the smallest failing run and the runs shrinking took. rapid's own
// output is kept out of the test's unless -test.v.
func (x *exploration) shrink(seed uint64, property string) (last *outcome, runs int) {
	defer setFlag("rapid.checks", "1")()
	defer setFlag("rapid.seed", strconv.FormatUint(seed, 10))()
	defer setFlag("rapid.nofailfile", "true")()
	defer setFlag("rapid.shrinktime", x.cfg.Shrink.String())()
	rapid.Check(&quietTB{t: x.t}, func(rt *rapid.T) {
		var out *outcome
		var aborted any
		synctest.Test(x.t, func(*testing.T) {
			defer func() { aborted = recover() }() // rapid ends a run by panicking out of a draw
			out = executeWith(x.kind, x.cfg, rapidDecider{t: rt})
		})
		if aborted != nil {
			panic(aborted)
		}
		runs++
		if out.failed() && out.property == property {
			last = out
			rt.Fatalf("%s violated: %s", out.property, out.verdict)
		}
	})
	return last, max(runs-1, 0) // the first is the failing run itself, counted by the search
}

// setFlag sets one of rapid's flags for the shrinking, and returns what restores it.
func setFlag(name, value string) (restore func()) {
	f := flag.Lookup(name)
	if f == nil {
		return func() {}
	}
	old := f.Value.String()
	_ = f.Value.Set(value)
	return func() { _ = f.Value.Set(old) }
}

// quietTB is the testing.TB rapid shrinks on: rapid's logs and its "To reproduce" lines (the checker's own
// replay line says how to reproduce) reach the test's output only with -test.v, and its failure is the
// checker's to report.
type quietTB struct {
	t      *testing.T
	mu     sync.Mutex
	failed bool
}

func (q *quietTB) Helper()      {}
func (q *quietTB) Name() string { return q.t.Name() }
func (q *quietTB) Logf(format string, args ...any) {
	if testing.Verbose() {
		q.t.Logf(format, args...)
	}
}
func (q *quietTB) Log(args ...any)                   { q.Logf("%s", fmt.Sprint(args...)) }
func (q *quietTB) Skipf(format string, args ...any)  { q.Logf(format, args...) }
func (q *quietTB) Skip(args ...any)                  { q.Log(args...) }
func (q *quietTB) SkipNow()                          {}
func (q *quietTB) Errorf(format string, args ...any) { q.Fail(); q.Logf(format, args...) }
func (q *quietTB) Error(args ...any)                 { q.Fail(); q.Log(args...) }
func (q *quietTB) Fatalf(format string, args ...any) { q.Errorf(format, args...) }
func (q *quietTB) Fatal(args ...any)                 { q.Error(args...) }
func (q *quietTB) FailNow()                          { q.Fail() }
func (q *quietTB) Fail() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.failed = true
}
func (q *quietTB) Failed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.failed
}
