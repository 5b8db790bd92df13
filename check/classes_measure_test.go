package check

import (
	"slices"
	"strconv"
	"testing"
	"time"
)

// This file measures what dynamic partial-order reduction (DPOR) could save the preemption-bounded search,
// under the independence relation the depth-bounded search's sleep sets use (independent, in exhaustive.go),
// instead of arguing it.
//
// Two complete schedules are equivalent (Mazurkiewicz) when one is obtained from the other by swapping
// adjacent independent decisions. Any DPOR under that relation — source sets, optimal DPOR, the bounded POR
// of Coons, Musuvathi and McKinley (OOPSLA 2013) — explores at least one schedule of every class that
// holds a schedule within the bound, so the number of distinct classes among the complete schedules the
// unreduced search runs is a lower bound on the schedules any of them would run there (bounded POR may need
// more: its representative must itself fit the bound).
//
// A class is keyed by its partial order. A decision's thread is the client it concerns, or 0 — the
// environment — for a fault, a clock jump or a server's decision, which independent makes dependent on
// everything; a decision is identified by its thread, its occurrence in the thread and its label. Its
// happens-before is a vector clock: for each thread, how many of its decisions precede it in the transitive
// closure of the dependent pairs in the schedule's order. Two schedules have the same key exactly when they
// have the same decisions and order every dependent pair alike, that is when they are equivalent. What each
// decision did (its effect: visible to the properties, clients touched) is read from the run's own history,
// as the sleep sets read it; a relation read from the runs as they happened is what a DPOR would have too
// (so "exactly" holds where equivalent runs show the same effects; countClasses counts the classes whose
// schedules end differently, and the tests require none).
//
// The strict relation (classKey's strict) adds the order the state cache keeps across clients: two steps
// that both had such an event (crossClient) are dependent. The sleep sets' relation lets a lock taken commute
// with another client's change of the tree; the cache does not (unless Config.looseProjection).

// classStep is one decision of a schedule, with what its step did.
type classStep struct {
	label string
	eff   effect
	// cross: the step had an event the state cache keeps in its order across clients (crossClient: one a
	// property reads, or a change of the tree).
	cross bool
}

// stepThread is the thread a decision belongs to: its client, or 0 for the environment (faults, clock jumps,
// the servers' decisions).
func stepThread(label string) int {
	if globalKinds[decisionKind(label)] {
		return 0
	}
	return decisionClient(label)
}

// scheduleSteps is a finished run's decisions before the drain, each with its effect (effectOf on the run's
// history, as the search's sleep sets record it).
func scheduleSteps(out *outcome) []classStep {
	steps := make([]classStep, 0, out.explored)
	start, end := 0, 0 // history[start:end] is the step of the decision being read
	for i, label := range out.decisions[:out.explored] {
		for start < len(out.history) && out.history[start].step < i+1 {
			start++
		}
		for end = max(end, start); end < len(out.history) && out.history[end].step <= i+1; end++ {
		}
		s := classStep{label: label, eff: effectOf(out.history[:end], i+1, label)}
		for _, e := range out.history[start:end] {
			s.cross = s.cross || e.kind != "decision" && crossClient(e)
		}
		steps = append(steps, s)
	}
	return steps
}

// classKey is the key of a schedule's equivalence class: every decision's label and vector clock, thread by
// thread. Two decisions are dependent when independent says they are not independent — and, when strict,
// also when both had events the state cache orders across clients (classStep.cross), so that the classes
// are of the relation the cache keeps.
func classKey(steps []classStep, strict bool) stateKey {
	threads := []int{} // the threads, in the order met
	index := map[int]int{}
	thread := make([]int, len(steps)) // a step's thread's index
	occ := make([]int, len(steps))    // a step's occurrence in its thread
	count := []int{}
	for i, s := range steps {
		t := stepThread(s.label)
		ti, ok := index[t]
		if !ok {
			ti = len(threads)
			index[t] = ti
			threads = append(threads, t)
			count = append(count, 0)
		}
		thread[i], occ[i] = ti, count[ti]
		count[ti]++
	}
	clocks := make([][]int, len(steps))
	for j, b := range steps {
		vc := make([]int, len(threads))
		for i := j - 1; i >= 0; i-- {
			a := steps[i]
			if vc[thread[i]] > occ[i] {
				continue // already before j
			}
			if independent(a.label, a.eff, b.label, b.eff) && !(strict && a.cross && b.cross) {
				continue
			}
			for t, n := range clocks[i] {
				vc[t] = max(vc[t], n)
			}
			vc[thread[i]] = max(vc[thread[i]], occ[i]+1)
		}
		clocks[j] = vc
	}
	// Encoded thread by thread, in ascending thread id, each thread's decisions in order.
	order := slices.Sorted(slices.Values(threads))
	var b []byte
	for _, t := range order {
		b = strconv.AppendInt(append(b, "thread "...), int64(t), 10)
		b = append(b, '\n')
		for j := range steps {
			if threads[thread[j]] != t {
				continue
			}
			b = append(b, steps[j].label...)
			for _, u := range order {
				b = strconv.AppendInt(append(b, ' '), int64(clocks[j][index[u]]), 10)
			}
			b = append(b, '\n')
		}
	}
	return digestOf(b)
}

// classCount is what countClasses found: the complete schedules of the search without reduction, the
// equivalence classes they fall in under the sleep sets' relation and under the strict one (classKey), and
// how many classes hold schedules that end differently (another final state of the model, or another
// verdict) — none, where the relation is one that reordering cannot tell.
type classCount struct {
	schedules, classes, strictClasses int
	failed                            int // schedules that broke a property
	failedMerged                      int // classes of two schedules or more that broke a property
	mixed, strictMixed                int
	exhausted                         bool
}

// classes is the classes of one relation met so far, each with how its first schedule ended and how many
// schedules it has.
type classes struct {
	ends  map[stateKey]stateKey
	size  map[stateKey]int
	mixed map[stateKey]bool
}

func newClasses() *classes {
	return &classes{ends: map[stateKey]stateKey{}, size: map[stateKey]int{}, mixed: map[stateKey]bool{}}
}

func (c *classes) add(k, end stateKey) {
	if first, seen := c.ends[k]; !seen {
		c.ends[k] = end
	} else if first != end {
		c.mixed[k] = true
	}
	c.size[k]++
}

// countClasses searches every complete schedule of cfg's preemption bound without reduction (no state
// cache, no sleep sets), on one worker, and counts the equivalence classes among them. It stops, not
// exhausted, at the deadline.
func countClasses(t *testing.T, kind clients, cfg Config, deadline time.Time) classCount {
	t.Helper()
	if searchBound(cfg) < 0 {
		t.Fatalf("check: %s: classes are counted under a preemption bound, and the configuration asks for the depth-bounded search", cfg.Name)
	}
	loose, strict := newClasses(), newClasses()
	failed, failing := 0, map[stateKey]bool{}
	s := &search{bound: searchBound(cfg)}
	res := s.run(t, kind, cfg, stopOnNone, deadline, func(out *outcome) { // called in turn, run by run
		if out.pruned {
			return
		}
		steps := scheduleSteps(out)
		end, k := digestOf([]byte(out.property+"\n"+out.dump)), classKey(steps, false)
		loose.add(k, end)
		strict.add(classKey(steps, true), end)
		if out.failed() {
			failed++
			failing[k] = true
		}
	})
	merged := 0
	for k := range failing {
		if loose.size[k] > 1 {
			merged++
		}
	}
	return classCount{schedules: res.schedules, classes: len(loose.ends), strictClasses: len(strict.ends), failed: failed, failedMerged: merged,
		mixed: len(loose.mixed), strictMixed: len(strict.mixed), exhausted: res.exhausted}
}
