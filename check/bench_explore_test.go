//go:build unix

package check

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/recipe"
)

// BenchmarkExplore measures the checker's speed per core, in interleavings explored per second, on three
// rows: a model row (the recipe on the model's own clients), a wire row (the same recipe on go-zookeeper
// clients over the model's wire) and RunZK (an election a user builds on *zk.Conn with their own
// ZKFactory, the recipe's as in TestRunZKAcceptsAUsersSemaphoreAndElection, with every fault kind). Each
// iteration explores a fixed number of interleavings from a fixed seed with Run's own code (runWith), so
// every iteration does the same work and the rate compares between commits; every row must pass, or it
// would time shrinking. scripts/bench-explore.sh runs this file on an older checkout and on the work tree,
// alternately, and prints the ratios: it uses only what package check had at e4ea55a, so that it can be
// copied into such a checkout.
//
// It reports interleavings per CPU-second (user and system time of every thread, the GC's included) beside
// them: on a machine that others share, the wall-clock rate varies with their load, the CPU rate less.
//
// Run's explorations happen in synctest bubbles, which need a *testing.T: each sub-benchmark runs its
// iterations inside one test made with testing.RunTests.
func BenchmarkExplore(b *testing.B) {
	model, err := VariantByName("recipe")
	if err != nil {
		b.Fatal(err)
	}
	wire, err := VariantByName("recipe-wire")
	if err != nil {
		b.Fatal(err)
	}
	election := func(conn *zk.Conn, path string) Locker {
		return NewElectionLocker(recipe.NewElection(conn, path, recipe.WithRandom(RandFor(conn))), []byte("worker"))
	}
	for _, row := range []struct {
		name string
		kind clients
		cfg  Config
		runs int // interleavings per iteration
		seed uint64
	}{
		{"recipe", model.clients(), model.Config, 1000, 1},
		{"recipe-wire", wire.clients(), wire.Config, 200, 1},
		{"runzk-election", wireClients(election), Config{Name: "bench-election-wire", Primitive: Election, Faults: AllFaults}, 200, 1},
	} {
		b.Run(row.name, func(b *testing.B) {
			cfg := row.cfg
			cfg.Checks, cfg.Seed = row.runs, row.seed
			cfg.TraceDir = b.TempDir()
			runs := 0
			var failure error
			explore := func(t *testing.T) {
				for i := 0; i < b.N; i++ {
					rep := runWith(t, row.kind, cfg)
					if rep.Failed {
						failure = fmt.Errorf("%s, seed %d: %s violated: %s", row.name, row.seed, rep.Property, rep.Verdict)
						return
					}
					runs += rep.Runs
				}
			}
			b.ResetTimer()
			cpu := cpuTime()
			ok := inTest("BenchmarkExplore/"+row.name, explore)
			b.StopTimer()
			cpu = cpuTime() - cpu
			if failure != nil || !ok {
				b.Fatalf("the exploration did not pass: %v (a benchmark row must pass: a failure would time shrinking)", failure)
			}
			if runs != b.N*row.runs {
				fmt.Fprintf(os.Stderr, "%s: %d interleavings in %d iterations, want %d each\n", row.name, runs, b.N, row.runs)
			}
			b.ReportMetric(float64(runs)/b.Elapsed().Seconds(), "interleavings/s")
			b.ReportMetric(float64(runs)/cpu.Seconds(), "interleavings/cpu-s")
		})
	}
}

// cpuTime is the CPU time the process has used (user and system, every thread): on a machine that others
// share, interleavings per CPU-second vary less than per wall-clock second.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
