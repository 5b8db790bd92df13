package check

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkmodel/zkmodel/check/shard"
)

// TestPCTSameSeedSameRun: a PCT run is a function of its seed — the same seed makes the same decisions and
// the same history, byte for byte — and different seeds make different runs.
func TestPCTSameSeedSameRun(t *testing.T) {
	v, err := VariantByName("mutant-b-ignore-gone")
	if err != nil {
		t.Fatal(err)
	}
	x := testExploration(t, v, v.Config)
	bound := x.calibratePCT(3)
	if again := x.calibratePCT(3); again != bound {
		t.Fatalf("calibration measured %+v, then %+v", bound, again)
	}
	if bound.Steps < 2 || bound.Threads != 4 { // 3 clients and the ensemble: the row has every fault
		t.Fatalf("bound %+v: want k ≥ 2 and n = 4", bound)
	}
	distinct := map[string]bool{}
	for seed := uint64(1); seed <= 5; seed++ {
		a, b := x.runPCT(bound, seed), x.runPCT(bound, seed)
		if !slices.Equal(a.decisions, b.decisions) || a.historyText() != b.historyText() {
			t.Fatalf("seed %d: two runs differ:\n%s\n---\n%s", seed, strings.Join(a.decisions, "\n"), strings.Join(b.decisions, "\n"))
		}
		distinct[strings.Join(a.decisions, "\n")] = true
	}
	if len(distinct) < 3 {
		t.Errorf("5 seeds made %d distinct runs: PCT draws nothing from its seed", len(distinct))
	}
}

// TestPCTGivesTheSameVerdictForAnyWorkers: a PCT search and a portfolio search from one seed report the same
// failing run, property, runs and faults with 1, 2 or 3 workers — on a mutant they catch and on the recipe,
// which passes.
func TestPCTGivesTheSameVerdictForAnyWorkers(t *testing.T) {
	for _, s := range []Strategy{PCT(3), Portfolio(3)} {
		for _, name := range []string{"mutant-b-ignore-gone", "recipe"} {
			v, err := VariantByName(name)
			if err != nil {
				t.Fatal(err)
			}
			var first Report
			for _, workers := range []int{1, 2, 3} {
				cfg := v.Config
				cfg.Strategy, cfg.Checks, cfg.Seed, cfg.Parallel, cfg.Shrink, cfg.TraceDir = s, 60, 11, workers, time.Second, t.TempDir()
				rep := exploreQuietly(t, v, cfg)
				if rep.PCT == nil || rep.PCT.Depth != 3 || !strings.Contains(named(rep, cfg).String(), "; PCT d=3: a depth-3 bug is found with probability ≥ 1/") {
					t.Fatalf("%s %s: the report states no PCT bound: %v", s, name, named(rep, cfg))
				}
				if rep.Failed && (rep.FoundBy == "pct") != (s.String() == "pct" || rep.FailIndex%2 == 1) {
					t.Errorf("%s %s: run %d failed, found by %q: a PCT search's runs are PCT's, a portfolio's odd runs", s, name, rep.FailIndex, rep.FoundBy)
				}
				if workers == 1 {
					first = rep
					if (v.Expect != "") != rep.Failed {
						t.Fatalf("%s %s: failed %v with one worker (expect %q)", s, name, rep.Failed, v.Expect)
					}
					continue
				}
				if rep.Failed != first.Failed || rep.FailIndex != first.FailIndex || rep.Property != first.Property || rep.FoundBy != first.FoundBy ||
					rep.Runs-rep.shrinkRuns != first.Runs-first.shrinkRuns || !sameCounts(rep.Injected, first.Injected) || *rep.PCT != *first.PCT {
					t.Errorf("%s %s: %d workers: failed %v at run %d (%s, by %s), %d runs, faults %v, %v; one worker: failed %v at run %d (%s, by %s), %d runs, faults %v, %v",
						s, name, workers, rep.Failed, rep.FailIndex, rep.Property, rep.FoundBy, rep.Runs-rep.shrinkRuns, rep.Injected, rep.PCT,
						first.Failed, first.FailIndex, first.Property, first.FoundBy, first.Runs-first.shrinkRuns, first.Injected, first.PCT)
				}
			}
		}
	}
}

// TestPCTFindsADepth2MutantAndItsTraceReplays: mutant-d (2 clients ordering lock nodes by name, no faults)
// needs two orderings: PCT of depth 1 — a fixed priority order, no change point — never breaks it, and PCT
// of depth 2 does within 50 runs; the failing run's trace, as found, replays to the same violation.
func TestPCTFindsADepth2MutantAndItsTraceReplays(t *testing.T) {
	v, err := VariantByName("mutant-d-order-by-name")
	if err != nil {
		t.Fatal(err)
	}
	for _, depth := range []int{1, 2} {
		cfg := v.Config
		cfg.Strategy, cfg.Checks, cfg.Seed, cfg.Parallel, cfg.TraceDir = PCT(depth), 50, 3, 1, t.TempDir()
		cfg = cfg.withDefaults()
		x := testExploration(t, v, cfg)
		rep, fail := PCT(depth).explore(x)
		if depth == 1 {
			if rep.Failed {
				t.Fatalf("PCT depth 1 broke %s (%s at run %d): the mutant is not of depth 2", v.Name, rep.Property, rep.FailIndex)
			}
			continue
		}
		if !rep.Failed || !slices.Contains(strings.Split(v.Expect, "|"), rep.Property) || rep.FoundBy != "pct" {
			t.Fatalf("PCT depth 2 on %s: %+v, want a failure of %s found by pct", v.Name, rep, v.Expect)
		}
		path, err := writeTrace(cfg, fail)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := ParseTrace(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Replay(t, v.Factory, tr); err != nil {
			t.Fatalf("the PCT run's trace does not replay: %v", err)
		}
		if tr.Property != rep.Property {
			t.Fatalf("the trace records %s, the search found %s", tr.Property, rep.Property)
		}
	}
}

// testExploration is an exploration of v with cfg (defaults filled in) on one worker, for the whole search.
func testExploration(t *testing.T, v Variant, cfg Config) *exploration {
	cfg.Parallel = 1
	cfg = cfg.withDefaults()
	return &exploration{t: t, kind: v.clients(), cfg: cfg, part: flagPart(t), workers: 1, started: time.Now()}
}

// TestPCTBadSettingsAreRefusedClearly: a PCT depth out of range (in the Config or by flag), a depth without
// a PCT strategy, and an unknown strategy each stop the test with a sentence that says what to do, before
// any run.
func TestPCTBadSettingsAreRefusedClearly(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Strategy: PCT(0)}, "check: Config.Strategy pct: check: PCT depth 0: want 1 to 10"},
		{Config{Strategy: Portfolio(11)}, "check: Config.Strategy portfolio: check: PCT depth 11: want 1 to 10"},
	} {
		if err := c.cfg.validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.cfg.Strategy, err, c.want)
		}
	}
	for _, ok := range []Config{{Strategy: PCT(1)}, {Strategy: PCT(10)}, {Strategy: Portfolio(3)}} {
		if err := ok.validate(); err != nil {
			t.Errorf("%v: %v", ok.Strategy, err)
		}
	}
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{[]string{"-check.strategy=pct", "-check.pct.depth=0"}, "-check.pct.depth: check: PCT depth 0: want 1 to 10"},
		{[]string{"-check.strategy=portfolio", "-check.pct.depth=-2"}, "-check.pct.depth: check: PCT depth -2: want 1 to 10"},
		{[]string{"-check.pct.depth=2"}, "-check.pct.depth: check: a PCT depth applies to the pct and portfolio strategies only, and the strategy is random"},
		{[]string{"-check.strategy=exhaustive", "-check.pct.depth=2"}, "and the strategy is exhaustive"},
		{[]string{"-check.strategy=pcx"}, `-check.strategy: check: unknown strategy "pcx" (known: random, pct, portfolio, exhaustive)`},
	} {
		cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestHelperPCTFlags$"}, c.flags...)...)
		cmd.Env = append(os.Environ(), "ZKMODEL_PCT_FLAGS="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) || strings.Contains(string(out), "interleavings") {
			t.Errorf("%v: want a failure saying %q before any run, got %v:\n%s", c.flags, c.want, err, out)
		}
	}
}

// TestHelperPCTFlags is a user's test run with -check.* flags; it runs only as the child process of
// TestPCTBadSettingsAreRefusedClearly.
func TestHelperPCTFlags(t *testing.T) {
	dir := os.Getenv("ZKMODEL_PCT_FLAGS")
	if dir == "" {
		return
	}
	rep := Run(t, Recipe, Config{Name: "pct-flags", Checks: 2, Seed: 1, TraceDir: dir})
	t.Logf("ran %d interleavings", rep.Runs)
}

// TestPCTShardsMergeToTheWhole: a PCT search split in 3 parts, their reports written and read back as
// -check.report and zkmodel merge do, merges to the verdict of the whole search — the same lowest failing
// run, runs and faults — and a part of another depth is refused as another search.
func TestPCTShardsMergeToTheWhole(t *testing.T) {
	v, err := VariantByName("mutant-b-ignore-gone")
	if err != nil {
		t.Fatal(err)
	}
	cfg := v.Config
	cfg.Checks, cfg.Seed, cfg.TraceDir = 60, 11, t.TempDir()
	cfg = cfg.withDefaults()
	explore := func(s Strategy, part shard.Part) *shard.Report {
		x := &exploration{t: t, kind: v.clients(), cfg: cfg, part: part, workers: 2, started: time.Now()}
		rep, fail := s.explore(x)
		if fail != nil {
			rep.Property, rep.Verdict = fail.property, fail.verdict
		}
		path := filepath.Join(t.TempDir(), "part.json")
		if err := shardReportOf(x, s, &rep).Write(path); err != nil {
			t.Fatal(err)
		}
		r, err := shard.Read(path)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	whole, err := shard.Merge([]*shard.Report{explore(PCT(3), shard.Part{Index: 0, Count: 1})})
	if err != nil {
		t.Fatal(err)
	}
	if !whole.Failed {
		t.Fatalf("PCT did not break %s in %d runs from seed %d", v.Name, cfg.Checks, cfg.Seed)
	}
	var parts []*shard.Report
	for i := 0; i < 3; i++ {
		parts = append(parts, explore(PCT(3), shard.Part{Index: i, Count: 3}))
	}
	merged, err := shard.Merge(parts)
	if err != nil {
		t.Fatal(err)
	}
	if merged.Runs != whole.Runs || merged.Property != whole.Property || !sameCounts(merged.Injected, whole.Injected) || !merged.Failed {
		t.Errorf("3 parts merged: failed %v (%s) after %d runs, faults %v; the whole: failed %v (%s) after %d runs, faults %v",
			merged.Failed, merged.Property, merged.Runs, merged.Injected, whole.Failed, whole.Property, whole.Runs, whole.Injected)
	}
	other := explore(PCT(2), shard.Part{Index: 2, Count: 3})
	if _, err := shard.Merge([]*shard.Report{parts[0], parts[1], other}); err == nil || !strings.Contains(err.Error(), "different searches") {
		t.Errorf("merging a part of depth 2 with parts of depth 3: %v, want an error saying they are different searches", err)
	}
}

// TestPCTBoundStatesThePapersFigure: the bound is 1/(n·k^(d−1)) per run, and 1−(1−p)^N over N runs.
func TestPCTBoundStatesThePapersFigure(t *testing.T) {
	b := PCTBound{Depth: 3, Threads: 3, Steps: 52}
	if p := b.PerRun(); p != 1.0/8112 {
		t.Errorf("per run: %v, want 1/8112", p)
	}
	if w := b.Within(8112); w < 0.632 || w > 0.633 { // 1−(1−1/8112)^8112 ≈ 1−1/e
		t.Errorf("within 8112 runs: %v, want about 0.632", w)
	}
	if w := (PCTBound{Depth: 1, Threads: 2, Steps: 40}).Within(1); w != 0.5 {
		t.Errorf("depth 1, 2 threads, one run: %v, want 0.5", w)
	}
	want := "PCT d=3: a depth-3 bug is found with probability ≥ 1/8112 per run (n=3 threads, k=52 steps)"
	if s := b.String(); s != want {
		t.Errorf("got %q, want %q", s, want)
	}
}
