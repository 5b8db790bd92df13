package check

import (
	"math/rand/v2"
	"slices"
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
				replayed = executeWith(v.clients(), cfg, &replayDecider{decisions: recorded.decisions[:slices.Index(recorded.decisions, "# drain")]})
			})
			if i, x, y, differ := firstDifferentLine(recorded.historyText(), replayed.historyText()); differ {
				t.Fatalf("%s, seed %d: the replay of the recorded decisions differs at history line %d:\n  recorded %q\n  replayed %q", v.Name, seed, i+1, x, y)
			}
		}
	}
}
