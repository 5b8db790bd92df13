package check

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPCTRunsDrawARunSeed: a PCT run draws its run seed from its own seed (so the recipes' node ids, and
// their order by name, vary from run to run, as in the random strategy's runs), the trace records it, and
// the trace replays the run byte for byte.
func TestPCTRunsDrawARunSeed(t *testing.T) {
	v, err := VariantByName("mutant-d-order-by-name")
	if err != nil {
		t.Fatal(err)
	}
	cfg := v.Config.withDefaults()
	x := testExploration(t, v, cfg)
	bound := x.calibratePCT(2)
	seeds := map[uint64]bool{}
	for seed := uint64(1); seed <= 4; seed++ {
		out := x.runPCT(bound, seed)
		if out.seed == 0 {
			t.Fatalf("PCT run %d drew no run seed", seed)
		}
		seeds[out.seed] = true
		text := out.render(cfg)
		if !strings.Contains(text, "run-seed: ") {
			t.Fatalf("PCT run %d's trace does not record its run seed:\n%s", seed, text)
		}
		path := filepath.Join(t.TempDir(), "pct.trace")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		tr, err := ParseTrace(path)
		if err != nil {
			t.Fatal(err)
		}
		if tr.RunSeed != out.seed {
			t.Fatalf("the trace's run seed is %d, the run's %d", tr.RunSeed, out.seed)
		}
		// replayWith fails unless the history is the same byte for byte, and the verdict too.
		if _, err := replayWith(t, v.clients(), tr); err != nil {
			t.Fatalf("PCT run %d's trace does not replay: %v", seed, err)
		}
	}
	if len(seeds) != 4 {
		t.Errorf("4 PCT runs drew %d distinct run seeds", len(seeds))
	}
}
