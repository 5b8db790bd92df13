package check

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkmodel/zkmodel/check/shard"
	"pgregory.net/rapid"
)

// TestSampledRunsAreRapidsRuns: run i of a sampling search from a seed is rapid.Check's run i from that seed,
// decision for decision, so that the workers' search is the very search rapid.Check makes and -rapid.seed
// reproduces it.
func TestSampledRunsAreRapidsRuns(t *testing.T) {
	v, err := VariantByName("recipe")
	if err != nil {
		t.Fatal(err)
	}
	cfg := v.Config
	cfg.Checks, cfg.Seed = 25, 424242
	cfg = cfg.withDefaults()
	var viaCheck [][]string
	checkWith(t, cfg, func(rt *rapid.T) {
		rapid.SyncTest(rt, func(rt *rapid.T) {
			viaCheck = append(viaCheck, executeWith(v.clients(), cfg, rapidDecider{t: rt}).decisions)
		})
	})
	if len(viaCheck) != cfg.Checks {
		t.Fatalf("rapid.Check made %d runs, want %d", len(viaCheck), cfg.Checks)
	}
	x := &exploration{t: t, kind: v.clients(), cfg: cfg, workers: 1}
	for i, want := range viaCheck {
		got := x.runSeeded(seedOf(cfg.Seed, i)).decisions
		if !slices.Equal(got, want) {
			t.Fatalf("run %d: the seeded run took %d decisions %v…, rapid.Check's %d %v…", i, len(got), head(got), len(want), head(want))
		}
	}
}

func head(s []string) []string { return s[:min(len(s), 6)] }

// TestParallelWorkersGiveTheSameVerdict: a mutant searched from one seed by 1, 2 and 3 workers fails at the
// same run, with the same property and the same faults counted below it; and the recipe passes with the
// same counts.
func TestParallelWorkersGiveTheSameVerdict(t *testing.T) {
	for _, name := range []string{"mutant-b-ignore-gone", "recipe", "mutant-d-order-by-name-wire"} {
		v, err := VariantByName(name)
		if err != nil {
			t.Fatal(err)
		}
		var first Report
		for _, workers := range []int{1, 2, 3} {
			cfg := v.Config
			cfg.Checks, cfg.Seed, cfg.Parallel, cfg.Shrink, cfg.TraceDir = 150, 7, workers, time.Second, t.TempDir()
			rep := exploreQuietly(t, v, cfg)
			if workers == 1 {
				first = rep
				if (v.Expect != "") != rep.Failed {
					t.Fatalf("%s: failed %v with one worker (expect %q)", name, rep.Failed, v.Expect)
				}
				continue
			}
			if rep.Failed != first.Failed || rep.FailIndex != first.FailIndex || rep.Property != first.Property || rep.Runs-rep.shrinkRuns != first.Runs-first.shrinkRuns || !sameCounts(rep.Injected, first.Injected) {
				t.Errorf("%s: %d workers: failed %v at run %d (%s), %d runs, faults %v; one worker: failed %v at run %d (%s), %d runs, faults %v",
					name, workers, rep.Failed, rep.FailIndex, rep.Property, rep.Runs-rep.shrinkRuns, rep.Injected, first.Failed, first.FailIndex, first.Property, first.Runs-first.shrinkRuns, first.Injected)
			}
		}
	}
}

func sameCounts(a, b map[string]int) bool {
	for k, n := range a {
		if b[k] != n {
			return false
		}
	}
	for k, n := range b {
		if a[k] != n {
			return false
		}
	}
	return true
}

// exploreQuietly explores v with cfg in a subtest whose failure (a mutant's, by design) does not fail t.
func exploreQuietly(t *testing.T, v Variant, cfg Config) Report {
	t.Helper()
	cfg = cfg.withDefaults()
	x := &exploration{t: t, kind: v.clients(), cfg: cfg, part: shard.Part{Index: 0, Count: 1}, workers: workersOf(cfg), started: time.Now()}
	rep, fail := strategyOf(cfg).explore(x)
	if fail != nil {
		rep.Property, rep.Verdict, rep.Decisions = fail.property, fail.verdict, fail.explored
	}
	return rep
}

// TestShardRangesAreDisjointAndWhole: the parts of a sampling search own disjoint ranges of its runs whose
// union is the whole, for every split of several sizes.
func TestShardRangesAreDisjointAndWhole(t *testing.T) {
	for _, total := range []int{0, 1, 7, 100, 10000, 10001} {
		for n := 1; n <= 9; n++ {
			next := 0
			for i := 0; i < n; i++ {
				from, to := shard.Part{Index: i, Count: n}.Range(total)
				if from != next || to < from || to-from > total/n+1 {
					t.Fatalf("%d runs, part %d/%d: [%d,%d) after %d", total, i, n, from, to, next)
				}
				next = to
			}
			if next != total {
				t.Fatalf("%d runs in %d parts cover %d", total, n, next)
			}
		}
	}
	for _, bad := range []string{"4/4", "-1/2", "1", "a/b", "0/0", "1/2/3"} {
		if _, err := shard.ParsePart(bad); err == nil {
			t.Errorf("ParsePart(%q) accepted it", bad)
		}
	}
}

// TestSplitExhaustiveSearchCountsAsTheWhole: the exhaustive search split into subtrees, run by several
// workers, counts exactly the schedules, pruned runs and decision points of the sequential search, passes
// where it passes, and stops at the same failure where it fails.
func TestSplitExhaustiveSearchCountsAsTheWhole(t *testing.T) {
	for _, name := range []string{"recipe", "mutant-a-watch-parent", "mutant-d-order-by-name", "rwlock"} {
		v, err := VariantByName(name)
		if err != nil {
			t.Fatal(err)
		}
		cfg := smallBound(v)
		cfg.Steps = 6
		whole := exhaust(t, v.clients(), cfg, cfg.Steps, true, stopOnAny, time.Time{})
		for _, workers := range []int{1, 3} {
			x := &exploration{t: t, kind: v.clients(), cfg: cfg, part: shard.Part{Index: 0, Count: 1}, workers: workers, started: time.Now()}
			split := x.split(cfg.Steps, stopOnAny, time.Time{}, true)
			if split.schedules != whole.schedules || split.pruned != whole.pruned || split.points != whole.points || split.exhausted != whole.exhausted {
				t.Errorf("%s, %d workers, %d subtrees: %d schedules, %d pruned, %d points, exhausted %v; sequential: %d, %d, %d, %v",
					name, workers, split.subtrees, split.schedules, split.pruned, split.points, split.exhausted, whole.schedules, whole.pruned, whole.points, whole.exhausted)
			}
			if (split.failure == nil) != (whole.failure == nil) || split.failure != nil && !slices.Equal(split.failure.decisions, whole.failure.decisions) {
				t.Errorf("%s, %d workers: the split search's failure %v differs from the sequential one's %v", name, workers, decisionsOf(split.failure), decisionsOf(whole.failure))
			}
		}
	}
}

func decisionsOf(o *outcome) []string {
	if o == nil {
		return nil
	}
	return o.decisions
}

// TestHelperExhaustiveShard is run in child processes by TestShardedExhaustiveSearchMergesToTheWhole: one
// part of an exhaustive search, its report written with -check.report.
func TestHelperExhaustiveShard(t *testing.T) {
	name := os.Getenv("ZKMODEL_SHARD_VARIANT")
	if name == "" {
		return // not a child process
	}
	v, err := VariantByName(name)
	if err != nil {
		t.Fatal(err)
	}
	cfg := smallBound(v)
	cfg.Steps, cfg.Exhaustive, cfg.Name, cfg.TraceDir = 6, true, name, os.Getenv("ZKMODEL_SHARD_TRACES")
	runWith(t, v.clients(), cfg)
}

// TestShardedExhaustiveSearchMergesToTheWhole runs an exhaustive search whole, in this process, and as 4
// parts in 4 processes, and requires the merged parts to give the whole's counts and verdict: for the
// recipe (a pass) and for a mutant (its first failure in the tree's order).
func TestShardedExhaustiveSearchMergesToTheWhole(t *testing.T) {
	for _, name := range []string{"recipe", "mutant-d-order-by-name"} {
		v, err := VariantByName(name)
		if err != nil {
			t.Fatal(err)
		}
		cfg := smallBound(v)
		cfg.Steps, cfg.Exhaustive, cfg.Name = 6, true, name
		whole := exploreQuietly(t, v, cfg)

		dir := t.TempDir()
		var files []string
		for i := 0; i < 4; i++ {
			file := filepath.Join(dir, fmt.Sprintf("part%d.json", i))
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperExhaustiveShard$", "-test.count=1",
				fmt.Sprintf("-check.shard=%d/4", i), "-check.report="+file, "-check.parallel=1")
			cmd.Env = append(os.Environ(), "ZKMODEL_SHARD_VARIANT="+name, "ZKMODEL_SHARD_TRACES="+filepath.Join(dir, "traces"))
			out, err := cmd.CombinedOutput()
			if _, statErr := os.Stat(file); statErr != nil {
				t.Fatalf("part %d/4 of %s wrote no report (%v):\n%s", i, name, err, out)
			}
			files = append(files, file)
		}
		verdicts, err := shard.MergeFiles(files)
		if err != nil {
			t.Fatal(err)
		}
		if len(verdicts) != 1 {
			t.Fatalf("merged into %d verdicts", len(verdicts))
		}
		m := verdicts[0]
		if m.Failed != whole.Failed || m.Property != whole.Property || m.Schedules != whole.Schedules || m.Pruned != whole.Pruned || m.Points != whole.DecisionPoints {
			data, _ := json.Marshal(m)
			t.Errorf("%s: merged parts %s; the whole search: failed %v (%s), %d schedules, %d pruned, %d decision points",
				name, data, whole.Failed, whole.Property, whole.Schedules, whole.Pruned, whole.DecisionPoints)
		}
		if whole.Failed && m.Decisions != whole.Decisions {
			t.Errorf("%s: the merged failure has %d decisions, the whole search's %d", name, m.Decisions, whole.Decisions)
		}
		if !whole.Failed && !m.Complete {
			t.Errorf("%s: the merged parts say the search is incomplete", name)
		}
		t.Logf("%s: 4 parts merged: %s", name, strings.TrimSpace(shard.Table([]*shard.Verdict{m})))
	}
}

// TestSampleShardsCoverTheWholeSearch: a sampling search run as 3 parts covers the whole search's runs and
// no run twice — the parts' ranges are disjoint and make the whole — and their merged reports count the
// runs and the faults injected exactly as the whole search does.
func TestSampleShardsCoverTheWholeSearch(t *testing.T) {
	v, err := VariantByName("recipe")
	if err != nil {
		t.Fatal(err)
	}
	cfg := v.Config
	cfg.Checks, cfg.Seed, cfg.TraceDir = 60, 99, t.TempDir()
	cfg = cfg.withDefaults()
	explore := func(part shard.Part) *shard.Report {
		x := &exploration{t: t, kind: v.clients(), cfg: cfg, part: part, workers: 2, started: time.Now()}
		rep, fail := Random.explore(x)
		if fail != nil {
			t.Fatalf("the recipe failed: %s", fail.verdict)
		}
		return shardReportOf(x, Random, &rep)
	}
	whole := explore(shard.Part{Index: 0, Count: 1})
	var parts []*shard.Report
	covered := make([]int, cfg.Checks)
	for i := 0; i < 3; i++ {
		p := explore(shard.Part{Index: i, Count: 3})
		for r := p.From; r < p.From+p.Ran; r++ {
			covered[r]++
		}
		parts = append(parts, p)
	}
	for r, n := range covered {
		if n != 1 {
			t.Fatalf("run %d (seed %d) was run by %d parts", r, seedOf(cfg.Seed, r), n)
		}
	}
	merged, err := shard.Merge(parts)
	if err != nil {
		t.Fatal(err)
	}
	wholeV, err := shard.Merge([]*shard.Report{whole})
	if err != nil {
		t.Fatal(err)
	}
	if merged.Runs != wholeV.Runs || !sameCounts(merged.Injected, wholeV.Injected) || merged.Failed != wholeV.Failed || !merged.Complete {
		t.Errorf("3 parts merged: %d runs, faults %v, failed %v, complete %v; the whole: %d runs, faults %v, failed %v",
			merged.Runs, merged.Injected, merged.Failed, merged.Complete, wholeV.Runs, wholeV.Injected, wholeV.Failed)
	}
	if _, err := shard.Merge(parts[:2]); err == nil || !strings.Contains(err.Error(), "2/3") {
		t.Errorf("merging 2 of 3 parts: %v, want an error naming the missing part 2/3", err)
	}
	if _, err := shard.Merge(append(parts, parts[1])); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("merging a part twice: %v, want an error saying so", err)
	}
}

// TestShardLocallyExample runs docs/examples/shard-locally.sh — the commands of the GitHub Actions and
// Kubernetes examples, as 4 processes here — and requires the merged verdict of the recipe: a pass over
// every run of the search, from 4 parts.
func TestShardLocallyExample(t *testing.T) {
	out := t.TempDir()
	cmd := exec.Command("bash", "docs/examples/shard-locally.sh", "recipe", "200", "4", out)
	cmd.Dir = moduleRoot()
	data, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("shard-locally.sh: %v\n%s", err, data)
	}
	var row []string
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "recipe" {
			row = f
		}
	}
	// variant strategy verdict property interleavings parts cpu-secs decisions trace
	if len(row) < 6 || row[1] != "random" || row[2] != "pass" || row[4] != "200" || row[5] != "4" {
		t.Fatalf("the merged table has no row 'recipe random pass - 200 4 …':\n%s", data)
	}
}
