package check

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"testing/synctest"

	"github.com/zkmodel/zkmodel/check/shard"
)

// This file is the PCT strategy (probabilistic concurrency testing, Burckhardt, Kothari, Musuvathi and
// Nagarakatte, "A Randomized Scheduler with Probabilistic Guarantees of Finding Bugs", ASPLOS 2010): each
// run gives the threads random distinct priorities and always runs the highest-priority thread that can
// move, and at d−1 steps drawn uniformly from the run's k steps it lowers the priority of the thread about
// to move below every other. A bug of depth d — one that needs d particular orderings of steps of different
// threads — is then found with probability at least 1/(n·k^(d−1)) per run, for n threads.
//
// The threads are the clients c1…cK and, when servers may stop (FaultStopServer), the ensemble (its "start
// sN" steps), so n is K or K+1. A client may have several steps it can take at once (a request to apply, a
// reply or a watch event to deliver, its register request to answer); it takes the first the scheduler
// lists, as one thread has one next step. A step counts towards k only when two threads or more can move,
// as in the paper's "sequential execution" (§4.1): a change point where only one can does nothing.
//
// k is measured, not guessed: before the search, pctCalibrationRuns runs with random priorities and no
// change points (from fixed seeds, so every search of a Config, every worker and every shard measures the
// same k) count their steps, and k is the longest, at most Config.Steps. A run longer than k has no change
// point past k: the bound is stated for bugs within the first k steps.
//
// Faults are not threads: at every decision where faults are allowed (at most Config.MaxFault per run, as
// for every strategy), a fault is drawn with probability 1/10 — the random strategy's rate — uniformly among
// those possible, and always when only a fault can happen. A fault draw is not a step. So the bound is PCT's
// for the scheduling; a bug that also needs a fault is found with the bound times the chance of drawing that
// fault where it is needed.
//
// Run i of a search is made from seed base+i(i+1)/2 as for the random strategy (sample.go), so that the
// runs, the verdict and the failing run do not depend on the workers or the shards. A failing run is not
// shrunk (rapid draws none of its decisions): its trace is the run as found, its decisions up to the fair
// drain, and it replays like any trace.

// PCT is the PCT strategy of the given depth d (1 or more; -check.strategy=pct with -check.pct.depth=d):
// it samples Config.Checks runs, each finding a bug of depth d with probability at least 1/(n·k^(d−1)),
// and reports the failing run as found, without shrinking it. Report.PCT states the bound.
func PCT(depth int) Strategy { return pctStrategy{depth: depth} }

// pctDefaultDepth is -check.strategy=pct's depth when -check.pct.depth is not given.
const pctDefaultDepth = 3

// pctMaxDepth bounds the depth: k^(d−1) past it says nothing a user could use.
const pctMaxDepth = 10

// pctCalibrationRuns is how many runs measure k.
const pctCalibrationRuns = 8

// pctCalibrationSeed seeds the calibration runs: fixed, so k is the Config's, not the search's.
const pctCalibrationSeed = 0x5043545f6b

// pctFaultPercent is the chance, in percent, that a decision where faults are allowed injects one.
const pctFaultPercent = 10

type pctStrategy struct{ depth int }

func (pctStrategy) String() string { return shard.PCT }

// validDepth says what is wrong with a PCT depth.
func validDepth(depth int) error {
	if depth < 1 || depth > pctMaxDepth {
		return fmt.Errorf("check: PCT depth %d: want 1 to %d (the number of orderings a bug needs; 3 is usual)", depth, pctMaxDepth)
	}
	return nil
}

func (p pctStrategy) explore(x *exploration) (Report, *outcome) {
	base, fixed := baseSeed(x.cfg)
	run, bound := p.runs(x, base)
	rep, s := x.sampleRuns(base, fixed, run, bound.String())
	rep.PCT = bound
	if s.failOut == nil {
		return rep, nil
	}
	rep.FoundBy = shard.PCT
	return rep, s.failOut
}

// runs measures k, and makes run i of a search from base: PCT's priorities and change points drawn from
// seed base+i(i+1)/2.
func (p pctStrategy) runs(x *exploration, base uint64) (run func(i int) *outcome, bound *PCTBound) {
	b := x.calibratePCT(p.depth)
	return func(i int) *outcome { return x.runPCT(b, seedOf(base, i)) }, &b
}

// PCTBound is the guarantee a PCT search states: a bug of depth Depth is found with probability at least
// 1/(Threads·Steps^(Depth−1)) in each run.
type PCTBound struct {
	Depth   int // d, the strategy's depth
	Threads int // n: the clients, and the ensemble when servers may stop
	Steps   int // k: steps where two threads or more could move, the longest of the calibration runs
}

// PerRun is the probability, at least, that one run finds a bug of depth Depth.
func (b PCTBound) PerRun() float64 {
	return 1 / (float64(b.Threads) * math.Pow(float64(b.Steps), float64(b.Depth-1)))
}

// Within is the probability, at least, that runs runs find a bug of depth Depth: 1−(1−p)^runs.
func (b PCTBound) Within(runs int) float64 {
	return -math.Expm1(float64(runs) * math.Log1p(-b.PerRun()))
}

// String states the bound, e.g. "PCT d=3: a depth-3 bug is found with probability ≥ 1/10800 per run (n=3
// threads, k=60 steps)".
func (b PCTBound) String() string {
	return fmt.Sprintf("PCT d=%d: a depth-%d bug is found with probability ≥ 1/%.0f per run (n=%d threads, k=%d steps)",
		b.Depth, b.Depth, 1/b.PerRun(), b.Threads, b.Steps)
}

// pctThreads is n for cfg: the clients, and the ensemble when servers may stop.
func pctThreads(cfg Config) int {
	if cfg.Faults&FaultStopServer != 0 {
		return cfg.Clients + 1
	}
	return cfg.Clients
}

// calibratePCT measures k: the most steps (with two threads or more able to move) of pctCalibrationRuns runs
// with random priorities and no change points, from fixed seeds, at most Config.Steps and at least 1.
func (x *exploration) calibratePCT(depth int) PCTBound {
	k := 1
	for j := 0; j < pctCalibrationRuns; j++ {
		d := newPCTDecider(PCTBound{Depth: 1, Threads: pctThreads(x.cfg), Steps: 1}, x.cfg, seedOf(pctCalibrationSeed, j))
		synctest.Test(x.t, func(*testing.T) {
			defer func() { _ = recover() }() // a panicking lock: the search's runs report it
			executeWith(x.kind, x.cfg, d)
		})
		k = max(k, d.step)
	}
	return PCTBound{Depth: depth, Threads: pctThreads(x.cfg), Steps: min(k, x.cfg.Steps)}
}

// runPCT makes one PCT run in a bubble of its own, from seed.
func (x *exploration) runPCT(bound PCTBound, seed uint64) *outcome {
	var out *outcome
	synctest.Test(x.t, func(*testing.T) {
		defer func() {
			if p := recover(); p != nil {
				out = &outcome{clientKind: x.kind.name, property: "panic", verdict: fmt.Sprint(p)}
			}
		}()
		out = executeWith(x.kind, x.cfg, newPCTDecider(bound, x.cfg, seed))
	})
	return out
}

// pctDecider is one PCT run's scheduler. Priorities are numbers, higher first: the threads start with
// d…d+n−1 in a random order, and the i-th change point (i = 1…d−1, at a random step) sets the moving
// thread's to i, below every starting one.
type pctDecider struct {
	rng      *rand.Rand
	priority map[int]int // by thread: a client's id, 0 for the ensemble
	change   map[int]int // step → the priority its change point gives
	step     int         // steps so far at which two threads or more could move
	seed     uint64      // the run's seed (runSeeder): node ids and hold times, drawn from the run's seed
}

// newPCTDecider draws a run's priorities and change points from seed.
func newPCTDecider(b PCTBound, cfg Config, seed uint64) *pctDecider {
	d := &pctDecider{rng: rand.New(rand.NewPCG(seed, 0x7063742d72756e)), priority: map[int]int{}, change: map[int]int{}}
	// The run's seed comes from a stream of its own, so that the priorities and change points a seed gives
	// are the same as before runs drew one; never 0, which means "no seed" (the ids of before).
	d.seed = rand.New(rand.NewPCG(seed, 0x72756e2d73656564)).Uint64() | 1
	threads := make([]int, 0, cfg.Clients+1)
	for id := 1; id <= cfg.Clients; id++ {
		threads = append(threads, id)
	}
	if b.Threads > cfg.Clients {
		threads = append(threads, 0)
	}
	for i, p := range d.rng.Perm(len(threads)) {
		d.priority[threads[i]] = b.Depth + p
	}
	// d−1 distinct steps of 1…k (fewer when k is smaller), the i-th giving priority i.
	points := d.rng.Perm(b.Steps)
	for i := 1; i < b.Depth && i <= len(points); i++ {
		d.change[points[i-1]+1] = i
	}
	return d
}

// runSeed is the run's seed, drawn with its priorities: the names of the recipes' nodes, and so their
// order, vary from run to run as in the random strategy's runs, and the trace records it ("run-seed:").
func (d *pctDecider) runSeed() uint64 { return d.seed }

// steps is the whole exploration phase: PCT's schedule is its priorities, not a length.
func (d *pctDecider) steps(max int) int { return max }

func (d *pctDecider) pick(progress, faults []choice) (string, error) {
	if len(faults) > 0 && (len(progress) == 0 || d.rng.IntN(100) < pctFaultPercent) {
		return faults[d.rng.IntN(len(faults))].label(), nil
	}
	if len(progress) == 0 {
		return "", nil
	}
	best, threads := d.highest(progress)
	if threads >= 2 {
		d.step++
		if p, ok := d.change[d.step]; ok {
			d.priority[choiceThread(&progress[best])] = p
			best, _ = d.highest(progress)
		}
	}
	return progress[best].label(), nil
}

// highest is the first choice of the highest-priority thread among cs, and how many threads cs have.
func (d *pctDecider) highest(cs []choice) (best, threads int) {
	var seen [16]int // the threads met so far (a run has a few clients)
	for i := range cs {
		t := choiceThread(&cs[i])
		known := false
		for _, s := range seen[:min(threads, len(seen))] {
			known = known || s == t
		}
		if !known {
			if threads < len(seen) {
				seen[threads] = t
			}
			threads++
		}
		if d.prio(t) > d.prio(choiceThread(&cs[best])) {
			best = i
		}
	}
	return best, threads
}

// prio is a thread's priority; a thread the run did not announce (none should exist) comes after the others.
func (d *pctDecider) prio(t int) int {
	if p, ok := d.priority[t]; ok {
		return p
	}
	return -t
}

// choiceThread is the thread a choice is a step of: its client, or 0 for the ensemble.
func choiceThread(c *choice) int {
	if c.on == 'c' {
		return c.id
	}
	return 0
}
