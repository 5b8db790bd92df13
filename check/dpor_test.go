package check

import (
	"slices"
	"strings"
	"testing"

	"github.com/zkmodel/zkmodel/check/shard"
)

// backtracked is the options in dp's backtrack set.
func backtracked(options []string, dp *dporPoint) []string {
	var out []string
	for i, o := range options {
		if dp.backtrack[i] {
			out = append(out, o)
		}
	}
	return out
}

// TestDPORPointBacktrackSets: a point starts with the running client's choices when it can go on (else the
// first client's) and every fault; a race adds the racing client's choices, or every choice when the client
// had none there, and nothing when the bound cut the client's choices (the conservative point takes it).
func TestDPORPointBacktrackSets(t *testing.T) {
	var p preemption
	options := []string{"apply c1", "deliver c1", "apply c2", "expire c1"}
	p.allowed(options, 3, 2)
	dp := newDPORPoint(options, &p)
	if got, want := backtracked(options, dp), []string{"apply c1", "deliver c1", "expire c1"}; !slices.Equal(got, want) {
		t.Errorf("before any progress decision: %v, want the first client's choices and the fault %v", got, want)
	}
	p.taken("apply c2")
	p.allowed(options, 3, 2)
	dp = newDPORPoint(options, &p)
	if got, want := backtracked(options, dp), []string{"apply c2", "expire c1"}; !slices.Equal(got, want) {
		t.Errorf("with c2 running and able to go on: %v, want %v", got, want)
	}
	dp.addRace(1)
	if got := backtracked(options, dp); !slices.Equal(got, options) {
		t.Errorf("after a race with c1: %v, want every option", got)
	}

	// c3 has no choice here: a race with it puts every choice in the set.
	dp = newDPORPoint(options, &p)
	dp.addRace(3)
	if got := backtracked(options, dp); !slices.Equal(got, options) {
		t.Errorf("after a race with c3, which has no choice here: %v, want every option", got)
	}

	// The preemptions spent: only c2's choices and the fault are offered; a race with c1, whose choice the
	// bound cut, adds nothing here.
	p.preempts = 1
	allowed := p.allowed(options, 3, 1)
	dp = newDPORPoint(allowed, &p)
	dp.addRace(1)
	if got, want := backtracked(allowed, dp), []string{"apply c2", "expire c1"}; !slices.Equal(got, want) {
		t.Errorf("with the bound spent, after a race with c1: %v, want %v", got, want)
	}
	// advance visits the set in the options' order, each once, also what a later race adds before it.
	f := &frame{options: options, next: -1, dp: newDPORPoint(options, &p)}
	var visited []string
	for f.advance() {
		visited = append(visited, f.chosen())
		if len(visited) == 1 {
			f.dp.addRace(1)
		}
	}
	if want := []string{"apply c2", "apply c1", "deliver c1", "expire c1"}; !slices.Equal(visited, want) {
		t.Errorf("advance visited %v, want %v", visited, want)
	}
}

// TestDPORBadSettingsAreRefusedClearly: DPOR is a reduction of the preemption-bounded exhaustive search of a
// whole bound; anything else is refused in a sentence that says so.
func TestDPORBadSettingsAreRefusedClearly(t *testing.T) {
	v, err := VariantByName("recipe")
	if err != nil {
		t.Fatal(err)
	}
	cfg := cacheBound(v, false)
	cfg.DPOR = true
	whole := shard.Part{Index: 0, Count: 1}
	if err := validDPOR(cfg, Exhaustive, whole); err != nil {
		t.Fatalf("refused where it applies: %v", err)
	}
	if err := validDPOR(cfg, ReplayTrace("x.trace"), whole); err != nil {
		t.Errorf("a replay is refused: %v", err)
	}
	depth, none := cfg, cfg
	depth.Preemptions = 0
	none.NoReduction = true
	for _, c := range []struct {
		cfg      Config
		strategy Strategy
		part     shard.Part
		want     string
	}{
		{cfg, Random, whole, "is a reduction of the exhaustive search"},
		{cfg, PCT(3), whole, "is a reduction of the exhaustive search"},
		{depth, Exhaustive, whole, "needs a preemption bound"},
		{none, Exhaustive, whole, "ask for a reduction and for none"},
		{cfg, Exhaustive, shard.Part{Index: 1, Count: 2}, "does not take -check.shard"},
	} {
		if err := validDPOR(c.cfg, c.strategy, c.part); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s, preemptions %d, part %s: got %v, want an error saying %q", c.strategy, c.cfg.Preemptions, c.part, err, c.want)
		}
	}
}

// TestDPORAgreesOverTheWire: DPOR needs no state of the model, only what each step did, so it reduces
// RunZK's searches too (go-zookeeper's clients, which the state cache cannot hash): on the recipe and on
// go-zookeeper's own lock over the wire (two clients, one preemption), and on two mutants over the wire
// whose bugs need two preemptions, it finds what the full search finds, with the same final states of the
// model, in no more schedules.
func TestDPORAgreesOverTheWire(t *testing.T) {
	caught := 0
	for _, c := range []struct {
		name        string
		preemptions int
	}{{"recipe-wire", 1}, {"zk-lock", 1}, {"mutant-b-ignore-gone-wire", 2}, {"mutant-d-order-by-name-wire", 2}} {
		t.Run(c.name, func(t *testing.T) {
			v, err := VariantByName(c.name)
			if err != nil {
				t.Fatal(err)
			}
			cfg := cacheBound(v, false)
			cfg.Preemptions = c.preemptions
			full, dpor, finals := fullAndDPOR(t, v.clients(), cfg)
			if len(full.violated) > 0 {
				caught++
			}
			t.Logf("full %d schedules, DPOR %d; %d final states; violated %d properties", full.schedules, dpor.schedules, finals, len(full.violated))
		})
	}
	if caught < 2 {
		t.Errorf("%d of the searches found a violation: the comparison says little", caught)
	}
}
