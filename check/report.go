package check

import (
	"fmt"
	"time"
)

// named records the variant's name in the report Run or RunZK returns.
func named(rep Report, cfg Config) Report {
	rep.Variant = cfg.withDefaults().Name
	return rep
}

// String is the report on one line: the variant, the verdict, the property, how many runs, and the trace's
// path — so that %v and %+v print that rather than every field (the failing trace's text included). For
// example:
//
//	recipe: pass: every property held in 2000 interleavings (41s)
//	mutant-b-ignore-gone: FAIL: liveness violated in 57 interleavings (2.1s); trace /tmp/zkmodel-traces/mutant-b-ignore-gone-liveness.trace
func (r Report) String() string {
	name := r.Variant
	if name == "" {
		name = "check"
	}
	runs := plural(r.Runs, "interleaving")
	if r.Exhaustive {
		runs = plural(r.Schedules, "schedule")
		switch {
		case r.Exhausted:
			runs = "all " + runs + " within the bound"
		case !r.Failed:
			runs += ", the budget ran out before the bound was exhausted"
		}
		if r.IDOrders > 0 {
			runs += fmt.Sprintf(", %s", idOrdersText(r))
		}
	}
	took := ""
	if r.Elapsed > 0 {
		round := 100 * time.Millisecond
		if r.Elapsed < time.Second {
			round = time.Millisecond
		}
		took = fmt.Sprintf(" (%s)", r.Elapsed.Round(round))
	}
	if r.PCT != nil {
		took += "; " + r.PCT.String()
	}
	if !r.Failed {
		return fmt.Sprintf("%s: pass: every property held in %s%s", name, runs, took)
	}
	trace := "; trace " + r.Trace
	switch {
	case r.Trace != "":
	case isReachability(r.Property):
		trace = "; no trace (a property of all the runs together)"
	default:
		trace = "; no trace written"
	}
	return fmt.Sprintf("%s: FAIL: %s violated in %s%s%s", name, r.Property, runs, took, trace)
}

// plural is "1 run" or "n runs".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
