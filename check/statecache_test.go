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

// TestStateCacheAgreesWithFullSearch: the state cache is sound where it can be shown to be: on the recipe,
// every primitive and every mutant, in bounds small enough for the search without it, the cached search
// finds exactly the properties the full one finds violated, reaches the primitive's sharing exactly when
// the full one does, and runs no more schedules — and so does the cache with the looser projection
// (Config.looseProjection), which make prove does not use.
func TestStateCacheAgreesWithFullSearch(t *testing.T) {
	caught, cut := 0, 0
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
				full := exhaust(t, v.clients(), cfg, 0, false, stopOnNone, time.Time{})
				cached := exhaust(t, v.clients(), cfg, 0, true, stopOnNone, time.Time{})
				looseCfg := cfg
				looseCfg.looseProjection = true // the looser projection (Config.looseProjection), off by default
				loose := exhaust(t, v.clients(), looseCfg, 0, true, stopOnNone, time.Time{})
				if !full.exhausted || !cached.exhausted || !loose.exhausted {
					t.Fatalf("a search stopped early: full exhausted %v, cached %v, loose %v", full.exhausted, cached.exhausted, loose.exhausted)
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
				t.Logf("full %d schedules; cached %d schedules, %d cut at an explored state, %d states; loose %d schedules; violated %v",
					full.schedules, cached.schedules, cached.pruned, cached.states, loose.schedules, fullProps)
			})
		}
	}
	if caught < 10 || cut < 10 {
		t.Errorf("%d searches found a violation and %d cut a run at an explored state: the comparison says little", caught, cut)
	}
}
