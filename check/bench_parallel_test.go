package check

import (
	"fmt"
	"testing"
	"time"

	"github.com/zkmodel/zkmodel/check/shard"
)

// BenchmarkExploreWorkers measures the speed-up of more workers: the same sampling search of a passing row
// (the recipe on the model's clients, and over the wire) with 1, 2 and 4 workers, reported in
// interleavings a second. Run it with -test.cpu set to the machine's cores, e.g.
//
//	go test -run '^$' -bench ExploreWorkers -benchtime 3x ./check
//
// and compare the rows of one run (the machine's load moves every row alike).
func BenchmarkExploreWorkers(b *testing.B) {
	for _, name := range []string{"recipe", "recipe-wire"} {
		v, err := VariantByName(name)
		if err != nil {
			b.Fatal(err)
		}
		for _, workers := range []int{1, 2, 4} {
			b.Run(fmt.Sprintf("%s/workers=%d", name, workers), func(b *testing.B) {
				cfg := v.Config
				cfg.Checks, cfg.Seed, cfg.Parallel = 400, 11, workers
				if v.ZKFactory != nil {
					cfg.Checks = 100
				}
				cfg = cfg.withDefaults()
				runs, elapsed := 0, time.Duration(0)
				for i := 0; i < b.N; i++ {
					start := time.Now()
					rep := benchExplore(b, v, cfg)
					elapsed += time.Since(start)
					runs += rep.Runs
					if rep.Failed {
						b.Fatalf("%s failed: %s", name, rep.Verdict)
					}
				}
				b.ReportMetric(float64(runs)/elapsed.Seconds(), "interleavings/s")
			})
		}
	}
}

// benchExplore runs a sampling search of v inside a benchmark, through a test of its own (the bubbles need
// a *testing.T).
func benchExplore(b *testing.B, v Variant, cfg Config) Report {
	var rep Report
	ok := inTest("BenchmarkExploreWorkers/"+v.Name, func(t *testing.T) {
		x := &exploration{t: t, kind: v.clients(), cfg: cfg, part: shard.Part{Index: 0, Count: 1}, workers: cfg.Parallel, started: time.Now()}
		rep, _ = Random.explore(x)
	})
	if !ok {
		b.Fatal("the exploration's test failed")
	}
	return rep
}
