package check

import (
	"cmp"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var flagProve = flag.Bool("check.prove", false, "TestProve: search the stated bounds (make prove) rather than the small ones go test uses")

// smallBound is a variant's configuration cut down to a bound that a full search without reduction covers
// in seconds: two clients, one round, five decisions, one fault.
func smallBound(v Variant) Config {
	cfg := v.Config
	cfg.Clients, cfg.Rounds, cfg.Steps, cfg.MaxFault = 2, 1, 5, 1
	return cfg.withDefaults()
}

// TestExhaustiveReductionAgreesWithFullSearch: partial-order reduction is sound where it can be shown to be:
// on the recipe and every mutant, in a bound small enough for the unreduced search, the reduced search
// finds exactly the properties the full one finds violated — and it runs fewer schedules.
func TestExhaustiveReductionAgreesWithFullSearch(t *testing.T) {
	caught := 0
	for _, v := range Variants() {
		if strings.HasSuffix(v.Name, "-wire") || v.Name == "recipe-5-clients" || v.Name == "zk-lock" {
			continue
		}
		t.Run(v.Name, func(t *testing.T) {
			cfg := smallBound(v)
			full := exhaust(t, v.clients(), cfg, cfg.Steps, false, stopOnNone, time.Time{}, nil)
			reduced := exhaust(t, v.clients(), cfg, cfg.Steps, true, stopOnNone, time.Time{}, nil)
			if !full.exhausted || !reduced.exhausted {
				t.Fatalf("a search stopped early: full exhausted %v, reduced %v", full.exhausted, reduced.exhausted)
			}
			fullProps, reducedProps := slices.Sorted(maps.Keys(full.violated)), slices.Sorted(maps.Keys(reduced.violated))
			if !slices.Equal(fullProps, reducedProps) {
				t.Errorf("the full search found %v violated, the reduced one %v", fullProps, reducedProps)
			}
			if reduced.schedules > full.schedules {
				t.Errorf("the reduced search ran %d schedules, the full one %d", reduced.schedules, full.schedules)
			}
			if v.Name == "recipe" && reduced.schedules >= full.schedules {
				t.Errorf("reduction saved nothing on the recipe: %d schedules reduced, %d full", reduced.schedules, full.schedules)
			}
			if len(fullProps) > 0 {
				caught++
			}
			t.Logf("%s (K=2, 1 round, depth 5, F<=1): full %d schedules / %d decision points, reduced %d (+%d pruned) / %d; violated %v",
				v.Name, full.schedules, full.points, reduced.schedules, reduced.pruned, reduced.points, fullProps)
		})
	}
	if caught < 3 {
		t.Errorf("only %d variants violate a property in the small bound: the comparison says little", caught)
	}
}

// TestExhaustiveShortestTraceReplays: the exhaustive mode reports the shortest failing schedule — no schedule
// of one decision fewer breaks that property — and its trace replays to the same verdict.
func TestExhaustiveShortestTraceReplays(t *testing.T) {
	v, err := VariantByName("mutant-d-order-by-name")
	if err != nil {
		t.Fatal(err)
	}
	cfg := v.Config
	cfg.Rounds, cfg.Steps, cfg.Exhaustive, cfg.TraceDir = 1, 10, true, t.TempDir()
	cfg = cfg.withDefaults()
	rep, fail := exploreExhaustive(t, v.clients(), cfg)
	if !rep.Failed || fail == nil || !slices.Contains(strings.Split(v.Expect, "|"), rep.Property) {
		t.Fatalf("%s not caught as %s: %+v", v.Name, v.Expect, rep)
	}
	if rep.Decisions != fail.explored || rep.Decisions < 1 || rep.Decisions >= cfg.Steps {
		t.Fatalf("report says %d decisions, the failing run took %d (bound %d)", rep.Decisions, fail.explored, cfg.Steps)
	}
	shorter := exhaust(t, v.clients(), cfg, rep.Decisions-1, true, rep.Property, time.Time{}, nil)
	if !shorter.exhausted || shorter.violated[rep.Property] != nil {
		t.Errorf("a schedule of %d decisions breaks %s too: the reported one (%d) is not the shortest", rep.Decisions-1, rep.Property, rep.Decisions)
	}
	path := filepath.Join(t.TempDir(), "shortest.trace")
	if err := os.WriteFile(path, []byte(fail.render(cfg)), 0o644); err != nil {
		t.Fatal(err)
	}
	tr, err := ParseTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replayWith(t, v.clients(), tr); err != nil {
		t.Errorf("the shortest trace does not replay: %v", err)
	}
}

// TestExhaustiveIsDeterministic: the same bound gives the same search, count for count, and a search the
// budget stops says it did not exhaust the bound.
func TestExhaustiveIsDeterministic(t *testing.T) {
	v, err := VariantByName("recipe")
	if err != nil {
		t.Fatal(err)
	}
	cfg := smallBound(v)
	first := exhaust(t, v.clients(), cfg, cfg.Steps, true, stopOnNone, time.Time{}, nil)
	second := exhaust(t, v.clients(), cfg, cfg.Steps, true, stopOnNone, time.Time{}, nil)
	if first.schedules != second.schedules || first.pruned != second.pruned || first.points != second.points {
		t.Errorf("two searches of one bound differ: %d/%d/%d and %d/%d/%d schedules/pruned/points",
			first.schedules, first.pruned, first.points, second.schedules, second.pruned, second.points)
	}
	stopped := exhaust(t, v.clients(), cfg, cfg.Steps, true, stopOnNone, time.Now(), nil)
	if stopped.exhausted {
		t.Error("a search whose deadline had passed says it exhausted the bound")
	}
}

// proveBound is one row of TestProve: a variant searched exhaustively within a bound.
type proveBound struct {
	variant                string
	clients, faults, depth int
}

// TestProve is `make prove`: every schedule of the recipe within the stated bounds passes, and every mutant
// is caught by exhaustive search with its shortest failing schedule. Without -check.prove it searches small
// bounds (the same rows, cut down) so that go test stays quick.
func TestProve(t *testing.T) {
	// The recipe on the model's clients and on go-zookeeper's over the wire (ten times slower a schedule),
	// and go-zookeeper's own zk.Lock, which must be caught.
	fixed := []proveBound{{"recipe", 2, 2, 6}, {"recipe", 3, 1, 6}, {"recipe-wire", 2, 1, 5}, {"zk-lock", 2, 1, 8}}
	mutantDepth := 12
	if !*flagProve {
		fixed = []proveBound{{"recipe", 2, 2, 3}, {"recipe", 3, 1, 3}, {"recipe-wire", 2, 1, 2}, {"zk-lock", 2, 1, 4}}
		mutantDepth = 7 // enough for every mutant but f (its shortest schedule has 10 decisions)
	}
	fmt.Printf("%-26s %3s %3s %6s %-8s %-16s %10s %8s %10s %9s %8s\n", "variant", "K", "F", "depth", "verdict", "property", "schedules", "pruned", "points", "shortest", "time")
	var traces []string
	var rows []proveBound
	rows = append(rows, fixed...)
	for _, v := range Variants() {
		if strings.HasPrefix(v.Name, "mutant-") && !strings.HasSuffix(v.Name, "-wire") && v.Name != "mutant-control" {
			if v.Name == "mutant-f-ignore-loss" && !*flagProve {
				fmt.Printf("%s: searched by make prove only (its shortest failing schedule has 10 decisions)\n", v.Name)
				continue
			}
			rows = append(rows, proveBound{v.Name, v.Config.withDefaults().Clients, 1, mutantDepth})
		}
	}
	for _, row := range rows {
		v, err := VariantByName(row.variant)
		if err != nil {
			t.Fatal(err)
		}
		cfg := v.Config
		cfg.Clients, cfg.Rounds, cfg.Steps, cfg.MaxFault, cfg.Exhaustive = row.clients, 1, row.depth, row.faults, true
		cfg.TraceDir = cmp.Or(*flagTraces, t.TempDir())
		if *flagProve {
			cfg.Progress = os.Stderr // a line a second: schedules, runs/s, the path's depth
		}
		cfg = cfg.withDefaults()
		rep, fail := exploreExhaustive(t, v.clients(), cfg)
		verdict, prop, shortest := "proved", "-", "-"
		switch {
		case v.Expect == "" && rep.Failed:
			verdict = "FAILED"
			t.Errorf("%s: %s violated within K=%d, F<=%d, depth %d: %s", v.Name, rep.Property, row.clients, row.faults, row.depth, rep.Verdict)
		case v.Expect == "" && !rep.Exhausted:
			verdict = "partial"
			t.Errorf("%s: the search did not exhaust K=%d, F<=%d, depth %d", v.Name, row.clients, row.faults, row.depth)
		case v.Expect != "" && !rep.Failed:
			verdict = "MISSED"
			t.Errorf("%s (%s): no schedule within K=%d, F<=%d, depth %d breaks it", v.Name, v.Bug, row.clients, row.faults, row.depth)
		case v.Expect != "":
			verdict, prop, shortest = "caught", rep.Property, fmt.Sprint(fail.explored)
			if !slices.Contains(strings.Split(v.Expect, "|"), rep.Property) {
				t.Errorf("%s: caught by %s, want %s", v.Name, rep.Property, v.Expect)
			}
			// The shortest failing schedule's trace, kept and replayed like make check's.
			path, err := writeTrace(cfg, fail)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := ParseTrace(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := replayWith(t, v.clients(), tr); err != nil {
				t.Errorf("%s: the shortest trace does not replay: %v", v.Name, err)
			}
			traces = append(traces, path)
		}
		fmt.Printf("%-26s %3d %3d %6d %-8s %-16s %10d %8d %10d %9s %8s\n", v.Name, row.clients, row.faults, row.depth, verdict, prop,
			rep.Schedules, rep.Pruned, rep.DecisionPoints, shortest, rep.Elapsed.Round(time.Millisecond))
	}
	if *flagTraces != "" {
		fmt.Printf("the shortest failing schedules' traces (each replays): %s\n", strings.Join(traces, ", "))
	}
}
