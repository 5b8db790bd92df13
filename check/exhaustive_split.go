package check

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/zkmodel/zkmodel/check/shard"
)

// This file splits the exhaustive search among workers and parts. The tree of decisions is cut at a fixed
// depth (splitDepth, or less for a shallow bound): a search of that depth enumerates the subtrees' roots in
// the tree's order, each with its path's frames as the whole search has them when it enters the subtree —
// the options, the siblings already explored and what they did, the sleep sets — so that a search of a
// subtree from its root, backtracking no higher, runs exactly the schedules the whole search runs there, in
// the same order. Workers take the subtrees in order; the first failure in the tree's order is the one
// reported, and the counts are what the whole search had counted when it met it (the subtrees before it,
// the part of its own subtree up to it, and the decision points and pruned runs above the split up to its
// root). A run of the root search that ends before the split depth is a schedule of the whole search, and a
// subtree of one schedule.

// splitDepth is where the tree is cut: deep enough for tens of subtrees per worker on the mutex's bounds,
// shallow enough that enumerating the roots costs little beside the subtrees.
const splitDepth = 3

// subtreeRoot is one subtree: the path to its root, or the one schedule it is when the root search's run
// ended above the split.
type subtreeRoot struct {
	stack  []*frame
	single *outcome
	counts shard.Root
}

// splitResult is an exhaustiveResult with what the parts' reports need.
type splitResult struct {
	exhaustiveResult
	splitDepth, subtrees                  int
	done                                  []shardSubtree
	roots                                 []shard.Root
	prefixPruned, prefixPoints            int
	failSubtree                           int
	failSchedules, failPruned, failPoints int
}

// shardSubtree is what a part reports of a subtree it finished.
type shardSubtree = shard.Subtree

func cloneStack(stack []*frame) []*frame {
	out := make([]*frame, len(stack))
	for i, f := range stack {
		out[i] = &frame{options: f.options, next: f.next, explored: slices.Clone(f.explored), effects: maps.Clone(f.effects), sleep: maps.Clone(f.sleep), tracked: f.tracked, dp: f.dp.clone()}
	}
	return out
}

// roots enumerates the subtrees at depth d, in the tree's order.
func (x *exploration) roots(depth, d int, reduce bool, deadline time.Time) (roots []subtreeRoot, s *search, complete bool) {
	s = &search{reduce: reduce, depth: d, bound: searchBound(x.cfg)}
	if d == 0 {
		return []subtreeRoot{{}}, s, true
	}
	res := s.run(x.t, x.kind, x.cfg, stopOnNone, deadline, func(out *outcome) {
		if out.pruned {
			return
		}
		root := subtreeRoot{counts: shard.Root{Points: s.points, Pruned: s.pruned}}
		if out.explored < d {
			root.single = out // it ended above the split: a schedule of the whole search
		} else {
			root.stack = cloneStack(s.stack[:d])
		}
		roots = append(roots, root)
	})
	if res.failure != nil && (res.failure.property == "replay" || res.failure.property == "setup") {
		return []subtreeRoot{{single: res.failure}}, s, false
	}
	return roots, s, res.exhausted
}

// split searches every schedule of depth decisions, split into subtrees that x.workers workers take in
// order; only the part's own subtrees when owned (the main search), all of them otherwise (the iterative
// deepening, which reduces a failure already found). It stops at the first failure in the tree's order
// whose property stopOn names (stopOnAny: any).
func (x *exploration) split(depth int, stopOn string, deadline time.Time, owned bool) splitResult {
	if dporOf(x.cfg) {
		return x.dporSearch(stopOn, deadline)
	}
	reduce := !x.cfg.NoReduction && searchBound(x.cfg) < 0 // sleep sets are off under a preemption bound (preemption.go)
	d := max(min(splitDepth, depth-1), 0)
	if searchBound(x.cfg) >= 0 {
		depth, d = 0, splitDepth // complete runs: no depth, the split where the depth-bounded one cuts
	}
	roots, prefix, complete := x.roots(depth, d, reduce, deadline)
	res := splitResult{splitDepth: d, subtrees: len(roots), failSubtree: -1}
	res.violated = map[string]*outcome{}
	res.prefixPruned, res.prefixPoints = prefix.pruned, prefix.points
	for _, r := range roots {
		res.roots = append(res.roots, r.counts)
	}
	if !complete && len(roots) == 1 && roots[0].single != nil && roots[0].single.failed() {
		res.failure = roots[0].single // the search could not even enumerate: setup or replay
		return res
	}

	var (
		mu      sync.Mutex
		next    int
		lowest  = len(roots) // the lowest failing subtree found
		results = make([]*exhaustiveResult, len(roots))
		stopped bool
		counts  = make([]int, x.workers)
	)
	stopProgress := x.splitProgress(depth, &mu, counts, results)
	var wg sync.WaitGroup
	for w := 0; w < x.workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				for next < lowest && owned && !x.part.Owns(next) {
					next++
				}
				k := next
				if k >= lowest || stopped {
					mu.Unlock()
					return
				}
				next++
				mu.Unlock()
				var r exhaustiveResult
				if root := roots[k]; root.single != nil {
					r = exhaustiveResult{schedules: 1, exhausted: true, shared: root.single.shared, violated: map[string]*outcome{}}
					if root.single.failed() && (stopOn == stopOnAny || stopOn == root.single.property) {
						r.failure, r.exhausted = root.single, false
					}
				} else {
					s := &search{reduce: reduce, depth: depth, stack: cloneStack(root.stack), floor: d, bound: searchBound(x.cfg)}
					if cachingOf(x.kind, x.cfg, !x.cfg.NoReduction) {
						s.cache = newStateCache() // one a subtree: the counts do not depend on the workers
					}
					r = s.run(x.t, x.kind, x.cfg, stopOn, deadline, func(*outcome) {
						mu.Lock()
						counts[w]++
						mu.Unlock()
					})
				}
				mu.Lock()
				results[k] = &r
				if r.failure != nil && k < lowest {
					lowest = k
				}
				if r.failure == nil && !r.exhausted {
					stopped = true // the deadline passed
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	stopProgress()

	// What one process would have counted: every subtree before the lowest failure (or all), then the
	// failing subtree up to its failure.
	res.exhausted = complete
	res.pruned, res.points = prefix.pruned, prefix.points
	if lowest < len(roots) {
		res.pruned, res.points = roots[lowest].counts.Pruned, roots[lowest].counts.Points
	}
	for k := 0; k < min(lowest, len(roots)); k++ {
		r := results[k]
		if owned && !x.part.Owns(k) {
			continue
		}
		if r == nil || !r.exhausted {
			res.exhausted = false
			continue
		}
		res.schedules += r.schedules
		res.pruned += r.pruned
		res.points += r.points
		res.states += r.states
		res.shared = res.shared || r.shared
		res.done = append(res.done, shardSubtree{Index: k, Schedules: r.schedules, Pruned: r.pruned, Points: r.points, Shared: r.shared})
	}
	if lowest < len(roots) {
		r := results[lowest]
		res.exhausted = false
		res.failure, res.failSubtree = r.failure, lowest
		res.failSchedules, res.failPruned, res.failPoints = r.schedules, r.pruned, r.points
		res.schedules += r.schedules
		res.pruned += r.pruned
		res.points += r.points
		res.states += r.states
		res.shared = res.shared || r.shared
		res.violated[r.failure.property] = r.failure
	}
	if !x.part.Whole() && owned {
		res.exhausted = false // a part covers only its own subtrees: the merge says whether the whole was
	}
	return res
}

// splitProgress prints a line a second while a split search runs, if cfg.Progress is set.
func (x *exploration) splitProgress(depth int, mu *sync.Mutex, counts []int, results []*exhaustiveResult) (stop func()) {
	cfg := x.cfg
	if cfg.Progress == nil {
		return func() {}
	}
	rates := &rateLine{lastAt: time.Now()}
	return progressTicker(func() {
		mu.Lock()
		c := append([]int(nil), counts...)
		done := 0
		for _, r := range results {
			if r != nil {
				done++
			}
		}
		mu.Unlock()
		total := 0
		for _, n := range c {
			total += n
		}
		bound := fmt.Sprintf("depth %d", depth)
		if b := searchBound(cfg); b >= 0 {
			bound = fmt.Sprintf("complete runs, %s", plural(b, "preemption"))
		}
		fmt.Fprintf(cfg.Progress, "  %s: exhaustive, %s: %d runs, %d of %d subtrees done, %s, %s\n",
			cfg.Name, bound, total, done, len(results), rates.format(c, time.Now()), time.Since(x.started).Round(time.Second))
	})
}
