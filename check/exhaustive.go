package check

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zkmodel/zkmodel/check/shard"
)

// This file is the exhaustive mode (Config.Exhaustive): instead of sampling schedules with rapid, it
// enumerates every sequence of scheduler decisions within the bounds — stateless model checking, as CHESS
// and loom do it: each schedule is a fresh run that follows a recorded prefix of decisions and then takes
// the first choice it has not tried, and a depth-first search over those prefixes visits the whole tree of
// decisions. The scheduler is the same one Run samples with (scheduler.go); only the decider differs.
//
// Partial-order reduction: two decisions that commute (their order changes neither what can happen next nor
// any property's verdict) need to be explored in one order only. The search keeps sleep sets (Godefroid): a
// choice already explored at a node sleeps in the subtrees of its siblings, for as long as the decisions
// taken there are independent of it, and a node whose every choice sleeps is pruned — its schedules are
// reorderings of ones already explored. Independence is decided from what each decision did when it ran
// (the events of its step, reactions included), conservatively:
//
//   - decisions concerning the same client, faults, server stops and starts and clock jumps are dependent on
//     everything;
//   - two decisions that change the server's shared state (apply, reconnect) are dependent, as are two
//     critical-section accesses (the register is shared);
//   - a decision whose step touched another client (a watch event queued for it, say) is dependent on that
//     client's decisions;
//   - two decisions whose steps were visible to the properties (a lock, lock-ok, unlock, critical-section or
//     cancellation event, or an expiry) are dependent: that keeps the order of everything the properties read,
//     so every schedule has the verdict of the one explored in its place.
//
// What remains independent is, for example, a reply delivered to c1 and a request applied for c2 that
// notifies nobody, or replies delivered to two clients that only send their next request in reaction.

// errPruned ends a run whose every choice sleeps: its schedules are reorderings of explored ones.
var errPruned = errors.New("check: pruned by partial-order reduction")

// effect is what a decision's step did, as independence needs it.
type effect struct {
	visible bool  // the step produced an event the properties read
	touched []int // clients other than the decision's own that had events in the step (0: the server, or the scheduler)
}

// decisionClient is the client a decision concerns (its "cN"), or 0 for one that concerns the server or the
// clock ("stop s1", "advance 14s").
func decisionClient(label string) int {
	// The label's last word, when it has two or more (read without splitting it: every decision point
	// asks this of every choice).
	label = strings.TrimRight(label, " \t\n\v\f\r")
	i := strings.LastIndexAny(label, " \t\n\v\f\r")
	if i < 0 || strings.TrimSpace(label[:i]) == "" {
		return 0
	}
	last, ok := strings.CutPrefix(label[i+1:], "c")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(last)
	if err != nil {
		return 0
	}
	return n
}

// decisionKind is a decision's first word: "apply", "deliver", "cs-read", "lose-reply", …
func decisionKind(label string) string {
	kind, _, _ := strings.Cut(label, " ")
	return kind
}

// globalKinds are the decisions that may change what every client can do next.
var globalKinds = map[string]bool{
	"lose-request": true, "lose-reply": true, "disconnect": true, "expire": true, "advance": true,
	"cancel": true, "stop": true, "start": true,
}

// sharedKinds change the server's shared state (the tree, sessions, watches).
var sharedKinds = map[string]bool{"apply": true, "reconnect": true}

// visibleKinds are the client events the properties read (see props.go).
var visibleKinds = map[string]bool{
	"lock": true, "lock-ok": true, "lock-err": true, "unlock": true, "unlock-ok": true, "unlock-err": true,
	"cs-read": true, "cs-refused": true, "cs-value": true, "cs-abort": true, "cs-write": true, "cancelled": true,
	"model:expire": true, "told-lost": true, "not-told": true,
}

// independent reports whether decisions a and b, with the effects they had, commute.
func independent(a string, ea effect, b string, eb effect) bool {
	return depInfoOf(a, ea).independentOf(depInfoOf(b, eb))
}

// effectOf is what the decision that began step did: its step's events, the reactions included. events are
// in step order (a run's as recorded, or its history), so it reads them from the end back to that step.
func effectOf(events []*event, step int, label string) effect {
	own := decisionClient(label)
	var eff effect
	for i := len(events) - 1; i >= 0; i-- {
		e := events[i]
		if e.step < step {
			break
		}
		if e.step != step || e.kind == "decision" {
			continue
		}
		if visibleKinds[e.kind] {
			eff.visible = true
		}
		if e.client != own && !slices.Contains(eff.touched, e.client) {
			eff.touched = append(eff.touched, e.client)
		}
	}
	return eff
}

// frame is one decision point on the current path of the search.
type frame struct {
	options  []string          // what could be chosen here, in the scheduler's order
	next     int               // the option the current path takes (-1: every option sleeps)
	explored []string          // options whose subtrees are done, in order
	effects  map[string]effect // what each option taken here did
	sleep    map[string]effect // options that sleep here, with what they did where they were explored
	tracked  *trackedState     // the state cache's digests here, so that a run replaying the path skips them
	dp       *dporPoint        // the point's backtrack set, when the search is DPOR's (dpor.go)
}

func (f *frame) chosen() string { return f.options[f.next] }

// advance moves to the next option that neither sleeps nor was explored; false when none is left.
func (f *frame) advance() bool {
	if f.dp != nil {
		return f.dp.advance(f)
	}
	if f.next >= 0 {
		f.explored = append(f.explored, f.chosen())
	}
	for i := f.next + 1; i < len(f.options); i++ {
		if _, asleep := f.sleep[f.options[i]]; !asleep {
			f.next = i
			return true
		}
	}
	return false
}

// search is the depth-first search's state: the path of the current schedule, and the counts.
type search struct {
	reduce bool
	depth  int // decisions per schedule before the fair drain
	stack  []*frame
	floor  int // backtracking stops at this many frames: a subtree's search leaves its root's path alone
	// bound, when 0 or more, makes the search one of complete runs under a preemption bound
	// (preemption.go): no depth cut-off, and at most bound preemptions a schedule; -1 is the depth-bounded
	// search.
	bound int
	// cache, when set, holds the states explored (statecache.go): a run that reaches one is cut there.
	cache *stateCache
	// dpor makes the preemption-bounded search explore each point's backtrack set only (dpor.go); fresh is
	// the first decision of the next run that no earlier run took after the same prefix.
	dpor  bool
	fresh int
	// raceInfo and raceBefore are addRaces' buffers, reused from run to run.
	raceInfo   []depInfo
	raceBefore []uint64

	mu        sync.Mutex // guards the counts, which the progress line reads
	schedules int        // runs that completed and were judged
	pruned    int        // runs cut short because every choice slept
	points    int        // decision points visited
}

// dfsDecider follows the search's path, then extends it with the first choice that does not sleep.
type dfsDecider struct {
	s *search
	r *run
	k int // decisions taken in this run
	preemption
	track *stateTracker // the run's state, when the search caches states
}

func (d *dfsDecider) bind(r *run) {
	d.r = r
	if d.s.cache != nil {
		d.track = &stateTracker{clients: map[int]stateKey{}, bubbleAt0: time.Now()}
	}
}

func (d *dfsDecider) steps(int) int {
	if d.s.bound >= 0 && d.s.depth == 0 {
		return completeLimit // complete runs: to quiescence
	}
	return d.s.depth
}

func (d *dfsDecider) pick(progress, faults []choice) (string, error) {
	label, err := d.choose(progress, faults)
	if err == nil && label != "" && d.s.bound >= 0 {
		if d.track != nil {
			if !d.isProgressChoice(label) {
				d.track.faults++
			}
			if next := d.k; next >= len(d.s.stack) || d.s.stack[next].tracked == nil {
				d.track.foldDecision(d.r, label) // else the next point restores digests that include it
			}
		}
		d.taken(label)
	}
	return label, err
}

func (d *dfsDecider) choose(progress, faults []choice) (string, error) {
	s, k := d.s, d.k
	d.k++
	labels := make([]string, 0, len(progress)+len(faults))
	for _, c := range progress {
		labels = append(labels, c.label())
	}
	for _, c := range faults {
		labels = append(labels, c.label())
	}
	offered := labels // every choice, before the bound cuts any: what the state offers
	if s.bound >= 0 {
		labels = d.allowed(labels, len(progress), s.bound)
	}
	if k > 0 {
		// The previous decision's step is over (the scheduler waited for every client): record what it did.
		p := s.stack[k-1]
		d.r.mu.Lock()
		p.effects[p.chosen()] = effectOf(d.r.events, k, p.chosen())
		d.r.mu.Unlock()
	}
	var tracked *trackedState
	if d.track != nil {
		if k < len(s.stack) && s.stack[k].tracked != nil {
			d.track.restore(d.r, s.stack[k].tracked) // a point of the path: its digests as first made
		} else {
			d.track.foldEvents(d.r)
		}
		if k >= len(s.stack) {
			if s.cache.visit(d.track.key(d.r, offered), spentOf(&d.preemption, d.track.faults, k, len(faults) > 0)) {
				return "", errCached
			}
			tracked = d.track.snapshot()
		}
	}
	if k < len(s.stack) {
		f := s.stack[k]
		if !slices.Equal(f.options, labels) {
			return "", fmt.Errorf("check: exhaustive search: decision %d offered %v, where the same prefix offered %v before: the runs are not deterministic", k+1, labels, f.options)
		}
		return f.chosen(), nil
	}
	f := &frame{options: labels, next: -1, effects: map[string]effect{}, sleep: map[string]effect{}, tracked: tracked}
	if s.dpor {
		f.dp = newDPORPoint(labels, &d.preemption)
	}
	if k > 0 && s.reduce {
		p := s.stack[k-1]
		c := p.chosen()
		for label, eff := range p.sleep {
			if independent(label, eff, c, p.effects[c]) {
				f.sleep[label] = eff
			}
		}
		for _, label := range p.explored {
			if independent(label, p.effects[label], c, p.effects[c]) {
				f.sleep[label] = p.effects[label]
			}
		}
	}
	s.mu.Lock()
	s.points++
	s.mu.Unlock()
	s.stack = append(s.stack, f)
	if len(labels) == 0 {
		return "", nil // nothing can happen: the scheduler stops looking
	}
	if !f.advance() {
		return "", errPruned
	}
	return f.chosen(), nil
}

// recordEffects records, from a finished run's history, what the run's last decision did: each pick records
// its predecessor's, but the last one's step ended after the last pick, and its siblings' sleep sets need it.
func (s *search) recordEffects(out *outcome) {
	for i := min(len(s.stack), len(out.decisions)) - 1; i >= 0; i-- {
		if f := s.stack[i]; f.next >= 0 && out.decisions[i] == f.chosen() {
			f.effects[f.chosen()] = effectOf(out.history, i+1, f.chosen())
			return
		}
	}
}

// backtrack moves the search to the next unexplored path; false when the tree is exhausted.
func (s *search) backtrack() bool {
	for len(s.stack) > s.floor {
		f := s.stack[len(s.stack)-1]
		if f.next >= 0 && f.advance() {
			s.fresh = len(s.stack) - 1
			return true
		}
		s.stack = s.stack[:len(s.stack)-1]
	}
	return false
}

// exhaustiveResult is what one bounded search found.
type exhaustiveResult struct {
	schedules, pruned, points int
	states                    int                 // distinct states the cache held (statecache.go), 0 without one
	exhausted                 bool                // the whole tree was explored (not stopped by a failure or the budget)
	failure                   *outcome            // the first failing run, when stopping at failures
	violated                  map[string]*outcome // every property some run violated, with its first run, when not stopping
	shortest                  map[string]*outcome // every property some run violated, with its shortest run
	shared                    bool                // some judged run reached the primitive's sharing (reachability)
}

// Which failures end a search (exhaust's stopOn): any, none (collect every violated property), or one
// property's.
const (
	stopOnAny  = ""
	stopOnNone = "-"
)

// exhaust searches every schedule of depth decisions. It returns at the first failing run whose property
// stopOn names (stopOnAny: any property), and collects every property violated on the way. It stops early,
// not exhausted, when the deadline passes.
func exhaust(t *testing.T, kind clients, cfg Config, depth int, reduce bool, stopOn string, deadline time.Time) exhaustiveResult {
	t.Helper()
	return exhaustSeeing(t, kind, cfg, depth, reduce, stopOn, deadline, nil)
}

// exhaustSeeing is exhaust, with onRun (if set) seeing every run as it ends.
func exhaustSeeing(t *testing.T, kind clients, cfg Config, depth int, reduce bool, stopOn string, deadline time.Time, onRun func(*outcome)) exhaustiveResult {
	t.Helper()
	s := &search{reduce: reduce, depth: depth, bound: searchBound(cfg), dpor: dporOf(cfg)}
	if cachingOf(kind, cfg, reduce) {
		s.cache = newStateCache()
	}
	if s.bound >= 0 {
		s.depth, s.reduce = 0, false // complete runs, without sleep sets (preemption.go)
	}
	return s.run(t, kind, cfg, stopOn, deadline, onRun)
}

// run searches from the search's stack (empty: the whole tree) until the tree below its floor is exhausted,
// a failure stopOn names, or the deadline; onRun, if set, sees every run as it ends.
func (s *search) run(t *testing.T, kind clients, cfg Config, stopOn string, deadline time.Time, onRun func(*outcome)) exhaustiveResult {
	res := exhaustiveResult{violated: map[string]*outcome{}}
	for {
		if !deadline.IsZero() && time.Now().After(deadline) {
			break
		}
		var out *outcome
		synctest.Test(t, func(*testing.T) {
			out = executeWith(kind, cfg, &dfsDecider{s: s})
		})
		s.recordEffects(out)
		if s.dpor {
			s.addRaces()
		}
		s.mu.Lock()
		if out.pruned {
			s.pruned++
		} else {
			s.schedules++
		}
		s.mu.Unlock()
		if onRun != nil {
			onRun(out)
		}
		res.shared = res.shared || out.shared
		if out.property == "replay" || out.property == "setup" {
			// The search's own failure (a run that did not follow its prefix) or a lock that cannot be made.
			res.failure = out
			break
		}
		if out.failed() {
			if _, seen := res.violated[out.property]; !seen {
				res.violated[out.property] = out
			}
			if sh := res.shortest[out.property]; sh == nil || out.explored < sh.explored {
				if res.shortest == nil {
					res.shortest = map[string]*outcome{}
				}
				res.shortest[out.property] = out
			}
			if stopOn == stopOnAny || stopOn == out.property {
				res.failure = out
				break
			}
		}
		if !s.backtrack() {
			res.exhausted = true
			break
		}
	}
	s.mu.Lock()
	res.schedules, res.pruned, res.points = s.schedules, s.pruned, s.points
	s.mu.Unlock()
	res.states = s.cache.states()
	return res
}

// progressTicker calls line every second until stopped.
func progressTicker(line func()) (stop func()) {
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				line()
			}
		}
	}()
	return func() { close(done) }
}

// Exhaustive enumerates every schedule within the bound (Config.Steps decisions, Config.MaxFault faults),
// reduced by sleep sets, and reduces a failure to the shortest schedule that breaks the same property.
var Exhaustive Strategy = exhaustiveStrategy{}

type exhaustiveStrategy struct{}

func (exhaustiveStrategy) String() string { return shard.Exhaustive }

func (exhaustiveStrategy) explore(x *exploration) (Report, *outcome) {
	var (
		rep  Report
		fail *outcome
	)
	if x.cfg.NodeIDOrders {
		rep, fail = x.everyIDOrder()
	} else {
		rep, fail = x.exhaustive()
	}
	if fail != nil && (fail.property == "replay" || fail.property == "setup") {
		x.t.Fatalf("check: %s: exhaustive search: %s", x.cfg.Name, fail.verdict)
	}
	return rep, fail
}

// exploreExhaustive searches every schedule of cfg.Steps decisions with as many workers as cfg says, as
// Run does with Config.Exhaustive.
func exploreExhaustive(t *testing.T, kind clients, cfg Config) (Report, *outcome) {
	t.Helper()
	x := &exploration{t: t, kind: kind, cfg: cfg, part: shard.Part{Index: 0, Count: 1}, workers: workersOf(cfg), started: time.Now()}
	return x.exhaustive()
}

// exhaustive searches every schedule of cfg.Steps decisions (cfg.MaxFault faults at most), reduced unless
// cfg.NoReduction, split into subtrees for the workers and the parts (exhaustive_split.go); on a failure,
// iterative deepening finds the shortest schedule that breaks the same property, which it returns with the
// report.
func (x *exploration) exhaustive() (Report, *outcome) {
	cfg := x.cfg
	var deadline time.Time
	if cfg.Budget > 0 {
		deadline = x.started.Add(cfg.Budget)
	}
	rep := Report{Exhaustive: true, Workers: x.workers, Part: x.part.String(), FailIndex: -1}
	if dporOf(cfg) {
		rep.Workers = 1 // one search (dpor.go)
	}
	res := x.split(cfg.Steps, stopOnAny, deadline, true)
	rep.Schedules, rep.Pruned, rep.DecisionPoints, rep.Exhausted = res.schedules, res.pruned, res.points, res.exhausted
	rep.States = res.states
	rep.Runs = res.schedules + res.pruned
	rep.shared = res.shared
	rep.subtrees, rep.split, rep.done = res.subtrees, res.splitDepth, res.done
	rep.prefixPruned, rep.prefixPoints, rep.roots = res.prefixPruned, res.prefixPoints, res.roots
	fail := res.failure
	if fail == nil || fail.property == "replay" || fail.property == "setup" {
		return rep, fail
	}
	rep.Failed, rep.Property, rep.FailIndex = true, fail.property, res.failSubtree
	rep.failSchedules, rep.failPruned, rep.failPoints = res.failSchedules, res.failPruned, res.failPoints
	rep.FirstFail = time.Since(x.started)
	deepening := 0
	if bound := searchBound(cfg); bound >= 0 {
		fail, deepening = x.fewestPreemptions(fail, bound, deadline)
	} else {
		for depth := 1; depth < fail.explored; depth++ {
			shorter := x.split(depth, fail.property, deadline, false)
			deepening += shorter.schedules + shorter.pruned
			if shorter.failure != nil && shorter.failure.property == fail.property {
				fail = shorter.failure
				break
			}
		}
	}
	rep.Runs += deepening
	rep.shrinkRuns = deepening
	rep.Property, rep.Verdict, rep.Decisions = fail.property, fail.verdict, fail.explored
	return rep, fail
}
