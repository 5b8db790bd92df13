package check

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
)

// drawnSteps is seededDecider with the number of exploration steps drawn too, as rapid draws it, so that a
// run's exploration may end before the decisions run out or for want of choices.
type drawnSteps struct{ seededDecider }

func (d drawnSteps) steps(max int) int { return 1 + d.r.IntN(max) }

// TestRecordedDecisionsReplay runs every variant with seeded decisions, then replays the decisions the run
// recorded, as a trace replays them (replayDecider), and requires the same history: a trace that does not
// replay is a verdict nobody can check.
func TestRecordedDecisionsReplay(t *testing.T) {
	for _, v := range Variants() {
		cfg := v.Config
		cfg.Faults = AllFaults
		cfg = cfg.withDefaults()
		for seed := uint64(1); seed <= 30; seed++ {
			var recorded, replayed *outcome
			synctest.Test(t, func(t *testing.T) {
				recorded = executeWith(v.clients(), cfg, drawnSteps{seededDecider{rand.New(rand.NewPCG(seed, 11))}})
			})
			synctest.Test(t, func(t *testing.T) {
				replayed = executeWith(v.clients(), cfg, &replayDecider{decisions: recorded.decisions[:slices.Index(recorded.decisions, "# drain")], seed: recorded.seed})
			})
			if i, x, y, differ := firstDifferentLine(recorded.historyText(), replayed.historyText()); differ {
				t.Fatalf("%s, seed %d: the replay of the recorded decisions differs at history line %d:\n  recorded %q\n  replayed %q", v.Name, seed, i+1, x, y)
			}
		}
	}
}

// TestNodeIDsVaryWithTheRunsSeed: a run's node names come from its run seed, which its decider draws:
// two seeds name the nodes differently, one seed names them the same every time, and the trace records the
// seed, so that its replay names them as the recorded run did. Seed 0 (a trace without "run-seed:") names them as
// every run did before runs had seeds.
func TestNodeIDsVaryWithTheRunsSeed(t *testing.T) {
	cfg := Config{Name: "recipe"}.withDefaults()
	runWith := func(seed uint64) *outcome {
		var out *outcome
		synctest.Test(t, func(t *testing.T) { out = execute(Recipe, cfg, &replayDecider{seed: seed}) })
		return out
	}
	a, b, again := runWith(1), runWith(2), runWith(1)
	if a.failed() || b.failed() {
		t.Fatalf("the recipe failed: %s / %s", a.verdict, b.verdict)
	}
	if a.historyText() == b.historyText() {
		t.Fatalf("seeds 1 and 2 gave the same history:\n%s", a.historyText())
	}
	if a.historyText() != again.historyText() {
		t.Fatalf("seed 1 gave two histories:\n%s", firstDifference(a.historyText(), again.historyText()))
	}
	text := a.render(cfg)
	if !strings.Contains(text, "\nrun-seed: 1\n") {
		t.Fatalf("the trace does not record the seed:\n%s", text)
	}
	tr, err := parseTrace("seeded.trace", text)
	if err != nil {
		t.Fatal(err)
	}
	if tr.RunSeed != 1 {
		t.Fatalf("parsed seed %d, want 1", tr.RunSeed)
	}
	if _, err := Replay(t, Recipe, tr); err != nil {
		t.Fatalf("the seeded trace does not replay: %v", err)
	}
	if zero := runWith(0).render(cfg); strings.Contains(zero, "\nrun-seed:") {
		t.Fatalf("a run of seed 0 records a seed:\n%s", zero)
	}
	bad := strings.Replace(text, "\nrun-seed: 1\n", "\nrun-seed: x\n", 1)
	if _, err := parseTrace("bad.trace", bad); err == nil || !strings.Contains(err.Error(), "bad.trace:") || !strings.Contains(err.Error(), "run-seed:") {
		t.Fatalf("a malformed seed: got %v, want an error naming the file, line and key", err)
	}
}
