package check

import (
	"fmt"
	"os"
	"testing"
	"time"
)

func TestScratchPreempt(t *testing.T) {
	for _, name := range []string{"recipe", "mutant-b-ignore-gone", "mutant-d-order-by-name"} {
		v, _ := VariantByName(name)
		for _, c := range []int{Unpreempted, 1, 2} {
			for _, f := range []int{0, 1} {
				cfg := v.Config
				cfg.Clients, cfg.Rounds, cfg.Exhaustive, cfg.Preemptions, cfg.TraceDir = 2, 1, true, c, t.TempDir()
				cfg.MaxFault = f
				cfg.Budget = 30 * time.Second
				if os.Getenv("P") != "" {
					cfg.Progress = os.Stdout
				}
				if f == 0 {
					cfg.Faults = 0
				}
				cfg = cfg.withDefaults()
				start := time.Now()
				rep, fail := exploreExhaustive(t, v.clients(), cfg)
				d := 0
				if fail != nil {
					d = fail.explored
				}
				fmt.Printf("%s c=%d F=%d: failed=%v %s sched=%d pruned=%d points=%d exhausted=%v dec=%d %s\n", name, c, f, rep.Failed, rep.Property, rep.Schedules, rep.Pruned, rep.DecisionPoints, rep.Exhausted, d, time.Since(start).Round(time.Millisecond))
			}
		}
	}
}
