package check

import (
	"fmt"

	"github.com/zkmodel/zkmodel/check/shard"
)

// This file is the portfolio strategy: the random strategy and PCT on the same workers, by run number —
// even runs are the random strategy's run of that number (rapid's draws from seed base+i(i+1)/2), odd runs
// PCT's (its priorities and change points from the same seed). So the runs, the verdict and the failing
// run do not depend on the workers or the shards, as for each strategy alone (sample.go). A failing random
// run is shrunk by rapid; a failing PCT run is reported as found. Report.FoundBy says which it was, and
// Report.PCT states the bound of PCT's runs (half of them).

// Portfolio runs the random strategy and PCT of the given depth by turns (-check.strategy=portfolio, with
// -check.pct.depth=d): a bug one of them is poor at finding, the other may find.
func Portfolio(depth int) Strategy { return portfolioStrategy{depth: depth} }

type portfolioStrategy struct{ depth int }

func (portfolioStrategy) String() string { return shard.Portfolio }

func (p portfolioStrategy) explore(x *exploration) (Report, *outcome) {
	base, fixed := baseSeed(x.cfg)
	run, bound := p.runs(x, base)
	rep, s := x.sampleRuns(base, fixed, run, fmt.Sprintf("portfolio: random on even runs, on odd runs %s", bound))
	rep.PCT = bound
	if s.failOut == nil {
		return rep, nil
	}
	if portfolioPCT(s.fail) {
		rep.FoundBy = shard.PCT
		return rep, s.failOut
	}
	rep.FoundBy = shard.Random
	return rep, x.shrinkFound(&rep, s)
}

// runs makes run i of a search from base: the random strategy's run i when i is even, PCT's when odd.
func (p portfolioStrategy) runs(x *exploration, base uint64) (run func(i int) *outcome, bound *PCTBound) {
	random, _ := Random.(sampler).runs(x, base)
	pct, bound := PCT(p.depth).(sampler).runs(x, base)
	return func(i int) *outcome {
		if portfolioPCT(i) {
			return pct(i)
		}
		return random(i)
	}, bound
}

// portfolioPCT reports whether the portfolio's run i is PCT's (odd) rather than the random strategy's.
func portfolioPCT(i int) bool { return i%2 == 1 }

// pctDepthOf is a strategy's PCT depth; ok is false for a strategy without PCT runs.
func pctDepthOf(s Strategy) (depth int, ok bool) {
	switch s := s.(type) {
	case pctStrategy:
		return s.depth, true
	case portfolioStrategy:
		return s.depth, true
	}
	return 0, false
}

// withPCTDepth is s with its PCT depth set to depth; an error when s has no PCT runs.
func withPCTDepth(s Strategy, depth int) (Strategy, error) {
	switch s.(type) {
	case pctStrategy:
		return PCT(depth), nil
	case portfolioStrategy:
		return Portfolio(depth), nil
	}
	return s, fmt.Errorf("check: a PCT depth applies to the pct and portfolio strategies only, and the strategy is %s: add -check.strategy=pct (or portfolio), or leave the depth out", s)
}
