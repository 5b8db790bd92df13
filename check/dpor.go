package check

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zkmodel/zkmodel/check/shard"
)

// This file is dynamic partial-order reduction for the preemption-bounded search (Config.DPOR): bounded
// partial-order reduction, BPOR (Coons, Musuvathi and McKinley, OOPSLA 2013), which is Flanagan and
// Godefroid's DPOR (POPL 2005) made to respect a preemption bound.
//
// The search no longer tries every client at every decision point. A point starts with one client — the
// running one if it can go on (no preemption), else the first the scheduler offers — and every fault and
// server-wide choice (the environment's: they are not a client's steps, so no race would ever add them).
// After each complete run, the search looks at the run's decisions for races: two decisions of different
// clients, dependent (the sleep sets' relation, exhaustive.go, from what each step did in this run), with
// no chain of dependent decisions between them. For each race, the later decision's client must also be tried
// where the earlier one was taken, so the two are explored in the other order too: it is added to that
// point's backtrack set (all its choices there), or every choice there when the client had none. Under a
// preemption bound, taking that client there may be a preemption the bound no longer allows, while taking
// it where the earlier decision's client took over (the last switch of clients before it) costs nothing
// more: BPOR's conservative point, where the client is added too. A point is done when every choice in
// its backtrack set has been explored; races found later may add to the sets of points still on the path.
//
// Sleep sets stay off (they do not compose with the bound, preemption.go) and so does the state cache: a
// run cut at an explored state would hide the races of its continuation. DPOR is one search, not split
// among workers or parts: races found deep in the tree add choices near its root, so its subtrees are not
// known in advance. It needs no state of the model, only what each step did, so it reduces RunZK's
// searches (go-zookeeper's clients, which the cache cannot hash) as well as Run's.
//
// The relation is the sleep sets' (independent), the one the depth-bounded search has used all along: the
// properties' verdicts survive swapping its independent steps — TestClassesEndAlike shows every
// schedule of a class ending in the same state with the same verdict. Soundness is shown as the state
// cache's is: TestStateCacheAgreesWithFullSearch (two clients with one preemption, or one fault) and
// TestDPORAgreesUnderTwoPreemptions search the recipe, every primitive and every mutant with DPOR and
// without any reduction, and require the same violated properties, the same reachability of the sharing
// and the same set of final states of the model (TestDPORAgreesOverTheWire on go-zookeeper's clients).
// Without the conservative point they do not agree: DPOR then misses final states of the recipe with one
// fault.

// depInfo is what independence reads of a decision, computed once a run (independent's terms).
type depInfo struct {
	client                                    int
	global, shared, cs, visible, touchesWorld bool
	touched                                   []int
}

func depInfoOf(label string, eff effect) depInfo {
	kind := decisionKind(label)
	return depInfo{
		client:       decisionClient(label),
		global:       globalKinds[kind],
		shared:       sharedKinds[kind],
		cs:           strings.HasPrefix(kind, "cs-"),
		visible:      eff.visible,
		touchesWorld: slices.Contains(eff.touched, 0),
		touched:      eff.touched,
	}
}

// independentOf reports whether decisions a and b commute (see independent).
func (a depInfo) independentOf(b depInfo) bool {
	switch {
	case a.client == 0 || b.client == 0 || a.client == b.client:
		return false
	case a.global || b.global:
		return false
	case a.shared && b.shared:
		return false
	case a.cs && b.cs:
		return false
	case a.visible && b.visible:
		return false
	case slices.Contains(a.touched, b.client) || slices.Contains(b.touched, a.client):
		return false
	case a.touchesWorld || b.touchesWorld:
		return false
	}
	return true
}

// dporPoint is a decision point's part in DPOR: its options' clients, which of them the search must explore,
// and which it has.
type dporPoint struct {
	client    []int  // each option's client (0: none)
	progress  []bool // each option is a client's progress choice (not a fault)
	offered   []int  // the clients with a progress choice here before the bound cut any
	running   int    // the running client before this point; -1 before the first progress decision
	backtrack []bool // the options to explore here (frame.explored holds those explored)
}

// newDPORPoint is a point offering options (of which p's last point's progress labels are the progress
// choices): its backtrack set is the running client's choices if it can go on, else the first client's,
// and every choice of the environment.
func newDPORPoint(options []string, p *preemption) *dporPoint {
	dp := &dporPoint{
		client:    make([]int, len(options)),
		progress:  make([]bool, len(options)),
		running:   -1,
		backtrack: make([]bool, len(options)),
	}
	if p.started {
		dp.running = p.running
	}
	for _, l := range p.progress {
		if c := decisionClient(l); !slices.Contains(dp.offered, c) {
			dp.offered = append(dp.offered, c)
		}
	}
	runnable, first := false, -1
	for i, l := range options {
		dp.client[i] = decisionClient(l)
		dp.progress[i] = slices.Contains(p.progress, l)
		switch {
		case !dp.progress[i] || dp.client[i] == 0:
			dp.backtrack[i] = true // the environment's: always explored
		case dp.client[i] == dp.running:
			runnable = true
		case first < 0:
			first = dp.client[i]
		}
	}
	if runnable {
		dp.add(dp.running) // going on costs no preemption
	} else if first >= 0 {
		dp.add(first)
	}
	return dp
}

// add puts client c's progress choices in the backtrack set; it reports whether c had any.
func (dp *dporPoint) add(c int) bool {
	had := false
	for i, oc := range dp.client {
		if dp.progress[i] && oc == c {
			dp.backtrack[i], had = true, true
		}
	}
	return had
}

// addRace makes the point explore client c: its choices here, or every choice when c had none offered (a
// client that is offered one the bound cut is left to the conservative point).
func (dp *dporPoint) addRace(c int) {
	if dp.add(c) || slices.Contains(dp.offered, c) {
		return
	}
	for i := range dp.backtrack {
		dp.backtrack[i] = true
	}
}

// advance moves f to the first option of its backtrack set not explored yet; false when none is left.
func (dp *dporPoint) advance(f *frame) bool {
	if f.next >= 0 {
		f.explored = append(f.explored, f.chosen())
	}
	for i, o := range f.options {
		if dp.backtrack[i] && !slices.Contains(f.explored, o) {
			f.next = i
			return true
		}
	}
	return false
}

// switched reports whether the point's decision made another client the running one (or the first).
func (dp *dporPoint) switched(next int) bool {
	return dp.progress[next] && dp.client[next] != 0 && dp.client[next] != dp.running
}

// addRaces adds to the path's backtrack sets what the races of the run that just ended call for: the run's
// decisions are the path's, and those before s.fresh were decided, with their races, by earlier runs.
func (s *search) addRaces() {
	path := s.stack
	for len(path) > 0 && path[len(path)-1].next < 0 {
		path = path[:len(path)-1]
	}
	n := len(path)
	info := s.raceInfo[:0]
	for _, f := range path {
		info = append(info, depInfoOf(f.chosen(), f.effects[f.chosen()]))
	}
	// before[j] is the set of decisions that happen before decision j: the transitive closure of
	// dependence in the run's order, a bit per decision. Both buffers serve the search's next runs too.
	words := (n + 63) / 64
	before := slices.Grow(s.raceBefore[:0], n*words)[:n*words]
	clear(before)
	s.raceInfo, s.raceBefore = info, before
	for j := 0; j < n; j++ {
		bj := before[j*words : (j+1)*words]
		for i := j - 1; i >= 0; i-- {
			if info[i].independentOf(info[j]) {
				continue
			}
			if bj[i/64]&(1<<(i%64)) == 0 {
				// i happens before j directly, through no other decision: a race if the clients differ.
				if j >= s.fresh && info[i].client != info[j].client {
					s.race(path, i, j)
				}
				bj[i/64] |= 1 << (i % 64)
				for w, b := range before[i*words : (i+1)*words] {
					bj[w] |= b
				}
			}
		}
	}
}

// race makes the search try decision j's client at decision i, and at the last switch of clients before i.
func (s *search) race(path []*frame, i, j int) {
	fj := path[j]
	if !fj.dp.progress[fj.next] || fj.dp.client[fj.next] == 0 {
		return // the environment's choices are explored at every point
	}
	c := fj.dp.client[fj.next]
	path[i].dp.addRace(c)
	for k := i; k >= 0; k-- {
		if f := path[k]; f.dp.switched(f.next) {
			if k != i {
				f.dp.addRace(c)
			}
			return
		}
	}
}

// clone is a copy of the point for another search's path (nil for nil).
func (dp *dporPoint) clone() *dporPoint {
	if dp == nil {
		return nil
	}
	c := *dp
	c.backtrack = slices.Clone(dp.backtrack)
	return &c
}

// dporOf reports whether cfg's exhaustive search is DPOR's: Config.DPOR, under a preemption bound.
func dporOf(cfg Config) bool { return cfg.DPOR && searchBound(cfg) >= 0 && !cfg.NoReduction }

// validDPOR says why Config.DPOR (or -check.dpor) cannot apply to this exploration, if it cannot: it is a
// way of the preemption-bounded exhaustive search, with reduction, of a whole search.
func validDPOR(cfg Config, strategy Strategy, part shard.Part) error {
	if !cfg.DPOR {
		return nil
	}
	switch strategy.(type) {
	case replayStrategy: // a trace is one schedule, however it was found
		return nil
	case exhaustiveStrategy:
	default:
		return fmt.Errorf("check: %s: Config.DPOR (-check.dpor) is a reduction of the exhaustive search (Config.Exhaustive or -check.strategy=exhaustive), and this search is %s", cfg.Name, strategy)
	}
	if searchBound(cfg) < 0 {
		return fmt.Errorf("check: %s: Config.DPOR (-check.dpor) needs a preemption bound (Config.Preemptions 1 or more, or Unpreempted): the depth-bounded search reduces by sleep sets", cfg.Name)
	}
	if cfg.NoReduction {
		return fmt.Errorf("check: %s: Config.DPOR (-check.dpor) and Config.NoReduction ask for a reduction and for none: set one", cfg.Name)
	}
	if !part.Whole() || *flagReport != "" {
		return fmt.Errorf("check: %s: Config.DPOR (-check.dpor) runs one search in this process — races found deep in the tree add choices near its root, so it has no subtrees to share out: it does not take -check.shard or -check.report", cfg.Name)
	}
	return nil
}

// dporSearch is the DPOR search of the whole bound, in the shape of a split search of one subtree; stopOn
// and deadline as split's.
func (x *exploration) dporSearch(stopOn string, deadline time.Time) splitResult {
	var (
		mu      sync.Mutex
		counts  = []int{0}
		results = []*exhaustiveResult{nil}
	)
	stop := x.splitProgress(0, &mu, counts, results)
	s := &search{bound: searchBound(x.cfg), dpor: true}
	r := s.run(x.t, x.kind, x.cfg, stopOn, deadline, func(*outcome) {
		mu.Lock()
		counts[0]++
		mu.Unlock()
	})
	stop()
	res := splitResult{exhaustiveResult: r, subtrees: 1, roots: []shard.Root{{}}, failSubtree: -1}
	switch {
	case r.failure != nil:
		res.failSubtree = 0
		res.failSchedules, res.failPruned, res.failPoints = r.schedules, r.pruned, r.points
	case r.exhausted:
		res.done = []shardSubtree{{Index: 0, Schedules: r.schedules, Pruned: r.pruned, Points: r.points, Shared: r.shared}}
	}
	return res
}
