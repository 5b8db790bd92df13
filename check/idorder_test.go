package check

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"
)

// orders is every order of 1…k.
func orders(k int) [][]int {
	if k == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, rest := range orders(k - 1) {
		for at := 0; at <= len(rest); at++ {
			out = append(out, slices.Insert(slices.Clone(rest), at, k))
		}
	}
	return out
}

// withIDOrder is cfg with client i+1 drawing the ids of client order[i].
func withIDOrder(cfg Config, order []int) Config {
	cfg.idStreams = [maxOrderedClients]uint8{}
	for i, s := range order {
		cfg.idStreams[i] = uint8(s)
	}
	return cfg
}

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
				for _, order := range orders(b.clients) {
					res := exhaust(t, v.clients(), withIDOrder(cfg, order), 0, true, stopOnNone, time.Time{})
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
