package check

import (
	"errors"
	"fmt"
	"github.com/zkmodel/zkmodel/check/shard"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestNodeIDOrderChangesNothing: the exhaustive search draws every run's node ids from one stream per client
// number, so it sees one order of the names among the clients (with seed 0: c3's before c2's before c1's).
// A recipe that compares ids only for equality (its own node after a lost reply, the semaphore's duplicate
// lease) and orders nodes by sequence number behaves the same under every order: the search of every order
// gives the same schedules, cuts, states and verdicts, on every primitive, with two clients and one
// preemption and with three clients and none. The mutant that orders nodes by name does see the order: its
// searches differ — so the comparison can fail.
func TestNodeIDOrderChangesNothing(t *testing.T) {
	type bound struct {
		clients, preemptions int
	}
	summary := func(r exhaustiveResult) string {
		return fmt.Sprintf("%d schedules, %d cut, %d states, violated %v, shared %v", r.schedules, r.pruned, r.states, slices.Sorted(maps.Keys(r.violated)), r.shared)
	}
	for _, name := range []string{"recipe", "rwlock", "semaphore-1-lease", "semaphore", "election", "mutant-d-order-by-name"} {
		v, err := VariantByName(name)
		if err != nil {
			t.Fatal(err)
		}
		bounds := []bound{{2, 1}}
		if name == "rwlock" {
			// Three clients of different roles (the read-write lock's readers and writer): every order of
			// three is not a renaming of another.
			bounds = append(bounds, bound{3, Unpreempted})
		}
		for _, b := range bounds {
			t.Run(fmt.Sprintf("%s/K=%d", name, b.clients), func(t *testing.T) {
				cfg := v.Config
				cfg.Clients, cfg.Rounds, cfg.Exhaustive, cfg.Preemptions, cfg.Faults = b.clients, 1, true, b.preemptions, 0
				cfg = cfg.withDefaults()
				first := ""
				differ := false
				for _, order := range idOrders(b.clients) {
					res := exhaust(t, v.clients(), cfg.withIDOrder(order), 0, true, stopOnNone, time.Time{})
					if !res.exhausted {
						t.Fatalf("ids in the order %v: the search stopped early", order)
					}
					got := summary(res)
					if v.Expect != "" {
						// The mutant sees the order: its first failing schedule in the tree's order (the
						// clients being named differently) is another one.
						for _, p := range slices.Sorted(maps.Keys(res.violated)) {
							got += fmt.Sprintf("; %s first by %v", p, res.violated[p].decisions)
						}
					}
					t.Logf("ids drawn in the order %v: %s", order, got)
					switch {
					case first == "":
						first = got
					case got != first:
						differ = true
						if v.Expect == "" {
							t.Errorf("ids drawn in the order %v: %s; in the clients' own order: %s", order, got, first)
						}
					}
				}
				if v.Expect != "" && !differ {
					t.Errorf("%s orders nodes by name, yet every order of the ids gives %s and the same first failing schedule", name, first)
				}
			})
		}
	}
}

// idOrderBound is the bound of the tests of Config.NodeIDOrders: K clients of one round, no faults, the
// given preemption bound (0: the depth-bounded search of steps decisions).
func idOrderBound(v Variant, clients, preemptions, steps int) Config {
	cfg := v.Config
	cfg.Clients, cfg.Rounds, cfg.Exhaustive, cfg.Preemptions, cfg.Faults, cfg.Steps = clients, 1, true, preemptions, 0, steps
	return cfg
}

// TestNodeIDOrdersSearchesEveryOrder: Config.NodeIDOrders searches the bound once for every order of the
// clients' node ids and sums the counts (two clients, one preemption; three, every schedule of 4 decisions). On the recipe, which orders its nodes by sequence number, every
// order is the same search, so the sums are K! times one order's schedules, cuts, decision points and
// states; the report says every order was searched; and a second search reports the same.
func TestNodeIDOrdersSearchesEveryOrder(t *testing.T) {
	v, err := VariantByName("recipe")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []struct{ clients, preemptions, steps int }{{2, 1, 0}, {3, 0, 4}} {
		t.Run(fmt.Sprintf("K=%d/c=%d/steps=%d", b.clients, b.preemptions, b.steps), func(t *testing.T) {
			cfg := idOrderBound(v, b.clients, b.preemptions, b.steps)
			one, fail := testExploration(t, v, cfg).exhaustive()
			if fail != nil || !one.Exhausted {
				t.Fatalf("one order: failed %v, exhausted %t", fail != nil, one.Exhausted)
			}
			cfg.NodeIDOrders = true
			every, fail := exhaustiveStrategy{}.explore(testExploration(t, v, cfg))
			if fail != nil || every.Failed || !every.Exhausted {
				t.Fatalf("every order: failed %v, exhausted %t: %s", fail != nil, every.Exhausted, every)
			}
			k := factorial(b.clients)
			if every.IDOrders != k || every.IDOrdersSearched != k {
				t.Errorf("%d orders searched of %d, want %d of %d", every.IDOrdersSearched, every.IDOrders, k, k)
			}
			for _, c := range []struct {
				name      string
				one, each int
			}{{"schedules", one.Schedules, every.Schedules}, {"cut", one.Pruned, every.Pruned}, {"decision points", one.DecisionPoints, every.DecisionPoints}, {"states", one.States, every.States}, {"runs", one.Runs, every.Runs}} {
				if c.each != k*c.one {
					t.Errorf("%s: %d in every order, %d in one: want %d × %d = %d", c.name, c.each, c.one, k, c.one, k*c.one)
				}
			}
			want := fmt.Sprintf("all %s within the bound, in every order of the %d clients' node ids (%d! = %d orders)", plural(every.Schedules, "schedule"), b.clients, b.clients, k)
			if !strings.Contains(every.String(), want) {
				t.Errorf("the report says %q, want it to say %q", every.String(), want)
			}
			again, _ := exhaustiveStrategy{}.explore(testExploration(t, v, cfg))
			if again.String() != every.String() || again.States != every.States || again.DecisionPoints != every.DecisionPoints || again.Pruned != every.Pruned {
				t.Errorf("two searches of every order differ: %s (%d states) and %s (%d states)", every, every.States, again, again.States)
			}
			t.Logf("one order: %d schedules, %d states; every order: %s, %d states", one.Schedules, one.States, every, every.States)
		})
	}
}

// TestNodeIDOrderTraceReplays: mutant d orders its nodes by name, and the order matters to it: two clients,
// every schedule of 4 decisions without deadlines, break fencing with the ids in either order but safety only
// with client 1 drawing client 2's ids and client 2 client 1's. That failure's trace records the order
// ("id-order: 2 1") and replays byte for byte; without the line it does not (the names differ). A search of
// every order stops at the first failure in (order, tree order), the same in two searches.
func TestNodeIDOrderTraceReplays(t *testing.T) {
	v, err := VariantByName("mutant-d-order-by-name")
	if err != nil {
		t.Fatal(err)
	}
	cfg := idOrderBound(v, 2, 0, 4)
	cfg.Deadline = -1
	cfg = cfg.withDefaults()
	own := exhaust(t, v.clients(), cfg, cfg.Steps, true, stopOnNone, time.Time{})
	swapped := exhaust(t, v.clients(), cfg.withIDOrder([]int{2, 1}), cfg.Steps, true, stopOnNone, time.Time{})
	t.Logf("ids in the order 1 2: violated %v; in the order 2 1: violated %v", slices.Sorted(maps.Keys(own.violated)), slices.Sorted(maps.Keys(swapped.violated)))
	if own.violated["safety"] != nil || swapped.violated["safety"] == nil {
		t.Fatalf("safety broken with the ids in the order 1 2: %t, in the order 2 1: %t; want only the latter", own.violated["safety"] != nil, swapped.violated["safety"] != nil)
	}
	text := swapped.violated["safety"].render(cfg)
	if !strings.Contains(text, "\nid-order: 2 1\n") {
		t.Fatalf("the trace does not record the order of the ids:\n%s", text)
	}
	tr, err := parseTrace("swapped.trace", text)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tr.IDOrder, []int{2, 1}) {
		t.Fatalf("the parsed trace's order is %v, want [2 1]", tr.IDOrder)
	}
	replayed, err := replayWith(t, v.clients(), tr)
	if err != nil {
		t.Fatalf("the trace does not replay: %v", err)
	}
	if replayed != text {
		t.Errorf("the replayed trace differs from the recorded one")
	}
	unordered, err := parseTrace("unordered.trace", strings.Replace(text, "id-order: 2 1\n", "", 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replayWith(t, v.clients(), unordered); !errors.Is(err, ErrDiverged) {
		t.Errorf("the trace without its id-order line replays (err %v): the order would not be needed", err)
	}

	cfg.NodeIDOrders = true
	first, fail := exhaustiveStrategy{}.explore(testExploration(t, v, cfg))
	second, again := exhaustiveStrategy{}.explore(testExploration(t, v, cfg))
	if fail == nil || again == nil {
		t.Fatalf("a search of every order of mutant d's ids passes: %s", first)
	}
	if fail.render(cfg) != again.render(cfg) || first.String() != second.String() {
		t.Errorf("two searches of every order report different failures: %s and %s", first, second)
	}
	if first.IDOrdersSearched != 1 || !slices.Equal(first.IDOrder, []int{1, 2}) || !strings.Contains(first.String(), "in 1 of the 2 orders of the 2 clients' node ids, failing with the order 1 2") {
		t.Errorf("the first failure in (order, tree order) is in the first order, 1 2; the report says: %s", first)
	}
}

// TestNodeIDOrdersRefusedWhereTheyDoNotApply: Config.NodeIDOrders is refused, with a sentence saying why,
// with a sampling strategy, with RunZK's clients, with more clients than the id streams reorder, and with
// -check.shard; a trace's id-order that is not an order of its clients is refused too.
func TestNodeIDOrdersRefusedWhereTheyDoNotApply(t *testing.T) {
	v, err := VariantByName("recipe")
	if err != nil {
		t.Fatal(err)
	}
	cfg := idOrderBound(v, 2, 1, 0).withDefaults()
	cfg.NodeIDOrders = true
	whole := shard.Part{Index: 0, Count: 1}
	if err := validIDOrders(cfg, v.clients(), Exhaustive, whole); err != nil {
		t.Fatalf("refused where it applies: %v", err)
	}
	tooMany := cfg
	tooMany.Clients = maxOrderedClients + 1
	for _, c := range []struct {
		cfg      Config
		kind     clients
		strategy Strategy
		part     shard.Part
		want     string
	}{
		{cfg, v.clients(), Random, whole, "is for the exhaustive search"},
		{cfg, v.clients(), PCT(3), whole, "is for the exhaustive search"},
		{cfg, wireClients(nil), Exhaustive, whole, "works with Run only, not RunZK"},
		{tooMany, v.clients(), Exhaustive, whole, fmt.Sprintf("at most %d clients", maxOrderedClients)},
		{cfg, v.clients(), Exhaustive, shard.Part{Index: 1, Count: 2}, "does not take -check.shard"},
	} {
		err := validIDOrders(c.cfg, c.kind, c.strategy, c.part)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s, %s clients, %d clients, part %s: got %v, want an error saying %q", c.strategy, c.kind.name, c.cfg.Clients, c.part, err, c.want)
		}
	}
	if err := validIDOrders(cfg, v.clients(), ReplayTrace("x.trace"), whole); err != nil {
		t.Errorf("a replay is refused: %v (the trace records its order)", err)
	}
	text := "zkmodel trace v1\nvariant: lock\nclients: 2\nproperty: none\nverdict: every property held\n%s\ndecisions:\n  # drain\n\nhistory:\n\nfinal state:\n  /\n\nverdict: none: every property held\nend of trace\n"
	for _, bad := range []string{"id-order: 1 1", "id-order: 3 1", "id-order: 1 2 3", "id-order: two", "id-order: "} {
		if _, err := parseTrace("bad.trace", fmt.Sprintf(text, bad)); err == nil || !strings.Contains(err.Error(), "id-order") {
			t.Errorf("%q: got %v, want an error about the id-order", bad, err)
		}
	}
	if tr, err := parseTrace("good.trace", fmt.Sprintf(text, "id-order: 2 1")); err != nil || !slices.Equal(tr.IDOrder, []int{2, 1}) {
		t.Errorf("a good id-order: %v, %v", tr, err)
	}
}
