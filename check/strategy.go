package check

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/zkmodel/zkmodel/check/shard"
)

// Strategy is how an exploration chooses the schedules it runs: rapid's random sampling with shrinking
// (Random, the default), PCT's sampling with a stated bound (PCT), both by turns (Portfolio), the exhaustive
// search of every schedule within a bound (Exhaustive, or Config.Exhaustive), or the one schedule of a trace
// (ReplayTrace). Each lives in a file of its own (random.go, pct.go, portfolio.go, exhaustive.go, replay.go;
// the sampling strategies share sample.go); the scheduler, the workload, the properties and the traces are the
// same for all of them, and so is the Report.
//
// Whatever the strategy, the verdict does not depend on how many workers ran it (Config.Parallel) or into
// how many parts it was split (-check.shard): the runs are numbered in an order fixed by the seed or the
// tree, and the reported failure is the first in that order.
type Strategy interface {
	// String names the strategy as -check.strategy takes it.
	String() string
	// explore runs the exploration and reports what it found, with the failing run if any (its trace not
	// yet written).
	explore(x *exploration) (Report, *outcome)
}

// strategies are the strategies -check.strategy names.
var strategies = []Strategy{Random, PCT(pctDefaultDepth), Portfolio(pctDefaultDepth), Exhaustive}

// ParseStrategy returns the strategy -check.strategy names: "random", "pct", "portfolio" or "exhaustive"
// (PCT's depth is 3; -check.pct.depth sets another).
func ParseStrategy(name string) (Strategy, error) {
	var names []string
	for _, s := range strategies {
		if s.String() == name {
			return s, nil
		}
		names = append(names, s.String())
	}
	return nil, fmt.Errorf("check: unknown strategy %q (known: %s)", name, strings.Join(names, ", "))
}

// exploration is one call of Run or RunZK: what to explore, with how many workers, which part of the
// search, and where progress goes.
type exploration struct {
	t       *testing.T
	kind    clients
	cfg     Config
	part    shard.Part
	workers int
	started time.Time
}

// strategyOf is the strategy cfg asks for: Config.Strategy, else Exhaustive when Config.Exhaustive, else
// Random.
func strategyOf(cfg Config) Strategy {
	switch {
	case cfg.Strategy != nil:
		return cfg.Strategy
	case cfg.Exhaustive:
		return Exhaustive
	}
	return Random
}

// workersOf is Config.Parallel, or GOMAXPROCS when it is 0.
func workersOf(cfg Config) int {
	if cfg.Parallel > 0 {
		return cfg.Parallel
	}
	return runtime.GOMAXPROCS(0)
}

// rateLine formats a progress line's rates: the total and each worker's, in interleavings a second since the
// last line (never negative: counts only grow, and an interval of no time shows no rate).
type rateLine struct {
	last   []int
	lastAt time.Time
}

func (r *rateLine) format(counts []int, now time.Time) string {
	dt := now.Sub(r.lastAt).Seconds()
	if r.last == nil {
		r.last = make([]int, len(counts))
	}
	total := 0.0
	per := make([]string, len(counts))
	for i, n := range counts {
		rate := 0.0
		if dt > 0 && n >= r.last[i] {
			rate = float64(n-r.last[i]) / dt
		}
		total += rate
		per[i] = fmt.Sprintf("%.0f", rate)
	}
	copy(r.last, counts)
	r.lastAt = now
	if len(counts) == 1 {
		return fmt.Sprintf("%.0f/s", total)
	}
	return fmt.Sprintf("%.0f/s (workers %s)", total, strings.Join(per, " "))
}
