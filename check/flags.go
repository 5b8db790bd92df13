package check

import (
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkmodel/zkmodel/check/shard"
)

// The checker's own flags, honoured by Run in any test binary that imports package check (rapid's flags,
// -rapid.checks, -rapid.seed and the rest, work as well):
//
//	-check.replay=FILE   Run replays the trace in FILE instead of exploring: it prints the replayed trace and
//	                     fails as the recorded run did, or says "this schedule now passes" and passes. A
//	                     trace of another variant than the Config's Name fails the test.
//	-check.traces=DIR    where failure traces are written (overrides Config.TraceDir)
//	-check.n=N           interleavings to explore (overrides Config.Checks; rapid's -rapid.checks wins over both)
//	-check.shrink=D      how long rapid may shrink a failure (overrides Config.Shrink)
//	-check.parallel=N    workers running schedules at once (overrides Config.Parallel; default GOMAXPROCS)
//	-check.strategy=S    random, pct, portfolio or exhaustive (overrides Config.Strategy)
//	-check.pct.depth=D   the depth of PCT's runs, 1 to 10 (default 3), with -check.strategy=pct or portfolio
//	-check.shard=i/n     run only the i-th of n disjoint parts of the search (from 0), for spreading one
//	                     search over processes or machines; merge the parts with `zkmodel merge`
//	-check.report=FILE   write what the search (or its part) found as JSON, for `zkmodel merge`
//	-check.idorders      with the exhaustive search, search every order of the clients' node ids (sets
//	                     Config.NodeIDOrders: Clients! searches of the bound, at most 6 clients; Run only)
//	-check.dpor          with the preemption-bounded exhaustive search, reduce by DPOR instead of the state
//	                     cache (sets Config.DPOR; one search, no -check.shard)
//
// For example, after a failure of TestMyLock:
//
//	go test -run '^TestMyLock$' -check.replay=/tmp/zkmodel-traces/mylock-liveness.trace
var (
	flagReplay = flag.String("check.replay", "", "check.Run: replay this trace file (of the Config's Name) instead of exploring")
	flagTraces = flag.String("check.traces", "", "check.Run: write failure traces to this directory (overrides Config.TraceDir)")
	flagN      = flag.Int("check.n", 0, "check.Run: interleavings to explore (overrides Config.Checks)")
	flagShrink = flag.Duration("check.shrink", 0, "check.Run: how long rapid may shrink a failure (overrides Config.Shrink)")

	flagParallel = flag.Int("check.parallel", 0, "check.Run: workers running schedules at once (overrides Config.Parallel; default GOMAXPROCS)")
	flagStrategy = flag.String("check.strategy", "", "check.Run: the search strategy, random, pct, portfolio or exhaustive (overrides Config.Strategy)")
	flagPCTDepth = flag.Int("check.pct.depth", 0, "check.Run: the depth d of PCT's runs, 1 to 10 (default 3), with -check.strategy=pct or portfolio")
	flagShard    = flag.String("check.shard", "", "check.Run: run only part i of n of the search, as i/n counting from 0 (merge the parts' -check.report files with zkmodel merge)")
	flagReport   = flag.String("check.report", "", "check.Run: write what the search (or its -check.shard part) found as JSON to this file, for zkmodel merge")
	flagDPOR     = flag.Bool("check.dpor", false, "check.Run: with the preemption-bounded exhaustive search, reduce by DPOR instead of the state cache (sets Config.DPOR)")
	flagIDOrders = flag.Bool("check.idorders", false, "check.Run: with the exhaustive search, search every order of the clients' node ids (sets Config.NodeIDOrders)")
)

// fromFlags applies the -check.* flags the user set to cfg.
func fromFlags(cfg Config) Config {
	if *flagTraces != "" {
		cfg.TraceDir = *flagTraces
	}
	if *flagN > 0 {
		cfg.Checks = *flagN
	}
	if *flagShrink > 0 {
		cfg.Shrink = *flagShrink
	}
	if *flagParallel > 0 {
		cfg.Parallel = *flagParallel
	}
	if *flagIDOrders {
		cfg.NodeIDOrders = true
	}
	if *flagDPOR {
		cfg.DPOR = true
	}
	return cfg
}

// strategyFlag applies -check.strategy and -check.pct.depth to cfg, or says what is wrong with them.
func strategyFlag(cfg Config) (Config, error) {
	if *flagStrategy != "" {
		s, err := ParseStrategy(*flagStrategy)
		if err != nil {
			return cfg, fmt.Errorf("-check.strategy: %w", err)
		}
		cfg.Strategy = s
	}
	if !rapidFlag("check.pct.depth") {
		return cfg, nil
	}
	if err := validDepth(*flagPCTDepth); err != nil {
		return cfg, fmt.Errorf("-check.pct.depth: %w", err)
	}
	s, err := withPCTDepth(strategyOf(cfg), *flagPCTDepth)
	if err != nil {
		return cfg, fmt.Errorf("-check.pct.depth: %w", err)
	}
	cfg.Strategy = s
	return cfg, nil
}

// flagPart is the part of the search -check.shard names (the whole when unset); a malformed value fails t.
func flagPart(t *testing.T) shard.Part {
	t.Helper()
	p, err := shard.ParsePart(*flagShard)
	if err != nil {
		t.Fatalf("check: -check.shard: %v", err)
	}
	return p
}

// writeShardReport writes rep to -check.report's file, if set, as the part of the search it is.
func writeShardReport(t *testing.T, x *exploration, strategy Strategy, rep *Report) {
	t.Helper()
	if *flagReport == "" {
		return
	}
	if err := shardReportOf(x, strategy, rep).Write(*flagReport); err != nil {
		t.Errorf("check: -check.report: %v", err)
	}
}

// shardReportOf is rep as the report of the part of the search x ran.
func shardReportOf(x *exploration, strategy Strategy, rep *Report) *shard.Report {
	cfg := x.cfg
	out := &shard.Report{
		Variant: cfg.Name, Strategy: strategy.String(), Part: x.part,
		Search: fmt.Sprintf("clients %d, rounds %d, steps %d, faults %s, max-faults %d, deadline %s, primitive %s, leases %d, kind %s, reduction %t",
			cfg.Clients, cfg.Rounds, cfg.Steps, cfg.Faults, cfg.MaxFault, cfg.Deadline, cfg.Primitive, cfg.Leases, x.kind.name, !cfg.NoReduction),
		Seed: rep.Seed, Total: rep.total, From: rep.from, To: rep.to, Ran: rep.ran, Complete: rep.complete,
		Injected: rep.Injected, PerRun: rep.perRun, SharedFirst: rep.sharedFirst,
		SplitDepth: rep.split, Subtrees: rep.subtrees, Done: rep.done, Roots: rep.roots,
		PrefixPruned: rep.prefixPruned, PrefixPoints: rep.prefixPoints,
		ElapsedSecs: rep.Elapsed.Seconds(), Workers: x.workers,
	}
	if rep.Exhaustive {
		out.Depth = cfg.Steps
		out.Complete = rep.Exhausted || !x.part.Whole() && len(rep.done) == ownedCount(x.part, rep.subtrees) && !rep.Failed
	}
	if d, ok := pctDepthOf(strategy); ok {
		out.Search += fmt.Sprintf(", pct-depth %d", d) // parts of other depths are other searches
	}
	if prop, verdict := reachability(cfg, -12345, false); prop != "" {
		out.Reach, out.ReachVerdict = prop, strings.Replace(verdict, "-12345", "%d", 1)
	}
	if rep.Failed && rep.Trace != "" || rep.Failed && !isReachability(rep.Property) {
		out.Failure = &shard.Failure{Index: rep.FailIndex, Property: rep.Property, Verdict: rep.Verdict, Trace: rep.Trace,
			Decisions: rep.Decisions, Runs: rep.shrinkRuns, Schedules: rep.failSchedules, Pruned: rep.failPruned, Points: rep.failPoints}
	}
	return out
}

// ownedCount is how many of n subtrees the part owns.
func ownedCount(p shard.Part, n int) int {
	c := 0
	for k := 0; k < n; k++ {
		if p.Owns(k) {
			c++
		}
	}
	return c
}

// shrinkDefault is Config.Shrink's default.
const shrinkDefault = 20 * time.Second
