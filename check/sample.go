package check

import (
	"flag"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// This file is what the sampling strategies share (random.go, pct.go, portfolio.go): a search of numbered
// runs from one seed, run by the workers in order, that stops at its lowest failing run.
//
// The runs of a search are numbered 0, 1, 2, …, and run i is made from seed base+i(i+1)/2 — the seeds
// rapid.Check gives its runs. Workers take the runs in order, each in a synctest bubble of its own; the search
// stops at its lowest failing run (runs above one already found are not started, those below are finished).
// So the verdict, the runs counted and the failing run do not depend on how many workers ran them, and a part
// of the search (-check.shard) owns a contiguous range of the numbers. What a strategy does with the failing
// run (rapid shrinks it; PCT reports it as found) is the strategy's.

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

// sampler is a sampling strategy: Random, PCT or Portfolio.
type sampler interface {
	Strategy
	// runs makes run i of a search from base, in a bubble of its own; bound is the PCT bound its PCT runs
	// state, or nil. What the strategy measures before the search (PCT's k) is measured here.
	runs(x *exploration, base uint64) (run func(i int) *outcome, bound *PCTBound)
}

// sample is the state of a sampling search's workers.
type sample struct {
	x         *exploration
	base      uint64
	run       func(i int) *outcome // makes run number i, in a bubble of its own
	note      string               // added to the progress line (PCT's bound), or ""
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

// sampleRuns runs the search's runs (the part of them x.part owns) on x.workers workers, run(i) making run
// number i of the search from base, and reports what one process running them in order would have judged:
// the runs below the lowest failure. The failing run, if any, is s.failOut, number s.fail; the report's
// Runs do not count what the strategy then does with it.
func (x *exploration) sampleRuns(base uint64, fixed bool, run func(i int) *outcome, note string) (Report, *sample) {
	cfg := x.cfg
	if searchBound(cfg) >= 0 {
		x.t.Fatalf("check: %s: Config.Preemptions bounds the exhaustive search: set Exhaustive too (or -check.strategy=exhaustive)", cfg.Name)
	}
	if !fixed && !x.part.Whole() {
		x.t.Fatalf("check: %s: -check.shard=%s needs the search's seed fixed, the same in every part: add -rapid.seed=N (or set Config.Seed)", cfg.Name, x.part)
	}
	total := checksOf(cfg)
	from, to := x.part.Range(total)
	s := &sample{x: x, base: base, run: run, note: note, from: from, to: to, next: from, fail: to, shared: -1,
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
	if s.failOut != nil {
		rep.Failed, rep.Property, rep.FailIndex = true, s.failOut.property, s.fail
		rep.FirstFail = s.failAt.Sub(x.started)
		rep.Runs++ // the failing run itself
	}
	return rep, s
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
		out := s.run(i)
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
		if !out.failed() {
			out.recycle() // judged and dropped: its events' blocks go to the next runs
		}
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

// progress prints a line a second while sampling, if cfg.Progress is set: runs done, the rate in all and
// per worker, whether a failure was found, and the strategy's note.
func (s *sample) progress() (stop func()) {
	cfg := s.x.cfg
	if cfg.Progress == nil {
		return func() {}
	}
	rates := &rateLine{lastAt: time.Now()}
	note := ""
	if s.note != "" {
		note = "; " + s.note
	}
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
		fmt.Fprintf(cfg.Progress, "  %s: %d of %d interleavings in %s, %s, %s%s\n", cfg.Name, done, s.to-s.from,
			time.Since(s.x.started).Round(time.Second), rates.format(counts, time.Now()), state, note)
	})
}
