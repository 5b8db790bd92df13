package check

import (
	"slices"
	"time"
)

// This file bounds the exhaustive search by preemptions, as CHESS does (Musuvathi and Qadeer, PLDI 2007):
// instead of every sequence of the first Steps decisions followed by one fixed drain, it enumerates every
// complete schedule — to quiescence, with no depth cut-off — in which the scheduler preempts a runnable
// client at most Config.Preemptions times, with at most Config.MaxFault faults anywhere in the run.
//
// The scheduler's threads are the clients: a decision concerns the client its label names ("apply c1",
// "deliver c2", "cs-write c3"), or none (0: a server's start). The running client is the one of the last
// progress decision. Switching to another client while the running one still has a progress choice is a
// preemption; switching when it has none (it waits on a watch, or is done) is free. Faults (a lost request
// or reply, a dropped connection, an expiry, a clock jump, a cancellation, a server's stop) are the
// environment's, bounded by MaxFault, and are no preemption. A bug that needs c preemptions to show is found
// in a bound of c, whatever the schedule's length — most concurrency bugs need one or two.

// Sleep sets are off under a preemption bound. The two do not compose: a sleeping decision b stands for the
// schedules that take it after its sibling a, which the search explored first — but a then b may cost one
// preemption more than b then a, so a schedule within the bound can be covered only by one the bound cut.
// Measured: on rwlock-mutant-b (two clients, one preemption), the search with sleep sets found fencing
// violated, the one without found fencing and safety. The preemption-bounded search is therefore a plain
// depth-first search of every complete schedule within the bound: sound by construction, and the bound
// itself is what keeps it small.
// Unpreempted, as Config.Preemptions, asks for the complete runs of no preemption at all (the zero value
// asks for the depth-bounded search).
const Unpreempted = -1

// searchBound is the preemption bound cfg asks for, or -1 for the depth-bounded search.
func searchBound(cfg Config) int {
	switch {
	case cfg.Preemptions > 0:
		return cfg.Preemptions
	case cfg.Preemptions == Unpreempted:
		return 0
	}
	return -1
}

// completeLimit bounds a complete run's decisions: one that has not quiesced by then is left to the fair
// drain, which judges it a livelock if it does not quiesce either.
const completeLimit = 600

// preemption is a run's place in the preemption bound: the running client and the preemptions so far.
type preemption struct {
	running  int  // the client of the last progress decision
	started  bool // a progress decision has been taken
	preempts int
	// runnable says whether the running client had a progress choice at the last decision point.
	runnable bool
	// progress is the labels of the last decision point that were progress choices (a few: a slice is
	// quicker than a map at every point).
	progress []string
}

// allowed is the choices a decision point offers within the bound: every choice, unless the preemptions
// are spent and the running client can go on, in which case only its own progress choices and the faults.
// The first nProgress labels are progress choices, the rest faults.
func (p *preemption) allowed(labels []string, nProgress, bound int) []string {
	p.runnable = false
	p.progress = append(p.progress[:0], labels[:nProgress]...)
	for _, l := range labels[:nProgress] {
		if p.started && decisionClient(l) == p.running {
			p.runnable = true
		}
	}
	if !p.runnable || p.preempts < bound {
		return labels
	}
	var out []string
	for i, l := range labels {
		if i >= nProgress || decisionClient(l) == p.running {
			out = append(out, l)
		}
	}
	return out
}

// isProgressChoice reports whether label was a progress choice of the last decision point.
func (p *preemption) isProgressChoice(label string) bool { return slices.Contains(p.progress, label) }

// taken moves the bound past the decision label.
func (p *preemption) taken(label string) {
	if !p.isProgressChoice(label) {
		return // a fault: the running client stays the running one
	}
	c := decisionClient(label)
	if p.started && c != p.running && p.runnable {
		p.preempts++
	}
	p.running, p.started = c, true
}

// fewestPreemptions reduces a failure of a preemption-bounded search: the smallest bound under which a
// schedule breaks the same property, the first such schedule in the tree's order — and when that bound is
// no preemption and the search has no faults, the shortest of them (every such schedule searched). It
// returns that schedule and the runs it took.
func (x *exploration) fewestPreemptions(fail *outcome, bound int, deadline time.Time) (*outcome, int) {
	runs := 0
	level := bound
	for c := 0; c < bound; c++ {
		y := x.withBound(c)
		res := y.split(0, fail.property, deadline, false)
		runs += res.schedules + res.pruned
		if res.failure != nil && res.failure.property == fail.property {
			fail, level = res.failure, c
			break
		}
	}
	if level > 0 || x.cfg.Faults != 0 {
		return fail, runs // the first in the tree's order: a search of the whole level for the shortest costs too much
	}
	// Every schedule without preemption or fault, for the shortest.
	y := x.withBound(level)
	every := y.cfg
	every.DPOR = false                                                 // nor DPOR, which leaves reorderings out
	all := exhaust(y.t, y.kind, every, 0, false, stopOnNone, deadline) // no state cache: it may cut a shorter schedule
	runs += all.schedules + all.pruned
	if sh := all.shortest[fail.property]; sh != nil && sh.explored < fail.explored {
		fail = sh
	}
	return fail, runs
}

// withBound is the exploration with the preemption bound c.
func (x *exploration) withBound(c int) *exploration {
	y := *x
	y.cfg.Preemptions = c
	if c == 0 {
		y.cfg.Preemptions = Unpreempted
	}
	return &y
}
