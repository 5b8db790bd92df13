package check

import (
	"flag"
	"time"
)

// The checker's own flags, honoured by Run in any test binary that imports package check (rapid's flags,
// -rapid.checks, -rapid.seed and the rest, work as well):
//
//	-check.replay=FILE   Run replays the trace in FILE instead of exploring: it prints the replayed trace and
//	                     fails as the recorded run did, or says "this schedule now passes" and passes. A
//	                     trace of another variant than the Config's Name fails the test.
//	-check.traces=DIR    where failure traces are written (overrides Config.TraceDir)
//	-check.n=N           interleavings to explore (overrides Config.Checks; rapid's -rapid.checks wins over both)
//	-check.shrink=D      how long rapid may shrink a failure (overrides Config.Shrink)
//
// For example, after a failure of TestMyLock:
//
//	go test -run '^TestMyLock$' -check.replay=/tmp/zkmodel-traces/mylock-liveness.trace
var (
	flagReplay = flag.String("check.replay", "", "check.Run: replay this trace file (of the Config's Name) instead of exploring")
	flagTraces = flag.String("check.traces", "", "check.Run: write failure traces to this directory (overrides Config.TraceDir)")
	flagN      = flag.Int("check.n", 0, "check.Run: interleavings to explore (overrides Config.Checks)")
	flagShrink = flag.Duration("check.shrink", 0, "check.Run: how long rapid may shrink a failure (overrides Config.Shrink)")
)

// fromFlags applies the -check.* flags the user set to cfg.
func fromFlags(cfg Config) Config {
	if *flagTraces != "" {
		cfg.TraceDir = *flagTraces
	}
	if *flagN > 0 {
		cfg.Checks = *flagN
	}
	if *flagShrink > 0 {
		cfg.Shrink = *flagShrink
	}
	return cfg
}

// shrinkDefault is Config.Shrink's default.
const shrinkDefault = 20 * time.Second
