package check

import (
	"flag"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

var flagClassesRows = flag.String("check.classes.rows", "", "TestDPORLowerBound: measure make prove's rows whose \"variant K=k c=c F=f R=r\" matches this regular expression, rather than the small ones go test uses")

// steps makes a hand-written schedule: labels, with the effect effects names for some.
func steps(effects map[string]effect, labels ...string) []classStep {
	out := make([]classStep, len(labels))
	for i, l := range labels {
		out[i] = classStep{label: l, eff: effects[l]}
	}
	return out
}

// TestClassKeyMergesOnlySwapsOfIndependentSteps: two schedules that differ by swaps of independent decisions
// have one class key; a swap of dependent decisions gives another.
func TestClassKeyMergesOnlySwapsOfIndependentSteps(t *testing.T) {
	touched := map[string]effect{"apply c1": {touched: []int{2}}}
	oneVisible := map[string]effect{"deliver c1": {visible: true}}
	visible := map[string]effect{"deliver c1": {visible: true}, "deliver c2": {visible: true}}
	for _, c := range []struct {
		name    string
		effects map[string]effect
		a, b    []string // the two schedules
		same    bool
	}{
		{"a request applied and another client's reply", nil,
			[]string{"apply c1", "deliver c2", "apply c2"}, []string{"deliver c2", "apply c1", "apply c2"}, true},
		{"one decision moved past two of another client", nil,
			[]string{"deliver c2", "apply c1", "deliver c1"}, []string{"apply c1", "deliver c1", "deliver c2"}, true},
		{"two requests applied", nil,
			[]string{"apply c1", "apply c2", "deliver c1"}, []string{"apply c2", "apply c1", "deliver c1"}, false},
		{"a request that notified the other client", touched,
			[]string{"apply c1", "deliver c2"}, []string{"deliver c2", "apply c1"}, false},
		{"two steps the properties see", visible,
			[]string{"deliver c1", "deliver c2"}, []string{"deliver c2", "deliver c1"}, false},
		{"a fault", nil,
			[]string{"expire c1", "deliver c2"}, []string{"deliver c2", "expire c1"}, false},
		{"two register accesses", nil,
			[]string{"cs-read c1", "cs-write c2"}, []string{"cs-write c2", "cs-read c1"}, false},
		{"one client's own decisions", nil,
			[]string{"apply c1", "deliver c1"}, []string{"deliver c1", "apply c1"}, false},
		{"other decisions", nil,
			[]string{"apply c1", "deliver c2"}, []string{"apply c1", "deliver c1"}, false},
		{"a step the properties see and another client's", oneVisible,
			[]string{"deliver c1", "apply c2"}, []string{"apply c2", "deliver c1"}, true},
	} {
		a, b := steps(c.effects, c.a...), steps(c.effects, c.b...)
		if got := classKey(a, false) == classKey(b, false); got != c.same {
			t.Errorf("%s: %v and %v in one class: %v, want %v", c.name, c.a, c.b, got, c.same)
		}
		if classKey(a, false) != classKey(steps(c.effects, c.a...), false) {
			t.Errorf("%s: %v has two keys", c.name, c.a)
		}
		// Where neither step is one the cache orders across clients, the strict relation is the same.
		if got := classKey(a, true) == classKey(b, true); got != c.same {
			t.Errorf("%s, strict: %v and %v in one class: %v, want %v", c.name, c.a, c.b, got, c.same)
		}
	}
	// The strict relation keeps apart what the cache orders across clients: a lock taken (a step the
	// properties see) and another client's change of the tree, which the sleep sets' relation swaps.
	a := []classStep{{label: "deliver c1", eff: effect{visible: true}, cross: true}, {label: "apply c2", cross: true}}
	b := []classStep{a[1], a[0]}
	if classKey(a, false) != classKey(b, false) || classKey(a, true) == classKey(b, true) {
		t.Errorf("a visible step and a change of the tree: one class under the sleep sets' relation: %v (want true), under the strict one: %v (want false)",
			classKey(a, false) == classKey(b, false), classKey(a, true) == classKey(b, true))
	}
	// The premises, in the relation itself: the first swap is of independent decisions, the third's of
	// dependent ones (so that the cases test the key, whatever becomes of the relation).
	if !independent("apply c1", effect{}, "deliver c2", effect{}) || independent("apply c1", effect{}, "apply c2", effect{}) ||
		independent("apply c1", touched["apply c1"], "deliver c2", effect{}) {
		t.Error("the relation is not what the cases take it for: mend the cases")
	}
}

// classRow is one row of the measurement: the unreduced search's schedules and classes beside the cached
// search's schedules, cuts and states.
type classRow struct {
	row                     proofRow
	unreduced               classCount
	cached                  Report
	loose                   Report // the cached search with the looser projection (Config.looseProjection)
	unreducedTime, withTime time.Duration
}

// measureClasses searches a row twice, on one worker: without reduction, counting the classes, and as make
// prove does, with the state cache.
func measureClasses(t *testing.T, row proofRow) classRow {
	t.Helper()
	v, err := VariantByName(row.variant)
	if err != nil {
		t.Fatal(err)
	}
	cfg := row.config(v)
	cfg.Parallel, cfg.TraceDir = 1, t.TempDir()
	m := classRow{row: row}
	started := time.Now()
	m.unreduced = countClasses(t, v.clients(), cfg, time.Time{})
	m.unreducedTime = time.Since(started)
	started = time.Now()
	m.cached, _ = exploreExhaustive(t, v.clients(), cfg)
	m.withTime = time.Since(started)
	loose := cfg
	loose.looseProjection = true
	m.loose, _ = exploreExhaustive(t, v.clients(), loose)
	if !m.unreduced.exhausted || !m.cached.Exhausted || m.cached.Failed || !m.loose.Exhausted || m.loose.Failed {
		t.Fatalf("%s: a search did not exhaust the bound: without the cache %v, with it %v (failed %v), with the looser projection %v (failed %v)",
			row, m.unreduced.exhausted, m.cached.Exhausted, m.cached.Failed, m.loose.Exhausted, m.loose.Failed)
	}
	u := m.unreduced
	if u.classes < 1 || u.classes > u.strictClasses || u.strictClasses > u.schedules || m.cached.Schedules > u.schedules {
		t.Errorf("%s: %d classes (%d strict) of %d schedules without the cache, %d with it", row, u.classes, u.strictClasses, u.schedules, m.cached.Schedules)
	}
	if u.mixed > 0 || u.strictMixed > 0 {
		t.Errorf("%s: %d classes (%d strict) hold schedules that end in different states or verdicts: the relation is not one reordering cannot tell", row, u.mixed, u.strictMixed)
	}
	return m
}

// TestDPORLowerBound measures what DPOR could save the preemption-bounded search (classes_measure_test.go): the classes
// among the complete schedules of the search without reduction — a lower bound on the schedules any DPOR
// under the sleep sets' relation runs — beside the schedules the search runs with its state cache. Without
// -check.classes.rows it measures small bounds and checks the count is the same twice over.
func TestDPORLowerBound(t *testing.T) {
	var rows []proofRow
	if *flagClassesRows == "" {
		rows = []proofRow{{"recipe", 2, 1, 0, 0, 1}, {"rwlock", 2, 1, 0, 0, 1}}
	} else {
		only, err := regexp.Compile(*flagClassesRows)
		if err != nil {
			t.Fatalf("-check.classes.rows: %v", err)
		}
		for _, r := range proveRecipeRows() {
			if only.MatchString(r.String()) {
				rows = append(rows, r)
			}
		}
	}
	fmt.Printf("%-24s %9s %9s %7s %9s %9s %6s %9s %6s %9s %10s %10s\n", "row", "unreduced", "cached", "cut", "states", "classes", "ratio", "strict", "ratio", "loose", "t unred.", "t cached")
	for _, row := range rows {
		m := measureClasses(t, row)
		u, with := m.unreduced, float64(m.cached.Schedules)
		fmt.Printf("%-24s %9d %9d %7d %9d %9d %6.3f %9d %6.3f %9d %10s %10s\n", row, u.schedules, m.cached.Schedules, m.cached.Pruned, m.cached.States,
			u.classes, float64(u.classes)/with, u.strictClasses, float64(u.strictClasses)/with, m.loose.Schedules, m.unreducedTime.Round(time.Millisecond), m.withTime.Round(time.Millisecond))
		if *flagClassesRows == "" {
			v, err := VariantByName(row.variant)
			if err != nil {
				t.Fatal(err)
			}
			again := countClasses(t, v.clients(), row.config(v), time.Time{})
			if again != m.unreduced {
				t.Errorf("%s: two counts of one bound differ: %+v and %+v", row, m.unreduced, again)
			}
		}
	}
}

// TestClassesEndAlike: the relation the classes are counted under is one that reordering cannot tell, where
// that can be measured: on the recipe, every primitive and every mutant, two clients with one preemption
// and no fault (cacheBound), every schedule of a class ends in the same state of the model with the same
// verdict — the mutants' violations included, so that a DPOR under the relation would find what the full
// search finds. (Without preemption, with one fault, every schedule is a class of its own: a fault is
// dependent on everything, and the free switches give the order of the rest; measured, 7,812 schedules of
// the recipe, 7,812 classes.)
func TestClassesEndAlike(t *testing.T) {
	judged := 0
	for _, v := range Variants() {
		if strings.HasSuffix(v.Name, "-wire") || v.Name == "recipe-5-clients" || v.Name == "zk-lock" {
			continue
		}
		got := countClasses(t, v.clients(), cacheBound(v, false), time.Time{})
		if !got.exhausted || got.mixed > 0 || got.strictMixed > 0 || got.classes > got.strictClasses || got.strictClasses > got.schedules {
			t.Errorf("%s: %+v", v.Name, got)
		}
		if got.failedMerged > 0 {
			judged++
		}
		t.Logf("%s: %d schedules (%d failing), %d classes (%d of several schedules that fail), %d strict", v.Name, got.schedules, got.failed, got.classes, got.failedMerged, got.strictClasses)
	}
	// Measured: mutants d and g, the read-write lock's mutant b and the election's mutant d; the other
	// mutants these bounds catch fail in classes of one schedule, or with a fault.
	if judged < 4 {
		t.Errorf("%d searches have a class of several schedules that break a property: the comparison says little", judged)
	}
}
