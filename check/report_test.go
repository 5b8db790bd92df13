package check

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestReportFormatsItselfOnOneLine: %v, %+v and %s of a Report are one line — variant, verdict, property,
// runs, trace — never the failing trace's text.
func TestReportFormatsItselfOnOneLine(t *testing.T) {
	cases := []struct {
		rep  Report
		want string
	}{
		{Report{Variant: "recipe", Runs: 2000, Elapsed: 41 * time.Second}, "recipe: pass: every property held in 2000 interleavings (41s)"},
		{Report{Variant: "mutant-b", Runs: 57, Failed: true, Property: "liveness", Verdict: "c1 is blocked", Trace: "/tmp/t/mutant-b-liveness.trace", Elapsed: 2100 * time.Millisecond, failingText: "zkmodel trace v1\nvariant: mutant-b\n"},
			"mutant-b: FAIL: liveness violated in 57 interleavings (2.1s); trace /tmp/t/mutant-b-liveness.trace"},
		{Report{Variant: "rwlock-mutant-a", Runs: 1, Failed: true, Property: "readers-share"}, "rwlock-mutant-a: FAIL: readers-share violated in 1 interleaving; no trace (a property of all the runs together)"},
		{Report{Variant: "recipe", Exhaustive: true, Exhausted: true, Schedules: 1234}, "recipe: pass: every property held in all 1234 schedules within the bound"},
		{Report{Variant: "recipe", Exhaustive: true, Schedules: 99}, "recipe: pass: every property held in 99 schedules, the budget ran out before the bound was exhausted"},
	}
	for _, c := range cases {
		for _, verb := range []string{"%v", "%+v", "%s"} {
			if got := fmt.Sprintf(verb, c.rep); got != c.want {
				t.Errorf("%s of %#v:\n got %s\nwant %s", verb, c.rep, got, c.want)
			}
		}
	}

	rep := Run(t, Recipe, Config{Name: "report-recipe", Checks: 3, TraceDir: t.TempDir()})
	if got := fmt.Sprintf("%+v", rep); !regexp.MustCompile(`^report-recipe: pass: every property held in \d+ interleavings \(.*\)$`).MatchString(got) || strings.Contains(got, "\n") {
		t.Fatalf("a Run's report: %q", got)
	}
}
