package check

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

var (
	flagVariant = flag.String("check.variant", "recipe", "TestExploreVariant: which variant to explore (see check.Variants)")
	flagN       = flag.Int("check.n", 0, "interleavings to explore per variant (0: 2000 for the recipe, 1000 for each mutant)")
	flagReport  = flag.String("check.report", "", "TestExploreVariant: write the report as JSON to this file")
	flagTraces  = flag.String("check.traces", "", "where failure traces go (default: a temporary directory; make check uses traces/)")
	flagShrink  = flag.Duration("check.shrink", 5*time.Second, "how long rapid may shrink each failure")
)

func checks(v Variant) int {
	switch {
	case *flagN > 0:
		return *flagN
	case v.Expect == "":
		return 2000
	}
	return 1000
}

// TestExploreVariant explores one variant (-check.variant, the recipe by default) and fails on a violation;
// TestCheckAll runs it in a child process for each variant, where a mutant's expected failure is the point.
func TestExploreVariant(t *testing.T) {
	v, err := VariantByName(*flagVariant)
	if err != nil {
		t.Fatal(err)
	}
	cfg := v.Config
	cfg.Checks = checks(v)
	cfg.Shrink = *flagShrink
	cfg.TraceDir = *flagTraces
	if cfg.TraceDir == "" {
		cfg.TraceDir = t.TempDir()
	}
	if *flagReport != "" {
		cfg.Progress = os.Stderr
	}
	rep := Run(t, v.Factory, cfg)
	if *flagReport != "" {
		data, err := json.Marshal(rep)
		if err == nil {
			err = os.WriteFile(*flagReport, data, 0o644)
		}
		if err != nil {
			t.Errorf("writing the report: %v", err)
		}
	}
}

// TestCheckAll is `make check`: the recipe must pass and every mutant must be caught by the property that
// targets its bug, with a trace that replays to the same verdict. It prints a table as it goes.
func TestCheckAll(t *testing.T) {
	traces := *flagTraces
	if traces == "" {
		traces = t.TempDir()
	}
	fmt.Printf("%-26s %-8s %-16s %13s %9s %14s %9s  %s\n", "variant", "verdict", "property", "interleavings", "per sec", "first failure", "decisions", "trace")
	for _, v := range Variants() {
		rep := exploreInChild(t, v, traces)
		verdict, first := "pass", "-"
		if rep.Failed {
			verdict, first = "caught", rep.FirstFail.Round(time.Millisecond).String()
		}
		if v.Expect == "" && rep.Failed {
			verdict = "FAILED"
		}
		if v.Expect != "" && !rep.Failed {
			verdict = "MISSED"
		}
		prop := rep.Property
		if prop == "" {
			prop = "-"
		}
		trace := rep.Trace
		if rel, err := filepath.Rel(moduleRoot(), trace); err == nil && !strings.HasPrefix(rel, "..") {
			trace = rel
		}
		rate := float64(rep.Runs) / rep.Elapsed.Seconds()
		fmt.Printf("%-26s %-8s %-16s %13d %9.0f %14s %9d  %s\n", v.Name, verdict, prop, rep.Runs, rate, first, rep.Decisions, trace)
		if v.Expect == "" {
			var kinds []string
			for _, f := range faultNames {
				kinds = append(kinds, fmt.Sprintf("%s %d", f.name, rep.Injected[f.name]))
			}
			fmt.Printf("%26s faults injected: %s\n", "", strings.Join(kinds, ", "))
		}
		switch {
		case v.Expect == "" && rep.Failed:
			t.Errorf("%s: %s violated: %s (trace %s)", v.Name, rep.Property, rep.Verdict, rep.Trace)
		case v.Expect != "" && !rep.Failed:
			t.Errorf("%s (%s): not caught in %d interleavings", v.Name, v.Bug, rep.Runs)
		case v.Expect != "" && !slices.Contains(strings.Split(v.Expect, "|"), rep.Property):
			t.Errorf("%s: caught by %s, want %s: %s", v.Name, rep.Property, v.Expect, rep.Verdict)
		case v.Expect != "":
			tr, err := ParseTrace(rep.Trace)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Replay(t, v.Factory, tr); err != nil {
				t.Errorf("%s: the shrunk trace does not replay: %v", v.Name, err)
			}
		}
	}
}

func moduleRoot() string { return filepath.Dir(defaultTraceDir()) }

// exploreInChild runs TestExploreVariant for v in a child test process, streaming its progress.
func exploreInChild(t *testing.T, v Variant, traces string) Report {
	t.Helper()
	report := filepath.Join(t.TempDir(), v.Name+".json")
	cmd := exec.Command(os.Args[0], "-test.run=^TestExploreVariant$", "-test.timeout=20m",
		"-check.variant="+v.Name, fmt.Sprintf("-check.n=%d", checks(v)), "-check.report="+report,
		"-check.traces="+traces, "-check.shrink="+flagShrink.String())
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the child test for %s: %v", v.Name, err)
	}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		fmt.Println(sc.Text())
	}
	_ = cmd.Wait() // a mutant's child fails by design; the report says how
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("%s: the child test wrote no report: %v", v.Name, err)
	}
	var rep Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatalf("%s: reading the report: %v", v.Name, err)
	}
	return rep
}

// seededDecider makes random decisions from a seed, for determinism tests without rapid.
type seededDecider struct{ r *rand.Rand }

func (d seededDecider) steps(max int) int { return max }

func (d seededDecider) pick(progress, faults []choice) (string, error) {
	if len(faults) > 0 && (len(progress) == 0 || d.r.IntN(10) == 0) {
		return faults[d.r.IntN(len(faults))].label, nil
	}
	if len(progress) == 0 {
		return "", nil
	}
	return progress[d.r.IntN(len(progress))].label, nil
}

func TestSameDecisionsGiveByteIdenticalHistories(t *testing.T) {
	for _, v := range Variants() {
		cfg := v.Config
		cfg.Faults = AllFaults // every variant, every fault kind: the locks' own goroutines race the most here
		cfg = cfg.withDefaults()
		for seed := uint64(1); seed <= 10; seed++ {
			var first, second string
			for i, out := range []*string{&first, &second} {
				synctest.Test(t, func(t *testing.T) {
					o := execute(v.Factory, cfg, seededDecider{rand.New(rand.NewPCG(seed, 7))})
					*out = o.render(cfg)
				})
				if i == 0 && !strings.Contains(first, "step 10 ") {
					t.Fatalf("%s, seed %d: the run is too short to show anything:\n%s", v.Name, seed, first)
				}
			}
			if first != second {
				t.Fatalf("%s, seed %d: two runs with the same decisions differ:\n%s", v.Name, seed, firstDifference(first, second))
			}
		}
	}
}

func firstDifference(a, b string) string {
	i, x, y, _ := firstDifferentLine(a, b)
	return fmt.Sprintf("line %d:\n  %s\n  %s", i+1, x, y)
}

func TestReplayReproducesARun(t *testing.T) {
	cfg := Config{Name: "mutant-e-leave-on-cancel", Faults: FaultCancel}.withDefaults()
	v, err := VariantByName(cfg.Name)
	if err != nil {
		t.Fatal(err)
	}
	// Find a failing run with seeded decisions, write it, replay it.
	var out *outcome
	for seed := uint64(1); seed < 200 && (out == nil || !out.failed()); seed++ {
		synctest.Test(t, func(t *testing.T) {
			out = execute(v.Factory, cfg, seededDecider{rand.New(rand.NewPCG(seed, 1))})
		})
	}
	if !out.failed() {
		t.Fatal("no seed made the leave-on-cancel mutant fail")
	}
	path := filepath.Join(t.TempDir(), "x.trace")
	if err := os.WriteFile(path, []byte(out.render(cfg)), 0o644); err != nil {
		t.Fatal(err)
	}
	tr, err := ParseTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	text, err := Replay(t, v.Factory, tr)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if text != out.render(cfg) {
		t.Fatalf("the replay printed something else:\n%s", firstDifference(out.render(cfg), text))
	}

	// A trace whose history no longer comes out the same names the first line that differs, and its step.
	data, _ := os.ReadFile(path)
	tampered := strings.Replace(string(data), "Lock() round 1", "Lock() round 7", 1)
	if err := os.WriteFile(path, []byte(tampered), 0o644); err != nil {
		t.Fatal(err)
	}
	if tr, err = ParseTrace(path); err != nil {
		t.Fatal(err)
	}
	if _, err = Replay(t, v.Factory, tr); !errors.Is(err, ErrDiverged) || !strings.Contains(err.Error(), `recorded "`) || !strings.Contains(err.Error(), "round 7") {
		t.Fatalf("replaying a trace with a changed history: got %v, want ErrDiverged quoting the changed line", err)
	}

	// A trace whose decision cannot be taken names the step that diverged.
	broken := strings.Replace(string(data), "\ndecisions:\n", "\ndecisions:\n  cs-write c9\n", 1)
	if err := os.WriteFile(path, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	tr, err = ParseTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Replay(t, v.Factory, tr)
	if !errors.Is(err, ErrDiverged) || !strings.Contains(err.Error(), `decision 1 "cs-write c9"`) {
		t.Fatalf("replaying a diverging trace: got %v, want ErrDiverged naming decision 1", err)
	}
}

func TestMalformedTracesGiveTheLine(t *testing.T) {
	good := "zkmodel trace v1\nvariant: recipe\nclients: 3\nproperty: none\n\ndecisions:\n  apply c2\n"
	cases := []struct {
		name, text, want string
	}{
		{"not a trace", "hello\n", ":1: not a zkmodel trace"},
		{"bad header line", strings.Replace(good, "clients: 3", "clients 3", 1), `:3: want "key: value"`},
		{"bad number", strings.Replace(good, "clients: 3", "clients: three", 1), ":3: clients: want a whole number"},
		{"unknown key", strings.Replace(good, "clients: 3", "colour: blue", 1), `:3: unknown header key "colour"`},
		{"bad decision", strings.Replace(good, "apply c2", "apply two", 1), `:7: malformed decision`},
		{"unknown fault", strings.Replace(good, "clients: 3", "clients: 3\nfaults: gremlins", 1), `:4: check: unknown fault kind "gremlins"`},
		{"missing variant", strings.Replace(good, "variant: recipe\n", "", 1), `no "variant" line`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.trace")
			if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ParseTrace(path)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("got %v, want an error naming %s and containing %q", err, path, c.want)
			}
		})
	}
	if _, err := ParseTrace(filepath.Join(t.TempDir(), "missing.trace")); err == nil {
		t.Fatal("a missing file parsed")
	}
}

// TestCommittedTracesReplay replays the regression corpus in traces/: each must reproduce its recorded
// history and verdict.
func TestCommittedTracesReplay(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(defaultTraceDir(), "*.trace"))
	if err != nil {
		t.Fatal(err)
	}
	mutants := 0
	for _, v := range Variants() {
		if v.Expect != "" {
			mutants++
		}
	}
	if len(paths) < mutants {
		t.Fatalf("traces/ holds %d traces; want one per mutant (run make check to regenerate them)", len(paths))
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			tr, err := ParseTrace(path)
			if err != nil {
				t.Fatal(err)
			}
			v, err := VariantByName(tr.Config.Name)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Replay(t, v.Factory, tr); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestReplay is `make replay TRACE=…`: it replays a trace and prints it.
var flagTrace = flag.String("check.trace", "", "TestReplay: the trace to replay and print")

func TestReplay(t *testing.T) {
	path := *flagTrace
	if path == "" {
		// Without a trace, replay the first committed one, so the test still tests something.
		paths, _ := filepath.Glob(filepath.Join(defaultTraceDir(), "*.trace"))
		if len(paths) == 0 {
			t.Fatal("no trace given (-check.trace) and none in traces/")
		}
		path = paths[0]
	}
	tr, err := ParseTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := VariantByName(tr.Config.Name)
	if err != nil {
		t.Fatalf("%v (traces of your own locks replay with check.Replay and your Factory)", err)
	}
	text, err := Replay(t, v.Factory, tr)
	if *flagTrace != "" {
		fmt.Print(text)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func TestHistoryCatchesOverlap(t *testing.T) {
	h := NewHistory()
	h.LockCalled(1)
	h.LockReturned(1, 10, 100, nil)
	h.LockCalled(2)
	h.LockReturned(2, 11, 101, nil)
	if p, _ := h.Check(); p != "safety" {
		t.Fatalf("overlapping holds: got %q, want safety", p)
	}
}
