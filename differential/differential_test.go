package differential

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/zkmodel/zkmodel/realzk"
)

// TestMain shares one real ensemble across the package's tests.
func TestMain(m *testing.M) { os.Exit(realzk.RunTests(m)) }

// defaultChecks is how many sequences TestDifferential runs unless -rapid.checks (or RAPID_CHECKS)
// says otherwise: enough to matter, few enough for make test.
const defaultChecks = 40

// figures counts what a test compared.
type figures struct {
	sequences, ops, mismatches, unsettled atomic.Int64
}

func (f *figures) log(t *testing.T) {
	t.Logf("differential figures: %d sequences, %d ops compared, %d mismatching sequences (shrinking re-runs included), %d session-channel steps not compared (6+ events)",
		f.sequences.Load(), f.ops.Load(), f.mismatches.Load(), f.unsettled.Load())
}

// pair runs sequences on the model and on the shared real ensemble, each under a fresh base path.
type pair struct {
	model *ModelSide
	real  *RealSide
	root  string
	next  atomic.Int64
	figs  figures
}

func newPair(t *testing.T) *pair {
	t.Helper()
	e := realzk.Shared(t)
	var suffix [6]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		t.Fatalf("random root: %v", err)
	}
	p := &pair{model: &ModelSide{}, real: &RealSide{Addrs: e.Addrs()}, root: "/differential-" + hex.EncodeToString(suffix[:])}
	t.Cleanup(func() {
		if err := p.real.Close(p.root); err != nil {
			t.Errorf("clean up %s: %v", p.root, err)
		}
	})
	return p
}

// compare runs seq on both sides and returns the two transcripts and their first difference.
func (p *pair) compare(ctx context.Context, seq Sequence) (model, real *Transcript, diff string, err error) {
	base := fmt.Sprintf("%s/%d", p.root, p.next.Add(1))
	if model, err = Run(ctx, p.model, base, seq); err != nil {
		return model, nil, "", err
	}
	if real, err = Run(ctx, p.real, base, seq); err != nil {
		return model, real, "", err
	}
	p.figs.sequences.Add(1)
	p.figs.ops.Add(int64(len(seq.Ops)))
	p.figs.unsettled.Add(int64(model.Unsettled + real.Unsettled))
	diff = Compare(model, real)
	if diff != "" {
		p.figs.mismatches.Add(1)
	}
	return model, real, diff, nil
}

// flagSet reports whether the named flag was given on the command line.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// TestDifferential runs random sequences on the model and on a real ensemble and fails, with both
// transcripts side by side, on the first (shrunk) sequence whose observations differ.
func TestDifferential(t *testing.T) {
	if _, env := os.LookupEnv("RAPID_CHECKS"); !env && !flagSet("rapid.checks") {
		if err := flag.Set("rapid.checks", fmt.Sprint(defaultChecks)); err != nil {
			t.Fatalf("set -rapid.checks: %v", err)
		}
	}
	p := newPair(t)
	defer p.figs.log(t)
	gen := Gen(GenConfig{MaxOps: 25, Sever: true})
	rapid.Check(t, func(rt *rapid.T) {
		seq := gen.Draw(rt, "sequence")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		model, real, diff, err := p.compare(ctx, seq)
		if err != nil {
			rt.Fatalf("run failed: %v", err)
		}
		if diff != "" {
			rt.Logf("base path %s (model) and %s (real)", model.Base, real.Base)
			rt.Fatalf("the model differs from ZooKeeper: %s\n\n%s", diff, SideBySide(model, real))
		}
	})
}

// scenarios are hand-written sequences for the behaviours a fake is most likely to get wrong; each
// runs on both sides and must agree.
var scenarios = []struct {
	name string
	seq  Sequence
}{
	{"multi-create-with-ttl-flag", Sequence{Sessions: 2, Ops: []Op{
		{Kind: Create, Session: 2, Path: "z"},
		{Kind: Multi, Session: 1, Ops: []Op{{Kind: Create, Path: "a", Flags: 5}}},
		{Kind: Create, Session: 2, Path: "y"},
		{Kind: Multi, Session: 1, Ops: []Op{{Kind: Create, Path: "b", Flags: 6}}},
		{Kind: Create, Session: 2, Path: "x"},
		{Kind: Multi, Session: 1, Ops: []Op{{Kind: Create, Path: "c", Flags: 7}}},
		{Kind: Create, Session: 2, Path: "w"},
		{Kind: Multi, Session: 1, Ops: []Op{{Kind: Create, Path: "d", Flags: -1}}},
		{Kind: Create, Session: 2, Path: "v"},
		{Kind: Multi, Session: 1, Ops: []Op{{Kind: Check, Path: "z", Version: 0}, {Kind: Create, Path: "e", Flags: 5}, {Kind: Check, Path: "nope", Version: 0}}},
		{Kind: Create, Session: 2, Path: "u"},
		{Kind: Multi, Session: 1, Ops: []Op{{Kind: Check, Path: "nope", Version: 0}, {Kind: Create, Path: "f", Flags: 6}}},
		{Kind: Create, Session: 2, Path: "t"},
	}}},
}

// TestScenarios runs the hand-written scenarios on the model and on a real ensemble.
func TestScenarios(t *testing.T) {
	p := newPair(t)
	defer p.figs.log(t)
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			start := time.Now()
			model, real, diff, err := p.compare(ctx, sc.seq)
			if err != nil {
				t.Fatalf("run failed: %v", err)
			}
			if diff != "" {
				t.Logf("%s", time.Since(start))
				t.Fatalf("the model differs from ZooKeeper: %s\n\n%s", diff, SideBySide(model, real))
			}
			if testing.Verbose() {
				t.Logf("\n%s", SideBySide(model, real))
			}
		})
	}
}
