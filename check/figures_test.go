package check

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anishathalye/porcupine"
)

// TestEveryMutantIsCaughtFromEverySeed explores each mutant with ten seeded random schedulers (no rapid, no
// shrinking) until a run fails, requires each to fail within a bound, and prints the median wall time and
// number of runs to the first failure — the figure `make check` reports per mutant, over ten seeds.
func TestEveryMutantIsCaughtFromEverySeed(t *testing.T) {
	const seeds, maxRuns = 10, 20000
	fmt.Printf("%-30s %-16s %18s %16s\n", "mutant", "caught by", "median first fail", "median runs")
	for _, v := range Variants() {
		if v.Expect == "" {
			continue
		}
		cfg := v.Config.withDefaults()
		if isReachability(v.Expect) {
			neverShares(t, v, cfg)
			continue
		}
		var times []time.Duration
		var runs []int
		props := map[string]int{}
		for seed := uint64(1); seed <= seeds; seed++ {
			r := rand.New(rand.NewPCG(seed, 0x5eed))
			start := time.Now()
			n, prop := 0, ""
			for n < maxRuns && prop == "" {
				n++
				synctest.Test(t, func(t *testing.T) {
					prop = executeWith(v.clients(), cfg, seededDecider{r}).property
				})
			}
			if prop == "" {
				t.Errorf("%s, seed %d: not caught in %d runs", v.Name, seed, maxRuns)
				continue
			}
			if !slices.Contains(strings.Split(v.Expect, "|"), prop) {
				t.Errorf("%s, seed %d: caught by %s, want %s", v.Name, seed, prop, v.Expect)
			}
			times = append(times, time.Since(start))
			runs = append(runs, n)
			props[prop]++
		}
		if len(times) == 0 {
			continue
		}
		slices.Sort(times)
		slices.Sort(runs)
		fmt.Printf("%-30s %-16s %18s %16d\n", v.Name, fmt.Sprint(props), times[len(times)/2].Round(time.Microsecond), runs[len(runs)/2])
	}
}

// neverShares is TestEveryMutantIsCaughtFromEverySeed for a mutant caught by a reachability property: from
// every seed, a few hundred runs keep every per-run property and none reaches the sharing the primitive
// must allow, which is how the exploration catches it.
func neverShares(t *testing.T, v Variant, cfg Config) {
	t.Helper()
	const seeds, runs = 10, 100
	for seed := uint64(1); seed <= seeds; seed++ {
		r := rand.New(rand.NewPCG(seed, 0x5eed))
		for n := 0; n < runs; n++ {
			var out *outcome
			synctest.Test(t, func(t *testing.T) { out = executeWith(v.clients(), cfg, seededDecider{r}) })
			if out.failed() || out.shared {
				t.Fatalf("%s, seed %d, run %d: want every per-run property kept and no sharing (%s); got property %q, sharing %v", v.Name, seed, n+1, v.Expect, out.property, out.shared)
			}
		}
	}
	fmt.Printf("%-30s %-16s %18s %16s\n", v.Name, v.Expect, "-", fmt.Sprintf("none of %d", seeds*runs))
}

// lockHistoryOf makes a valid lock history of n operations among k clients, with overlapping waits: each
// acquisition is called while the previous holder still holds, as waiters do.
func lockHistoryOf(n, k int) []porcupine.Operation {
	ops := make([]porcupine.Operation, 0, n)
	ts := int64(0)
	for i := 0; len(ops) < n; i++ {
		c := i%k + 1
		call := ts - 2 // the waiter called Lock before the previous release
		if call < 0 {
			call = 0
		}
		ops = append(ops, porcupine.Operation{ClientId: c - 1, Input: lockOp{client: c, acquire: true}, Call: call, Return: ts + 1})
		ops = append(ops, porcupine.Operation{ClientId: c - 1, Input: lockOp{client: c}, Call: ts + 2, Return: ts + 3})
		ts += 4
	}
	return ops[:n]
}

// BenchmarkPorcupineLockHistory10k measures porcupine on a 10,000-operation lock history (target < 1 s).
func BenchmarkPorcupineLockHistory10k(b *testing.B) {
	ops := lockHistoryOf(10000, 5)
	if !porcupine.CheckOperations(lockModel, ops) {
		b.Fatal("the generated history is not linearizable")
	}
	b.ResetTimer()
	for b.Loop() {
		porcupine.CheckOperations(lockModel, ops)
	}
}

func TestPorcupineRejectsAnOverlapInALongHistory(t *testing.T) {
	ops := lockHistoryOf(10000, 5)
	// Client 3 acquires in the middle of someone else's hold.
	ops = append(ops, porcupine.Operation{ClientId: 2, Input: lockOp{client: 3, acquire: true}, Call: 5001, Return: 5001})
	if porcupine.CheckOperations(lockModel, ops) {
		t.Fatal("porcupine accepted two holders at once")
	}
}
