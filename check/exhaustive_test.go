package check

import (
	"cmp"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

var flagProve = flag.Bool("check.prove", false, "TestProve: search the stated bounds (make prove) rather than the small ones go test uses")

// flagProveRows runs only TestProve's rows whose key matches, so that a row can be measured on its own on a
// shared machine.
var flagProveRows = flag.String("check.prove.rows", "", "TestProve: only the rows whose \"variant K=k c=c F=f R=r\" matches this regular expression")

// smallBound is a variant's configuration cut down to a bound that a full search without reduction covers
// in seconds: two clients, one round, five decisions, one fault.
func smallBound(v Variant) Config {
	cfg := v.Config
	cfg.Clients, cfg.Rounds, cfg.Steps, cfg.MaxFault = 2, 1, 5, 1
	return cfg.withDefaults()
}

// TestExhaustiveReductionAgreesWithFullSearch: partial-order reduction is sound where it can be shown to be:
// on the recipe and every mutant, in a bound small enough for the unreduced search, the reduced search
// finds exactly the properties the full one finds violated — and it runs fewer schedules.
func TestExhaustiveReductionAgreesWithFullSearch(t *testing.T) {
	caught := 0
	for _, v := range Variants() {
		if strings.HasSuffix(v.Name, "-wire") || v.Name == "recipe-5-clients" || v.Name == "zk-lock" {
			continue
		}
		t.Run(v.Name, func(t *testing.T) {
			cfg := smallBound(v)
			full := exhaust(t, v.clients(), cfg, cfg.Steps, false, stopOnNone, time.Time{})
			reduced := exhaust(t, v.clients(), cfg, cfg.Steps, true, stopOnNone, time.Time{})
			if !full.exhausted || !reduced.exhausted {
				t.Fatalf("a search stopped early: full exhausted %v, reduced %v", full.exhausted, reduced.exhausted)
			}
			fullProps, reducedProps := slices.Sorted(maps.Keys(full.violated)), slices.Sorted(maps.Keys(reduced.violated))
			if !slices.Equal(fullProps, reducedProps) {
				t.Errorf("the full search found %v violated, the reduced one %v", fullProps, reducedProps)
			}
			if reduced.schedules > full.schedules {
				t.Errorf("the reduced search ran %d schedules, the full one %d", reduced.schedules, full.schedules)
			}
			if v.Name == "recipe" && reduced.schedules >= full.schedules {
				t.Errorf("reduction saved nothing on the recipe: %d schedules reduced, %d full", reduced.schedules, full.schedules)
			}
			if len(fullProps) > 0 {
				caught++
			}
			t.Logf("%s (K=2, 1 round, depth 5, F<=1): full %d schedules / %d decision points, reduced %d (+%d pruned) / %d; violated %v",
				v.Name, full.schedules, full.points, reduced.schedules, reduced.pruned, reduced.points, fullProps)
		})
	}
	if caught < 3 {
		t.Errorf("only %d variants violate a property in the small bound: the comparison says little", caught)
	}
}

// TestExhaustiveShortestTraceReplays: the exhaustive mode reports the shortest failing schedule — no schedule
// of one decision fewer breaks that property — and its trace replays to the same verdict.
func TestExhaustiveShortestTraceReplays(t *testing.T) {
	v, err := VariantByName("mutant-d-order-by-name")
	if err != nil {
		t.Fatal(err)
	}
	cfg := v.Config
	cfg.Rounds, cfg.Steps, cfg.Exhaustive, cfg.TraceDir = 1, 10, true, t.TempDir()
	cfg = cfg.withDefaults()
	rep, fail := exploreExhaustive(t, v.clients(), cfg)
	if !rep.Failed || fail == nil || !slices.Contains(strings.Split(v.Expect, "|"), rep.Property) {
		t.Fatalf("%s not caught as %s: %+v", v.Name, v.Expect, rep)
	}
	if rep.Decisions != fail.explored || rep.Decisions < 1 || rep.Decisions >= cfg.Steps {
		t.Fatalf("report says %d decisions, the failing run took %d (bound %d)", rep.Decisions, fail.explored, cfg.Steps)
	}
	shorter := exhaust(t, v.clients(), cfg, rep.Decisions-1, true, rep.Property, time.Time{})
	if !shorter.exhausted || shorter.violated[rep.Property] != nil {
		t.Errorf("a schedule of %d decisions breaks %s too: the reported one (%d) is not the shortest", rep.Decisions-1, rep.Property, rep.Decisions)
	}
	path := filepath.Join(t.TempDir(), "shortest.trace")
	if err := os.WriteFile(path, []byte(fail.render(cfg)), 0o644); err != nil {
		t.Fatal(err)
	}
	tr, err := ParseTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replayWith(t, v.clients(), tr); err != nil {
		t.Errorf("the shortest trace does not replay: %v", err)
	}
}

// TestExhaustiveIsDeterministic: the same bound gives the same search, count for count (with sleep sets,
// and with DPOR), and a search the budget stops says it did not exhaust the bound.
func TestExhaustiveIsDeterministic(t *testing.T) {
	v, err := VariantByName("recipe")
	if err != nil {
		t.Fatal(err)
	}
	cfg := smallBound(v)
	first := exhaust(t, v.clients(), cfg, cfg.Steps, true, stopOnNone, time.Time{})
	second := exhaust(t, v.clients(), cfg, cfg.Steps, true, stopOnNone, time.Time{})
	if first.schedules != second.schedules || first.pruned != second.pruned || first.points != second.points {
		t.Errorf("two searches of one bound differ: %d/%d/%d and %d/%d/%d schedules/pruned/points",
			first.schedules, first.pruned, first.points, second.schedules, second.pruned, second.points)
	}
	stopped := exhaust(t, v.clients(), cfg, cfg.Steps, true, stopOnNone, time.Now())
	if stopped.exhausted {
		t.Error("a search whose deadline had passed says it exhausted the bound")
	}
	// DPOR's backtrack sets grow with what each run finds: the same bound still gives the same search.
	bounded := cacheBound(v, false)
	bounded.DPOR = true
	first = exhaust(t, v.clients(), bounded, 0, true, stopOnNone, time.Time{})
	second = exhaust(t, v.clients(), bounded, 0, true, stopOnNone, time.Time{})
	if first.schedules != second.schedules || first.points != second.points || first.schedules == 0 {
		t.Errorf("two DPOR searches of one bound differ: %d/%d and %d/%d schedules/points", first.schedules, first.points, second.schedules, second.points)
	}
}

// proofRow is one row of make prove: a variant searched exhaustively, every complete schedule of its
// clients (one round each) that preempts a runnable client at most preemptions times, with at most faults
// faults of the row's kinds anywhere.
type proofRow struct {
	variant                      string
	clients, preemptions, faults int
	kinds                        Fault
	rounds                       int // 0: one
}

// proofFaults are the fault kinds of the proof rows with a fault: the session's expiry and a reply lost with
// its connection (the ambiguous create), the two every lock recipe is written against. Each kind multiplies
// a row's schedules (measured on the recipe, two clients, one preemption, one fault of the kind, with sleep
// sets: from 729 schedules to 6,678 with lost requests, 11,115 lost replies, 19,125 dropped connections,
// 34,006 expiries, 22,275 clock jumps, 2,931 cancellations), so make prove takes two.
const proofFaults = FaultExpire | FaultLoseReply

var flagProveReduction = flag.String("check.prove.reduction", "", "TestProve: the preemption-bounded search's reduction on every row, cache or dpor (default: DPOR on the mutex's, read-write lock's and election's rows without a fault, the state cache on the others)")

// byDPOR says whether the row's search reduces by DPOR (dpor.go) rather than by the state cache, unless
// -check.prove.reduction says: where DPOR runs materially fewer schedules (measured row by row,
// docs/exhaustive.md) — the mutex's, the read-write lock's and the election's rows without a fault. With a
// fault in the bound every schedule is nearly a class of its own and the cache merges more; on the
// semaphores DPOR runs 87 to 97 % of the cache's schedules, and on one worker, where the cache's search is
// split among all.
func (r proofRow) byDPOR() bool {
	switch *flagProveReduction {
	case "cache":
		return false
	case "dpor":
		return true
	}
	return r.faults == 0 && !strings.HasPrefix(r.variant, "semaphore")
}

// reduction names the row's reduction in make prove's table.
func (r proofRow) reduction() string {
	if r.byDPOR() {
		return "DPOR"
	}
	return "cache"
}

// String is the row's key for -check.prove.rows: "semaphore K=3 c=1 F=0 R=1".
func (r proofRow) String() string {
	return fmt.Sprintf("%s K=%d c=%d F=%d R=%d", r.variant, r.clients, r.preemptions, r.faults, max(r.rounds, 1))
}

// bound says a row's bound in one line a user can quote.
func (r proofRow) bound() string {
	pre := "no preemption"
	if r.preemptions > 0 {
		pre = "at most " + plural(r.preemptions, "preemption")
	}
	faults := "no fault"
	if r.faults > 0 && r.kinds != 0 {
		faults = fmt.Sprintf("at most %s (%s)", plural(r.faults, "fault"), r.kinds)
	}
	rounds := "one round"
	if r.rounds > 1 {
		rounds = plural(r.rounds, "round")
	}
	return fmt.Sprintf("every complete schedule of %d clients, %s each, with %s and %s", r.clients, rounds, pre, faults)
}

// config is the row's exploration of v.
func (r proofRow) config(v Variant) Config {
	cfg := v.Config
	cfg.Clients, cfg.Rounds, cfg.Exhaustive = r.clients, max(r.rounds, 1), true
	cfg.Preemptions, cfg.MaxFault, cfg.Faults = r.preemptions, max(r.faults, 1), r.kinds
	if r.preemptions == 0 {
		cfg.Preemptions = Unpreempted
	}
	if r.faults == 0 {
		cfg.Faults = 0
	}
	return cfg.withDefaults()
}

// proveRecipes are the primitives make prove proves.
var proveRecipes = []string{"recipe", "rwlock", "semaphore-1-lease", "semaphore", "election"}

// fullRows are make prove's rows of the primitive rec.
func fullRows(rec string) []proofRow {
	// Two leases need three clients for anyone to wait, and two for both leases to be held at once (one
	// preemption: a holder is preempted while it holds). Three clients with one preemption (its schedules
	// hold every one of three clients without preemption): the longest rows, the one-lease semaphore's 8
	// minutes of CPU (docs/exhaustive.md).
	return []proofRow{{rec, 2, 2, 0, 0, 1}, {rec, 2, 1, 1, proofFaults, 1}, {rec, 3, 1, 0, 0, 1}}
}

// proveRecipeRows are make prove's rows of the primitives themselves: each one's own, and the rows the
// reachability mutants are judged against (the read-write lock's two rounds, the two-lease semaphore's
// one preemption).
func proveRecipeRows() []proofRow {
	var rows []proofRow
	for _, rec := range proveRecipes {
		rows = append(rows, fullRows(rec)...)
	}
	return append(rows, proofRow{"rwlock", 2, 1, 0, 0, 2}, proofRow{"semaphore", 2, 1, 0, 0, 1})
}

// TestProve is `make prove`: for every primitive — the mutex, the read-write lock, the semaphore with one
// lease and with two, and leader election — every complete schedule within a preemption bound (as CHESS
// states its guarantees) keeps every property; and every mutant of every primitive is caught within such a
// bound, with the failing schedule of the fewest preemptions (the shortest, when none is needed). A property
// of all the schedules together (readers-share, leases-share) is judged only where the bound reaches it:
// where the recipe's own search in the same bound shares. Without -check.prove the bounds are cut down so
// that go test stays quick.
func TestProve(t *testing.T) {
	full := *flagProve
	var rows []proofRow
	for _, rec := range proveRecipes {
		switch {
		case full:
			rows = append(rows, fullRows(rec)...)
		case rec == "semaphore":
			rows = append(rows, proofRow{rec, 2, 1, 0, 0, 1}, proofRow{variant: rec, clients: 3, rounds: 1})
		default:
			rows = append(rows, proofRow{rec, 2, 1, 0, 0, 1})
		}
	}
	// The recipes' rows say which bounds reach each primitive's sharing.
	reached := map[string]bool{}
	key := func(v Variant, r proofRow) string {
		return fmt.Sprintf("%s/%d/%d/%d/%d/%d/%d", v.Config.Primitive, v.Config.withDefaults().Leases, r.clients, r.rounds, r.preemptions, r.faults, r.kinds)
	}
	var mutantRows []proofRow
	for _, v := range Variants() {
		if v.Expect == "" || strings.HasSuffix(v.Name, "-wire") || v.Name == "zk-lock" {
			continue
		}
		// Without faults first; with one of the mutant's own fault kinds if that misses it (below).
		k := v.Config.withDefaults().Clients
		r := proofRow{v.Name, k, 1, 0, 0, 1}
		if k == 2 {
			r.preemptions = 2
		}
		if isReachability(v.Expect) {
			if !full && v.Config.Primitive == ReadWrite {
				fmt.Printf("%s: searched by make prove only (its property is of all the schedules together)\n", v.Name)
				continue
			}
			// Judged against the recipe's row of the same bound, one where two readers (or both leases'
			// holders) can overlap: the read-write lock's readers are c2 in the first round and c1 in the
			// second; the two-lease semaphore's holders overlap when one is preempted while it holds, which
			// two clients and one preemption reach (three clients without preemption never do: a client
			// runs its critical section through unless preempted).
			r = proofRow{v.Name, 2, 1, 0, 0, 1}
			if v.Config.Primitive == ReadWrite {
				r.rounds = 2
			}
			rows = append(rows, proofRow{map[Primitive]string{ReadWrite: "rwlock", Semaphore: "semaphore"}[v.Config.Primitive], r.clients, r.preemptions, 0, 0, r.rounds})
		}
		mutantRows = append(mutantRows, r)
	}
	rows = append(rows, mutantRows...)

	only, err := regexp.Compile(*flagProveRows)
	if err != nil {
		t.Fatalf("-check.prove.rows: %v", err)
	}
	if r := *flagProveReduction; r != "" && r != "cache" && r != "dpor" {
		t.Fatalf("-check.prove.reduction=%q: want cache or dpor (or nothing for make prove's choice)", r)
	}
	fmt.Printf("%-40s %2s %2s %2s %2s %-5s %-8s %-26s %9s %8s %9s %9s %9s\n", "variant", "K", "R", "c", "F", "by", "verdict", "property", "schedules", "cut", "states", "decisions", "time")
	var traces, bounds []string
	seen := map[string]bool{}
	for _, row := range rows {
		v, err := VariantByName(row.variant)
		if err != nil {
			t.Fatal(err)
		}
		if seen[key(v, row)+v.Name] || !only.MatchString(row.String()) {
			continue
		}
		seen[key(v, row)+v.Name] = true
		cfg := row.config(v)
		cfg.TraceDir = cmp.Or(*flagTraces, t.TempDir())
		cfg.DPOR = row.byDPOR()
		if full {
			cfg.Progress = os.Stderr
		}
		started := time.Now()
		rep, fail := exploreExhaustive(t, v.clients(), cfg)
		// A mutant not caught within its first bound gets the next: one more preemption (two at most), then
		// one fault of its own kinds.
		for _, next := range []func(r *proofRow) bool{
			func(r *proofRow) bool { r.preemptions++; return r.preemptions <= 2 },
			func(r *proofRow) bool { r.faults, r.kinds = 1, v.Config.Faults; return v.Config.Faults != 0 },
		} {
			if v.Expect == "" || isReachability(v.Expect) || rep.Failed || !next(&row) {
				continue
			}
			cfg = row.config(v)
			cfg.TraceDir = cmp.Or(*flagTraces, t.TempDir())
			cfg.DPOR = row.byDPOR()
			rep, fail = exploreExhaustive(t, v.clients(), cfg)
		}
		rep.Elapsed = time.Since(started)
		if rep.Exhaustive && !rep.Failed && rep.Exhausted {
			if prop, _ := reachability(cfg, rep.Schedules, rep.shared); prop != "" {
				rep.NotReached = prop
			} else if v.Expect == "" {
				reached[key(v, row)] = true
			}
		}
		verdict, prop, decisions := "proved", "-", "-"
		switch {
		case v.Expect == "" && rep.Failed:
			verdict = "FAILED"
			t.Errorf("%s: %s violated within %s: %s", v.Name, rep.Property, row.bound(), rep.Verdict)
		case v.Expect == "" && !rep.Exhausted:
			verdict = "partial"
			t.Errorf("%s: the search did not exhaust %s", v.Name, row.bound())
		case v.Expect == "":
			if rep.NotReached != "" {
				prop = rep.NotReached + " not reached"
			}
			size := fmt.Sprintf("%d schedules, %d states", rep.Schedules, rep.States)
			if cfg.DPOR {
				size = fmt.Sprintf("%d schedules (DPOR)", rep.Schedules)
			}
			bounds = append(bounds, fmt.Sprintf("%s: %s: %s: proved", v.Name, row.bound(), size))
		case isReachability(v.Expect) && rep.NotReached == v.Expect && reached[key(v, row)]:
			verdict, prop = "caught", v.Expect
		case isReachability(v.Expect) && rep.NotReached == v.Expect:
			// The recipe's own search of the bound does not share either: the bound cannot judge the mutant.
			// Never a false alarm, but a row chosen wrongly: every mutant's bound must reach its sharing.
			verdict, prop = "unjudged", v.Expect+" not reached"
			t.Errorf("%s: %s not reached by the recipe either within %s: the bound cannot judge it", v.Name, v.Expect, row.bound())
		case !rep.Failed:
			verdict = "MISSED"
			t.Errorf("%s (%s): no schedule within %s breaks it", v.Name, v.Bug, row.bound())
		default:
			verdict, prop, decisions = "caught", rep.Property, fmt.Sprint(fail.explored)
			if !slices.Contains(strings.Split(v.Expect, "|"), rep.Property) {
				t.Errorf("%s: caught by %s, want %s", v.Name, rep.Property, v.Expect)
			}
			// The failing schedule's trace, kept and replayed like make check's.
			path, err := writeTrace(cfg, fail)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := ParseTrace(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := replayWith(t, v.clients(), tr); err != nil {
				t.Errorf("%s: the failing schedule's trace does not replay: %v", v.Name, err)
			}
			traces = append(traces, path)
		}
		fmt.Printf("%-40s %2d %2d %2d %2d %-5s %-8s %-26s %9d %8d %9d %9s %9s\n", v.Name, row.clients, max(row.rounds, 1), row.preemptions, row.faults, row.reduction(), verdict, prop,
			rep.Schedules, rep.Pruned, rep.States, decisions, rep.Elapsed.Round(time.Millisecond))
	}
	fmt.Println()
	for _, b := range bounds {
		fmt.Println(b)
	}
	if *flagTraces != "" {
		fmt.Printf("the failing schedules' traces (each replays): %s\n", strings.Join(traces, ", "))
	}
}

// TestSleepSetsAreOffUnderAPreemptionBound: sleep sets and a preemption bound do not compose (a sleeping
// decision stands for reorderings that may cost a preemption more, which the bound then cuts), so the
// preemption-bounded search runs without them whatever Config.NoReduction says (its reduction is the state
// cache). With them, two clients of rwlock-mutant-b with one preemption showed fencing violated but not
// safety; without, both.
func TestSleepSetsAreOffUnderAPreemptionBound(t *testing.T) {
	v, err := VariantByName("rwlock-mutant-b-writer-ignores-readers")
	if err != nil {
		t.Fatal(err)
	}
	cfg := v.Config
	cfg.Clients, cfg.Rounds, cfg.Preemptions = 2, 1, 1
	cfg = cfg.withDefaults()
	asked := exhaust(t, v.clients(), cfg, 0, true, stopOnNone, time.Time{})
	plain := exhaust(t, v.clients(), cfg, 0, false, stopOnNone, time.Time{})
	got, want := slices.Sorted(maps.Keys(asked.violated)), slices.Sorted(maps.Keys(plain.violated))
	// Asked for reduction, the search caches states instead (statecache.go): the same verdicts, and every
	// run it does not judge was cut at an explored state.
	if !slices.Equal(got, want) || !slices.Contains(got, "safety") || asked.schedules > plain.schedules || asked.pruned > 0 && asked.states == 0 || plain.pruned != 0 {
		t.Errorf("asked for reduction: %v violated in %d schedules (%d cut, %d states); without: %v in %d (%d pruned)", got, asked.schedules, asked.pruned, asked.states, want, plain.schedules, plain.pruned)
	}
}

// TestPreemptionBoundCounts: a switch away from a client that can go on is a preemption, a switch from one
// that cannot is free, a fault is neither; once the preemptions are spent only the running client's own
// choices and the faults are offered.
func TestPreemptionBoundCounts(t *testing.T) {
	var p preemption
	all := []string{"apply c1", "deliver c2", "expire c1"}
	if got := p.allowed(all, 2, 1); !slices.Equal(got, all) {
		t.Fatalf("at the start: %v", got)
	}
	p.taken("apply c1") // the first decision: free
	if got := p.allowed([]string{"deliver c1", "apply c2", "disconnect c2"}, 2, 1); len(got) != 3 {
		t.Fatalf("with a preemption left: %v", got)
	}
	p.taken("apply c2") // c1 could go on: a preemption
	if p.preempts != 1 || p.running != 2 {
		t.Fatalf("after switching from a runnable c1: %d preemptions, running c%d", p.preempts, p.running)
	}
	if got := p.allowed([]string{"deliver c1", "deliver c2", "expire c1"}, 2, 1); !slices.Equal(got, []string{"deliver c2", "expire c1"}) {
		t.Fatalf("with the preemptions spent: %v, want c2's own choice and the fault", got)
	}
	p.taken("expire c1") // a fault: no preemption, c2 still runs
	if got := p.allowed([]string{"deliver c1"}, 1, 1); !slices.Equal(got, []string{"deliver c1"}) {
		t.Fatalf("when the running client cannot go on: %v", got)
	}
	p.taken("deliver c1") // c2 could not go on: free
	if p.preempts != 1 || p.running != 1 {
		t.Fatalf("after a free switch: %d preemptions, running c%d", p.preempts, p.running)
	}
}

// TestDecisionClient: a decision concerns the client its label's last word names, and none (0) when its
// last word is no "cN" or it has one word only.
func TestDecisionClient(t *testing.T) {
	for label, want := range map[string]int{
		"apply c1": 1, "deliver c2": 2, "cs-write c3": 3, "lose-reply c12": 12, "expire c1 ": 1,
		"stop s1": 0, "advance 14s": 0, "c1": 0, " c1": 0, "": 0, "apply cx": 0, "apply c": 0, "apply\tc4": 4,
	} {
		if got := decisionClient(label); got != want {
			t.Errorf("decisionClient(%q) = %d, want %d", label, got, want)
		}
	}
}
