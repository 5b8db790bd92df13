package check

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// cacheBound is a variant's configuration cut down to a preemption bound that the search without the state
// cache covers in seconds: two clients, one round, one preemption and no fault — or no preemption and one
// fault of the variant's own kinds (an expiry or a lost reply where it has those; an expiry alone for a
// variant that passes).
func cacheBound(v Variant, withFault bool) Config {
	cfg := v.Config
	cfg.Clients, cfg.Rounds, cfg.Exhaustive, cfg.Preemptions, cfg.MaxFault = 2, 1, true, 1, 1
	if !withFault {
		cfg.Faults = 0
	} else {
		// The variant's own kinds, cut to make prove's two where it has those (the recipe has every kind).
		cfg.Preemptions = Unpreempted
		if own := cfg.Faults & proofFaults; own != 0 {
			cfg.Faults = own
		}
		if v.Expect == "" && cfg.Faults&FaultExpire != 0 {
			cfg.Faults = FaultExpire // a variant that passes: one kind keeps the search without the cache short
		}
	}
	return cfg.withDefaults()
}

// TestStateCacheAgreesWithFullSearch: the preemption-bounded search's reductions are sound where it can be
// shown: on the recipe, every primitive and every mutant, in bounds small enough for the search without
// them, the cached search finds exactly the properties the full one finds violated, reaches the
// primitive's sharing exactly when the full one does, and runs no more schedules — and so do the cache with
// the looser projection (Config.looseProjection), which make prove does not use, and DPOR (Config.DPOR,
// dpor.go), whose schedules also end in exactly the final states of the model the full search's end in.
func TestStateCacheAgreesWithFullSearch(t *testing.T) {
	caught, cut, fewer := 0, 0, 0
	for _, v := range Variants() {
		if strings.HasSuffix(v.Name, "-wire") || v.Name == "recipe-5-clients" || v.Name == "zk-lock" {
			continue
		}
		for _, withFault := range []bool{false, true} {
			if withFault && v.Config.Faults == 0 {
				continue
			}
			cfg := cacheBound(v, withFault)
			name := v.Name + "/c=1,F=0"
			if withFault {
				name = v.Name + "/c=0,F=1"
			}
			t.Run(name, func(t *testing.T) {
				full, dpor, finals := fullAndDPOR(t, v.clients(), cfg)
				cached := exhaust(t, v.clients(), cfg, 0, true, stopOnNone, time.Time{})
				looseCfg := cfg
				looseCfg.looseProjection = true // the looser projection (Config.looseProjection), off by default
				loose := exhaust(t, v.clients(), looseCfg, 0, true, stopOnNone, time.Time{})
				if !cached.exhausted || !loose.exhausted {
					t.Fatalf("a search stopped early: cached exhausted %v, loose %v", cached.exhausted, loose.exhausted)
				}
				fullProps := slices.Sorted(maps.Keys(full.violated))
				for _, c := range []struct {
					name string
					res  exhaustiveResult
				}{{"cached", cached}, {"loose", loose}} {
					if props := slices.Sorted(maps.Keys(c.res.violated)); !slices.Equal(fullProps, props) {
						t.Errorf("the full search found %v violated, the %s one %v", fullProps, c.name, props)
					}
					if full.shared != c.res.shared {
						t.Errorf("the full search reached the sharing: %v, the %s one: %v", full.shared, c.name, c.res.shared)
					}
				}
				if dpor.schedules < full.schedules {
					fewer++
				}
				if loose.schedules > full.schedules || loose.states == 0 {
					t.Errorf("full: %d schedules; loose: %d schedules, %d states", full.schedules, loose.schedules, loose.states)
				}
				if cached.schedules > full.schedules || full.pruned != 0 || full.states != 0 || cached.states == 0 {
					t.Errorf("full: %d schedules, %d pruned, %d states; cached: %d schedules, %d states", full.schedules, full.pruned, full.states, cached.schedules, cached.states)
				}
				if len(fullProps) > 0 {
					caught++
				}
				if cached.pruned > 0 {
					cut++
				}
				t.Logf("full %d schedules (%d final states); cached %d schedules, %d cut at an explored state, %d states; loose %d schedules; DPOR %d schedules; violated %v",
					full.schedules, finals, cached.schedules, cached.pruned, cached.states, loose.schedules, dpor.schedules, fullProps)
			})
		}
	}
	if caught < 10 || cut < 10 || fewer < 10 {
		t.Errorf("%d searches found a violation, %d cut a run at an explored state, %d ran fewer schedules with DPOR: the comparison says little", caught, cut, fewer)
	}
}

// fullAndDPOR searches cfg's bound without reduction and with DPOR, and fails t where DPOR's search does not
// agree: another set of violated properties, another reachability of the sharing, another set of final
// states of the model, a run pruned, a state kept, or more schedules. It returns both searches and the
// number of final states.
func fullAndDPOR(t *testing.T, kind clients, cfg Config) (full, dpor exhaustiveResult, finals int) {
	t.Helper()
	fullEnds, dporEnds := map[string]bool{}, map[string]bool{}
	full = exhaustSeeing(t, kind, cfg, 0, false, stopOnNone, time.Time{}, endsInto(fullEnds))
	cfg.DPOR = true
	dpor = exhaustSeeing(t, kind, cfg, 0, true, stopOnNone, time.Time{}, endsInto(dporEnds))
	if !full.exhausted || !dpor.exhausted {
		t.Fatalf("a search stopped early: full exhausted %v, DPOR %v", full.exhausted, dpor.exhausted)
	}
	fullProps, dporProps := slices.Sorted(maps.Keys(full.violated)), slices.Sorted(maps.Keys(dpor.violated))
	if !slices.Equal(fullProps, dporProps) || full.shared != dpor.shared {
		t.Errorf("the full search found %v violated (sharing reached: %v), DPOR %v (%v)", fullProps, full.shared, dporProps, dpor.shared)
	}
	if !maps.Equal(fullEnds, dporEnds) {
		t.Errorf("the full search's schedules end in %d states of the model, DPOR's in %d, not all the same", len(fullEnds), len(dporEnds))
	}
	if dpor.schedules > full.schedules || dpor.pruned != 0 || dpor.states != 0 {
		t.Errorf("full: %d schedules; DPOR: %d schedules, %d pruned, %d states", full.schedules, dpor.schedules, dpor.pruned, dpor.states)
	}
	return full, dpor, len(fullEnds)
}

// endsInto is an exhaustive search's onRun that collects the final state of the model (its Dump) of every
// schedule that ran to its end.
func endsInto(ends map[string]bool) func(*outcome) {
	return func(o *outcome) {
		if !o.pruned {
			ends[o.dump] = true
		}
	}
}

// TestDPORAgreesUnderTwoPreemptions: where the preemption bound leaves DPOR's backtracking most to do — two
// preemptions, so a race's reordering may cost one the bound no longer has and needs BPOR's conservative
// point (dpor.go) — DPOR finds what the full search finds, on the mutex, the read-write lock, the election
// and every mutant of theirs: the same violated properties, the same reachability of the sharing, the same
// final states of the model, in fewer schedules.
func TestDPORAgreesUnderTwoPreemptions(t *testing.T) {
	for _, v := range Variants() {
		// The unmutated mutex, read-write lock and election, and their mutants; the semaphores' full searches
		// of two preemptions run 126,702 and 179,910 schedules, too many for go test.
		if v.Config.Primitive == Semaphore || strings.HasSuffix(v.Name, "-wire") || v.Name == "recipe-5-clients" || v.Name == "zk-lock" {
			continue
		}
		t.Run(v.Name, func(t *testing.T) {
			cfg := cacheBound(v, false)
			cfg.Preemptions = 2
			full, dpor, finals := fullAndDPOR(t, v.clients(), cfg)
			if dpor.schedules >= full.schedules {
				t.Errorf("DPOR ran %d schedules, the full search %d: nothing reduced", dpor.schedules, full.schedules)
			}
			t.Logf("full %d schedules, DPOR %d; %d final states; violated %v", full.schedules, dpor.schedules, finals, slices.Sorted(maps.Keys(full.violated)))
		})
	}
}
