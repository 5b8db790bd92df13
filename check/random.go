package check

import (
	"flag"
	"fmt"

	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zkmodel/zkmodel/check/shard"
	"pgregory.net/rapid"
)

// This file is the random strategy: rapid draws every decision of a run, and shrinks a failing run's draws
// towards fewer and earlier decisions and fewer faults, which makes its trace short.
//
// The runs of a search are numbered 0, 1, 2, …, and run i draws from seed base+i(i+1)/2 — the seeds
// rapid.Check gives its runs, so that a search of N runs from a seed is the very search rapid.Check would
// make, and -rapid.seed reproduces it. Workers take the runs in order, each in a synctest bubble of its own;
// the search stops at its lowest failing run (runs above one already found are not started, those below are
// finished), and that run alone is handed to rapid.Check to shrink. So the verdict, the runs counted and the
// failing run do not depend on how many workers ran them, and a part of the search (-check.shard) owns a
// contiguous range of the numbers.

// Random samples schedules with rapid and shrinks a failure (the default strategy).
var Random Strategy = randomStrategy{}

type randomStrategy struct{}

func (randomStrategy) String() string { return shard.Random }

// seedOf is the seed run i of a search from base draws from: rapid.Check's i-th.
func seedOf(base uint64, i int) uint64 {
	n := uint64(i)
	return base + n*(n+1)/2
}

// baseSeed is the search's seed: -rapid.seed, else Config.Seed, else a new one (fixed false).
func baseSeed(cfg Config) (seed uint64, fixed bool) {
	if f := flag.Lookup("rapid.seed"); f != nil && rapidFlag("rapid.seed") {
		if s, err := strconv.ParseUint(f.Value.String(), 10, 64); err == nil && s != 0 {
			return s, true
		}
	}
	if cfg.Seed != 0 {
		return cfg.Seed, true
	}
	return uint64(time.Now().UnixNano())*0x9e3779b97f4a7c15 | 1, false
}

// checksOf is the number of runs of the search: -rapid.checks when given, else Config.Checks.
func checksOf(cfg Config) int {
	if f := flag.Lookup("rapid.checks"); f != nil && rapidFlag("rapid.checks") {
		if n, err := strconv.Atoi(f.Value.String()); err == nil && n > 0 {
			return n
		}
	}
	return cfg.Checks
}

// sample is the state of a sampling search's workers.
type sample struct {
	x         *exploration
	base      uint64
	from, to  int
	mu        sync.Mutex
	next      int              // the next run to start
	fail      int              // the lowest failing run found, or to
	failOut   *outcome         // its outcome
	failAt    time.Time        // when it was found
	perRun    []map[string]int // faults injected, by run (from from)
	judged    []bool           // runs judged, by run (from from)
	shared    int              // the first run that reached the primitive's sharing, or -1
	perWorker []int            // runs each worker finished
	stopped   bool             // the test's deadline is near: start no more runs
	spent     time.Duration    // the workers' wall time in runs, added up
	finished  int
}

func (randomStrategy) explore(x *exploration) (Report, *outcome) {
	cfg := x.cfg
	if searchBound(cfg) >= 0 {
		x.t.Fatalf("check: %s: Config.Preemptions bounds the exhaustive search: set Exhaustive too (or -check.strategy=exhaustive)", cfg.Name)
	}
	base, fixed := baseSeed(cfg)
	if !fixed && !x.part.Whole() {
		x.t.Fatalf("check: %s: -check.shard=%s needs the search's seed fixed, the same in every part: add -rapid.seed=N (or set Config.Seed)", cfg.Name, x.part)
	}
	total := checksOf(cfg)
	from, to := x.part.Range(total)
	s := &sample{x: x, base: base, from: from, to: to, next: from, fail: to, shared: -1,
		perRun: make([]map[string]int, to-from), judged: make([]bool, to-from), perWorker: make([]int, x.workers)}
	stop := s.progress()
	var wg sync.WaitGroup
	for w := 0; w < x.workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.work(w)
		}()
	}
	wg.Wait()
	stop()

	rep := Report{Seed: base, Workers: x.workers, Part: x.part.String(), Injected: map[string]int{}}
	// What one process running the whole range in order would have judged: the runs below the lowest failure.
	ran := 0
	for ran < s.fail-from && s.judged[ran] {
		ran++
	}
	for _, m := range s.perRun[:ran] {
		for k, n := range m {
			rep.Injected[k] += n
		}
	}
	rep.Runs = ran
	rep.shared = s.shared >= 0 && s.shared < s.fail
	rep.sharedFirst = -1
	if rep.shared {
		rep.sharedFirst = s.shared
	}
	rep.ran, rep.complete, rep.from, rep.to, rep.total = ran, ran == to-from, from, to, total
	rep.perRun = s.perRun[:ran]
	if s.failOut == nil {
		return rep, nil
	}
	rep.Failed, rep.Property, rep.FailIndex = true, s.failOut.property, s.fail
	rep.FirstFail = s.failAt.Sub(x.started)
	last, runs := x.shrink(seedOf(base, s.fail), s.failOut.property)
	rep.Runs += 1 + runs
	rep.shrinkRuns = runs
	if last == nil {
		last = s.failOut // the reproduction passed (a nondeterministic lock): report the run as found
	}
	return rep, last
}

// work is one worker: it takes the next run, until the range is done, a lower run failed, or time is short.
func (s *sample) work(w int) {
	deadline, hasDeadline := s.x.t.Deadline()
	for {
		s.mu.Lock()
		if hasDeadline && s.finished > 0 && time.Until(deadline) < s.spent/time.Duration(s.finished)*time.Duration(5*s.x.workers) {
			s.stopped = true // as rapid does: leave time to shrink and report rather than time out
		}
		i := s.next
		if i >= s.fail || s.stopped {
			s.mu.Unlock()
			return
		}
		s.next++
		s.mu.Unlock()

		began := time.Now()
		out := s.x.runSeeded(seedOf(s.base, i))
		faults := injectedFaults(out)

		s.mu.Lock()
		s.spent += time.Since(began)
		s.finished++
		s.perWorker[w]++
		s.perRun[i-s.from], s.judged[i-s.from] = faults, true
		if out.shared && (s.shared < 0 || i < s.shared) {
			s.shared = i
		}
		if out.failed() && i < s.fail {
			s.fail, s.failOut, s.failAt = i, out, time.Now()
		}
		s.mu.Unlock()
	}
}

// injectedFaults counts the faults a run injected, by kind.
func injectedFaults(out *outcome) map[string]int {
	var m map[string]int
	for _, d := range out.decisions[:out.explored] {
		if kind := decisionKind(d); isFault(kind) {
			if m == nil {
				m = map[string]int{}
			}
			m[kind]++
		}
	}
	return m
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

// progress prints a line a second while sampling, if cfg.Progress is set: runs done, the rate in all and
// per worker, and whether a failure was found.
func (s *sample) progress() (stop func()) {
	cfg := s.x.cfg
	if cfg.Progress == nil {
		return func() {}
	}
	rates := &rateLine{lastAt: time.Now()}
	return progressTicker(func() {
		s.mu.Lock()
		counts := append([]int(nil), s.perWorker...)
		failed := s.failOut != nil
		done := s.finished
		s.mu.Unlock()
		state := "no violation yet"
		if failed {
			state = "violation found"
		}
		fmt.Fprintf(cfg.Progress, "  %s: %d of %d interleavings in %s, %s, %s\n", cfg.Name, done, s.to-s.from,
			time.Since(s.x.started).Round(time.Second), rates.format(counts, time.Now()), state)
	})
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
