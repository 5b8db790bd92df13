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

	"github.com/zkmodel/zkmodel/recipe"
)

var (
	flagVariant = flag.String("check.variant", "recipe", "TestExploreVariant: which variant to explore (see check.Variants)")
	flagJSON    = flag.String("check.json", "", "TestExploreVariant: write the Report as JSON to this file")
	flagRows    = flag.Int("check.rows", 2, "TestCheckAll: how many variants' explorations run at once")
)

// moduleRoot is the directory of the module's go.mod, found by walking up from the package's directory.
func moduleRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			panic("no go.mod above " + dir)
		}
	}
}

// corpusDir is the committed regression corpus, traces/ (make traces regenerates it).
func corpusDir() string { return filepath.Join(moduleRoot(), "traces") }

// shrinkTime is how long TestExploreVariant lets rapid shrink (make check sets -check.shrink).
func shrinkTime() time.Duration {
	if *flagShrink > 0 {
		return *flagShrink
	}
	return 5 * time.Second
}

// checks is how many interleavings TestExploreVariant explores of v: -check.n when set, else 2,000 for a
// mutex variant that must pass (500 for another primitive's, or for a mutant caught by a reachability
// property, which runs them all); for a mutant that must fail, a cap of at least mutantCap, -check.n or not.
func checks(v Variant) int {
	mutant := v.Expect != "" && !isReachability(v.Expect)
	switch {
	case *flagN > 0 && mutant:
		return max(*flagN, mutantCap)
	case *flagN > 0:
		return *flagN
	case v.Config.Primitive == Semaphore && v.Config.Leases > 1 && (v.Expect == "" || isReachability(v.Expect)):
		// Every lease held at once is reached in a few runs in a hundred (measured with seeded decisions:
		// 66 in 1,000 on the model's clients, 13 in 300 over the wire), fewer in rapid's first, short runs.
		if v.ZKFactory != nil {
			return 1000
		}
		return 2000
	case v.Config.Primitive != Mutex && (v.Expect == "" || isReachability(v.Expect)):
		// The primitives beyond the mutex, which run every interleaving: few here, make check's N in make check.
		return 500
	case v.Expect == "":
		return 2000
	}
	return mutantCap
}

// mutantCap is the fewest interleavings a mutant's row may explore to find its bug. A mutant's run stops at
// its first failure, so a high cap costs only the time to find it, and a low one makes make check flaky: at
// 1,000 the wire version of mutant f (lost requests) went uncaught about once in five runs of go test, and at
// 10,000 semaphore-mutant-e (three holders at once on two leases) about once in seventy — its first failure
// came after 23 to 9,841 interleavings in 16 seeds (rapid seeds 1–16, mean about 2,300), so a miss in
// 50,000 is a chance in some 10^9.
const mutantCap = 50000

// TestExploreVariant explores one variant (-check.variant, the recipe by default) and fails on a violation;
// TestCheckAll runs it in a child process for each variant, where a mutant's expected failure is the point.
func TestExploreVariant(t *testing.T) {
	v, err := VariantByName(*flagVariant)
	if err != nil {
		t.Fatal(err)
	}
	cfg := v.Config
	cfg.Checks = checks(v)
	cfg.Shrink = shrinkTime()
	if *flagTraces == "" {
		cfg.TraceDir = t.TempDir()
	}
	if *flagJSON != "" {
		cfg.Progress = os.Stderr
	}
	rep := runWith(t, v.clients(), cfg)
	if *flagJSON != "" {
		data, err := json.Marshal(rep)
		if err == nil {
			err = os.WriteFile(*flagJSON, data, 0o644)
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
	width := len("variant")
	for _, v := range Variants() {
		width = max(width, len(v.Name))
	}
	fmt.Printf("%-*s %-8s %-16s %13s %9s %14s %9s  %s\n", width, "variant", "verdict", "property", "interleavings", "per sec", "first failure", "decisions", "trace")
	// The rows run in child processes, *flagRows at a time (each with -check.parallel workers), so that one
	// row's shrinking, on one core, overlaps another row's search; the table keeps the variants' order.
	variants := Variants()
	reports := filepath.Join(t.TempDir(), "reports")
	if err := os.MkdirAll(reports, 0o755); err != nil {
		t.Fatal(err)
	}
	type row struct {
		rep Report
		err error
	}
	rows := make([]chan row, len(variants))
	slots := make(chan struct{}, max(*flagRows, 1))
	started := time.Now()
	for i, v := range variants {
		rows[i] = make(chan row, 1)
		go func() {
			slots <- struct{}{}
			rep, err := exploreInChild(v, traces, reports)
			<-slots
			rows[i] <- row{rep, err}
		}()
	}
	defer func() {
		fmt.Printf("make check: %d rows in %s, %d at a time\n", len(variants), time.Since(started).Round(time.Second), max(*flagRows, 1))
	}()
	for i, v := range variants {
		r := <-rows[i]
		if r.err != nil {
			t.Fatal(r.err)
		}
		rep := r.rep
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
		if trace == "" && isReachability(rep.Property) {
			trace = "- (no run is a counterexample: the property is of all the runs)"
		}
		if rel, err := filepath.Rel(moduleRoot(), trace); err == nil && !strings.HasPrefix(rel, "..") {
			trace = rel
		}
		rate := float64(rep.Runs) / rep.Elapsed.Seconds()
		fmt.Printf("%-*s %-8s %-16s %13d %9.0f %14s %9d  %s\n", width, v.Name, verdict, prop, rep.Runs, rate, first, rep.Decisions, trace)
		if v.Expect == "" {
			var kinds []string
			for _, f := range faultNames {
				kinds = append(kinds, fmt.Sprintf("%s %d", f.name, rep.Injected[f.name]))
			}
			fmt.Printf("%*s faults injected: %s\n", width, "", strings.Join(kinds, ", "))
		}
		switch {
		case v.Expect == "" && rep.Failed:
			t.Errorf("%s: %s violated: %s (trace %s)", v.Name, rep.Property, rep.Verdict, rep.Trace)
		case v.Expect != "" && !rep.Failed:
			t.Errorf("%s (%s): not caught in %d interleavings", v.Name, v.Bug, rep.Runs)
		case v.Expect != "" && !slices.Contains(strings.Split(v.Expect, "|"), rep.Property):
			t.Errorf("%s: caught by %s, want %s: %s", v.Name, rep.Property, v.Expect, rep.Verdict)
		case isReachability(rep.Property):
			// A property of all the runs together: no run is a counterexample, so there is no trace.
			if rep.Trace != "" {
				t.Errorf("%s: %s has a trace (%s); a reachability failure has none", v.Name, rep.Property, rep.Trace)
			}
		case v.Expect != "":
			tr, err := ParseTrace(rep.Trace)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := replayWith(t, v.clients(), tr); err != nil {
				t.Errorf("%s: the shrunk trace does not replay: %v", v.Name, err)
			}
		}
	}
}

// exploreInChild runs TestExploreVariant for v in a child test process, streaming its progress, and reads
// the Report it writes to dir.
func exploreInChild(v Variant, traces, dir string) (Report, error) {
	report := filepath.Join(dir, v.Name+".json")
	cmd := exec.Command(os.Args[0], "-test.run=^TestExploreVariant$", "-test.timeout=20m",
		"-check.variant="+v.Name, fmt.Sprintf("-check.n=%d", checks(v)), "-check.json="+report,
		"-check.traces="+traces, "-check.shrink="+shrinkTime().String())
	if *flagParallel > 0 {
		cmd.Args = append(cmd.Args, fmt.Sprintf("-check.parallel=%d", *flagParallel))
	}
	if *flagStrategy != "" {
		cmd.Args = append(cmd.Args, "-check.strategy="+*flagStrategy)
	}
	if rapidFlag("check.pct.depth") {
		cmd.Args = append(cmd.Args, fmt.Sprintf("-check.pct.depth=%d", *flagPCTDepth))
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return Report{}, err
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		return Report{}, fmt.Errorf("starting the child test for %s: %w", v.Name, err)
	}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		fmt.Println(sc.Text())
	}
	_ = cmd.Wait() // a mutant's child fails by design; the report says how
	data, err := os.ReadFile(report)
	if err != nil {
		return Report{}, fmt.Errorf("%s: the child test wrote no report: %w", v.Name, err)
	}
	var rep Report
	if err := json.Unmarshal(data, &rep); err != nil {
		return Report{}, fmt.Errorf("%s: reading the report: %w", v.Name, err)
	}
	return rep, nil
}

// seededDecider makes random decisions from a seed, for determinism tests without rapid.
type seededDecider struct{ r *rand.Rand }

func (d seededDecider) steps(max int) int { return max }

func (d seededDecider) runSeed() uint64 { return d.r.Uint64() }

// fixedIDs is a decider that draws no run seed (seed 0: node ids as before runs had seeds), for tests whose
// premise is that two locks name their nodes alike.
type fixedIDs struct{ decider }

func (d seededDecider) pick(progress, faults []choice) (string, error) {
	if len(faults) > 0 && (len(progress) == 0 || d.r.IntN(10) == 0) {
		return faults[d.r.IntN(len(faults))].label(), nil
	}
	if len(progress) == 0 {
		return "", nil
	}
	return progress[d.r.IntN(len(progress))].label(), nil
}

// TestSameDecisionsGiveByteIdenticalHistories runs every variant on the model's own clients twice with the
// same seeded decisions and every fault kind, and requires byte-identical traces: the mutex, the read-write
// lock, the semaphore and the election, recipes and mutants. CI runs it 1000 times, each time with seeds of
// its own (see sameDecisions).
func TestSameDecisionsGiveByteIdenticalHistories(t *testing.T) { sameDecisions(t, modelKind, 4) }

// TestSameDecisionsGiveByteIdenticalHistoriesOverTheWire is the same for every variant on go-zookeeper's
// clients over the wire, whose own goroutines (send and receive loops, pinger, reconnection) race as well.
// CI runs it 200 times.
func TestSameDecisionsGiveByteIdenticalHistoriesOverTheWire(t *testing.T) {
	sameDecisions(t, wireKind, 3)
}

// sameDecisionRounds counts sameDecisions' calls in this process: go test -count=N runs a test N times in
// one process, and each time takes the next seeds, so that N runs try N times as many decisions.
var sameDecisionRounds = map[string]uint64{}

// sameDecisions runs every variant on kind's clients twice with each of seeds seeded deciders (the next
// seeds each call) and requires byte-identical traces.
func sameDecisions(t *testing.T, kind string, seeds uint64) {
	round := sameDecisionRounds[kind]
	sameDecisionRounds[kind]++
	n := 0
	prims := map[Primitive]bool{}
	for _, v := range Variants() {
		if v.clients().name != kind {
			continue
		}
		n++
		prims[v.Config.Primitive] = true
		cfg := v.Config
		cfg.Faults = AllFaults // every variant, every fault kind: the locks' own goroutines race the most here
		cfg = cfg.withDefaults()
		for seed := round*seeds + 1; seed <= (round+1)*seeds; seed++ {
			var first, second string
			for i, out := range []*string{&first, &second} {
				synctest.Test(t, func(t *testing.T) {
					o := executeWith(v.clients(), cfg, seededDecider{rand.New(rand.NewPCG(seed, 7))})
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
	if n < 8 {
		t.Fatalf("only %d variants on %s clients", n, kind)
	}
	for _, p := range []Primitive{Mutex, ReadWrite, Semaphore, Election} {
		if !prims[p] {
			t.Errorf("no %s variant on %s clients: its histories are not shown deterministic", p, kind)
		}
	}
}

func firstDifference(a, b string) string {
	i, x, y, _ := firstDifferentLine(a, b)
	return fmt.Sprintf("line %d:\n  %s\n  %s", i+1, x, y)
}

// failingTrace finds a failing run of the leave-on-cancel mutant with seeded decisions, under the variant
// name name, and writes its trace to a file.
func failingTrace(t *testing.T, name string) (v Variant, cfg Config, out *outcome, path string) {
	t.Helper()
	cfg = Config{Name: name, Faults: FaultCancel}.withDefaults()
	v, err := VariantByName("mutant-e-leave-on-cancel")
	if err != nil {
		t.Fatal(err)
	}
	for seed := uint64(1); seed < 200 && (out == nil || !out.failed()); seed++ {
		synctest.Test(t, func(t *testing.T) {
			out = executeWith(v.clients(), cfg, fixedIDs{seededDecider{rand.New(rand.NewPCG(seed, 1))}})
		})
	}
	if !out.failed() {
		t.Fatal("no seed made the leave-on-cancel mutant fail")
	}
	path = filepath.Join(t.TempDir(), name+".trace")
	if err := os.WriteFile(path, []byte(out.render(cfg)), 0o644); err != nil {
		t.Fatal(err)
	}
	return v, cfg, out, path
}

func TestReplayReproducesARun(t *testing.T) {
	v, cfg, out, path := failingTrace(t, "mutant-e-leave-on-cancel")
	tr, err := ParseTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	text, err := replayWith(t, v.clients(), tr)
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
	if _, err = replayWith(t, v.clients(), tr); !errors.Is(err, ErrDiverged) || !strings.Contains(err.Error(), `recorded "`) || !strings.Contains(err.Error(), "round 7") {
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
	_, err = replayWith(t, v.clients(), tr)
	if !errors.Is(err, ErrDiverged) || !strings.Contains(err.Error(), `decision 1 "cs-write c9"`) {
		t.Fatalf("replaying a diverging trace: got %v, want ErrDiverged naming decision 1", err)
	}
}

func TestMalformedTracesGiveTheLine(t *testing.T) {
	good := "zkmodel trace v1\nvariant: recipe\nclients: 3\nproperty: none\n\ndecisions:\n  apply c2\n  # drain\n  deliver c2\n\nhistory:\n  step 1 ─ apply c2   (t=0s)\n\nfinal state:\n  time 0.000s\n\nverdict: none: every property held\nend of trace\n"
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
		{"truncated after the header", "zkmodel trace v1\nvariant: recipe\nclients: 3\nproperty: none\n", `:4: the trace is truncated: it ends inside its header, without its last line "end of trace"`},
		{"truncated in the decisions", strings.Split(good, "  # drain")[0], `:7: the trace is truncated: it ends inside its decisions section`},
		{"truncated in the history", strings.Split(good, "\nfinal state:")[0], `:12: the trace is truncated: it ends inside its history section`},
		{"written before the last line", strings.TrimSuffix(good, "end of trace\n"), `:17: the trace ends with its closing verdict but without the line "end of trace" after it`},
		{"empty", "", `: the file is empty, not a trace`},
		{"no decisions section", "zkmodel trace v1\nvariant: recipe\nclients: 3\nproperty: none\nend of trace\n", `without its "decisions:" section`},
		{"no drain", strings.Replace(good, "  # drain\n", "", 1), `without the "# drain" line`},
		{"no history section", strings.Split(good, "\nhistory:")[0] + "\nend of trace\n", `without its "history:" section`},
		{"bad decision after the drain", strings.Replace(good, "deliver c2", "deliver everything", 1), `:9: malformed decision`},
		{"two drains", strings.Replace(good, "deliver c2", "# drain", 1), `:9: a second "# drain"`},
		{"variant with a slash", strings.Replace(good, "variant: recipe", "variant: ../../etc/x", 1), `:2: check: Config.Name "../../etc/x"`},
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
	path := filepath.Join(t.TempDir(), "good.trace")
	if err := os.WriteFile(path, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	tr, err := ParseTrace(path)
	if err != nil {
		t.Fatalf("the well-formed trace: %v", err)
	}
	if !slices.Equal(tr.Decisions, []string{"apply c2"}) {
		t.Fatalf("decisions %q, want only those before the drain", tr.Decisions)
	}
}

func TestBadConfigsAreRefusedClearly(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{Clients: -1}, "Config.Clients is -1"},
		{Config{Rounds: -2}, "Config.Rounds is -2"},
		{Config{Steps: -3}, "Config.Steps is -3"},
		{Config{MaxFault: -1}, "Config.MaxFault is -1"},
		{Config{Checks: -5}, "Config.Checks is -5"},
		{Config{Shrink: -time.Second}, "Config.Shrink is -1s"},
		{Config{Faults: 1 << 12}, "unknown bits"},
		{Config{Name: "my/lock"}, `Config.Name "my/lock"`},
		{Config{Name: "a..b"}, `must not contain ".."`},
	}
	for _, c := range cases {
		if err := c.cfg.validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want an error containing %q", c.cfg, err, c.want)
		}
	}
	for _, ok := range []Config{{}, {Name: "my-lock_2.v1", Clients: 5, Deadline: -1, Faults: AllFaults}} {
		if err := ok.validate(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
}

func TestAFactoryReturningNilIsAClearError(t *testing.T) {
	var err error
	cfg := Config{Name: "nil-locker"}.withDefaults()
	nilFactory := func(recipe.Conn, string) Locker { return nil }
	synctest.Test(t, func(t *testing.T) {
		out := execute(nilFactory, cfg, &replayDecider{})
		if out.property == "setup" {
			err = errors.New(out.verdict)
		}
	})
	if err == nil || !strings.Contains(err.Error(), "nil Locker for client c1") {
		t.Fatalf("got %v, want the setup to name the nil Locker", err)
	}
	if err := probe(t, modelClients(nilFactory), cfg); err == nil || !strings.Contains(err.Error(), "nil-locker: the Factory returned a nil Locker") {
		t.Fatalf("probe: got %v", err)
	}
}

// TestCommittedTracesReplay replays the regression corpus in traces/: each must reproduce its recorded
// history and verdict, every time.
func TestCommittedTracesReplay(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(corpusDir(), "*.trace"))
	if err != nil {
		t.Fatal(err)
	}
	mutants := 0
	for _, v := range Variants() {
		if v.Expect != "" && !isReachability(v.Expect) {
			mutants++ // a mutant caught by a reachability property has no trace
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
			// A race that shows once in fifty runs must show here: replay each trace many times in a row.
			for i := 1; i <= replaysPerTrace; i++ {
				if _, err := replayWith(t, v.clients(), tr); err != nil {
					t.Fatalf("replay %d of %d: %v", i, replaysPerTrace, err)
				}
			}
		})
	}
}

// replaysPerTrace is how often TestCommittedTracesReplay replays each committed trace (a few seconds in all).
const replaysPerTrace = 100

// TestReplay is `make replay TRACE=…`: it replays a trace and prints it.
// The trace comes from -check.replay, the flag check.Run honours too.
func TestReplay(t *testing.T) {
	path := *flagReplay
	if path == "" {
		// Without a trace, replay the first committed one, so the test still tests something.
		paths, _ := filepath.Glob(filepath.Join(corpusDir(), "*.trace"))
		if len(paths) == 0 {
			t.Fatal("no trace given (-check.replay) and none in traces/")
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
	text, err := replayWith(t, v.clients(), tr)
	if *flagReplay != "" {
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
	p, v := h.Check()
	if p != "safety" {
		t.Fatalf("overlapping holds: got %q, want safety", p)
	}
	want := "c1 (token 10) from step 2 until step 4 (still held at the end), and c2 (token 11) from step 4 until step 4 (still held at the end)"
	if !strings.Contains(v, want) {
		t.Fatalf("verdict %q does not name the holds: want %q", v, want)
	}
}

// A token that does not grow from one holder to the next is caught by the fencing property, and by nothing
// else: the holds never overlap and the refused read linearizes.
func TestHistoryCatchesATokenThatDoesNotGrow(t *testing.T) {
	run := func(second int64) (string, string) {
		h := NewHistory()
		h.LockCalled(1)
		h.LockReturned(1, 20, 100, nil)
		v, _ := h.Read(1, 20)
		h.Write(1, 20, v+1)
		h.UnlockCalled(1)
		h.UnlockReturned(1, nil)
		h.LockCalled(2)
		h.LockReturned(2, second, 101, nil)
		h.Read(2, second)
		h.Abort(2)
		return h.Check()
	}
	if p, v := run(30); p != "" {
		t.Fatalf("a growing token: %s: %s", p, v)
	}
	p, v := run(15)
	if p != "fencing" || !strings.Contains(v, "refused c2's read at step 11 although c2 held the lock validly (since step 9, token 15)") || !strings.Contains(v, "c1's write at step 5 had used token 20") {
		t.Fatalf("a token that shrinks: got %q: %s", p, v)
	}
	// A holder whose session was lost may be refused: that is what the fence is for.
	h := NewHistory()
	h.LockCalled(1)
	h.LockReturned(1, 20, 100, nil)
	h.Read(1, 20)
	h.Write(1, 20, 1)
	h.SessionLost(100)
	h.LockCalled(2)
	h.LockReturned(2, 15, 101, nil)
	h.SessionLost(101)
	h.Read(2, 15)
	h.Abort(2)
	if p, v := h.Check(); p != "" {
		t.Fatalf("a refused holder whose session was lost: %s: %s", p, v)
	}
}

// TestRunReplaysAUsersTraceWithTheFlag is what a user does after a failure of their own lock: run their
// test again with -check.replay=FILE. The user's test is TestHelperUsersLock, run in a child process.
func TestRunReplaysAUsersTraceWithTheFlag(t *testing.T) {
	_, _, out, path := failingTrace(t, "users-lock")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperUsersLock$", "-test.v", "-check.replay="+path)
	cmd.Env = append(os.Environ(), "ZKMODEL_USERS_LOCK=1")
	got, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the replay of a failing trace passed:\n%s", got)
	}
	for _, want := range []string{out.historyText(), "check: replayed " + path + ": " + out.property + " violated"} {
		if !strings.Contains(string(got), want) {
			t.Fatalf("the child's output lacks %q:\n%s", want, got)
		}
	}
}

// TestHelperUsersLock stands for a user's own test of their lock; it runs only as the child process of
// TestRunReplaysAUsersTraceWithTheFlag.
func TestHelperUsersLock(t *testing.T) {
	if os.Getenv("ZKMODEL_USERS_LOCK") == "" {
		return
	}
	v, _ := VariantByName("mutant-e-leave-on-cancel")
	Run(t, v.Factory, Config{Name: "users-lock", Faults: FaultCancel})
}

// TestTracesWithServerStopsReplay: a run whose decisions stop and start servers of the ensemble writes a trace
// that parses and replays to the same text.
func TestTracesWithServerStopsReplay(t *testing.T) {
	v, err := VariantByName("recipe")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Name: "recipe", Faults: FaultStopServer}.withDefaults()
	var text string
	for seed := uint64(1); seed < 100 && !strings.Contains(text, "\n  stop s"); seed++ {
		synctest.Test(t, func(t *testing.T) {
			text = executeWith(v.clients(), cfg, seededDecider{rand.New(rand.NewPCG(seed, 1))}).render(cfg)
		})
	}
	if !strings.Contains(text, "\n  stop s") || !strings.Contains(text, "\n  start s") {
		t.Fatalf("no seed in 100 stopped and started a server:\n%s", text)
	}
	path := filepath.Join(t.TempDir(), "stops.trace")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	tr, err := ParseTrace(path)
	if err != nil {
		t.Fatalf("a trace with server stops does not parse: %v", err)
	}
	replayed, err := replayWith(t, v.clients(), tr)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if replayed != text {
		t.Fatalf("the replay printed something else:\n%s", firstDifference(text, replayed))
	}
}
