package check

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/recipe"
)

// primitiveVariants are the variants of a primitive other than the mutex, on the model's own clients.
func primitiveVariants(p Primitive) []Variant {
	var out []Variant
	for _, v := range Variants() {
		if v.Config.Primitive == p && v.ZKFactory == nil {
			out = append(out, v)
		}
	}
	return out
}

// TestPrimitiveRecipesPassAndShare explores the read-write lock, the semaphore (two leases, and one) and the
// election with every fault kind: every run keeps every property, and for the first two some run reaches
// what they must allow, two readers or every lease held at once (Run fails t otherwise).
func TestPrimitiveRecipesPassAndShare(t *testing.T) {
	for _, c := range []struct {
		name    string
		factory Factory
		prim    Primitive
		leases  int
	}{
		{"rwlock", RWRecipe, ReadWrite, 0},
		{"semaphore", SemaphoreRecipe, Semaphore, 0},
		{"semaphore-1-lease", semaphoreRecipe(1), Semaphore, 1},
		{"election", ElectionRecipe, Election, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := 150
			if c.prim == Semaphore && c.leases != 1 {
				n = 1500 // both leases held at once is reached in a few runs in a hundred
			}
			rep := Run(t, c.factory, Config{Name: c.name, Primitive: c.prim, Leases: c.leases, Faults: AllFaults, Checks: n, TraceDir: t.TempDir()})
			if rep.Failed || rep.Runs < n {
				t.Fatalf("%s: %d runs, failed %v (%s: %s)", c.name, rep.Runs, rep.Failed, rep.Property, rep.Verdict)
			}
		})
	}
}

// TestRunZKAcceptsAUsersRWLock: RunZK checks a read-write lock written against *zk.Conn, as it checks a
// mutex — here the recipe's, built by the user's own ZKFactory.
func TestRunZKAcceptsAUsersRWLock(t *testing.T) {
	f := func(conn *zk.Conn, path string) Locker {
		rw := recipe.NewRWLock(conn, path, recipe.WithRandom(RandFor(conn)))
		return NewRWLocker(rw.WriteLock(), rw.ReadLock())
	}
	rep := RunZK(t, f, Config{Name: "users-rwlock", Primitive: ReadWrite, Faults: AllFaults, Checks: 25, TraceDir: t.TempDir()})
	if rep.Failed {
		t.Fatalf("users-rwlock: %s: %s", rep.Property, rep.Verdict)
	}
}

// TestAReadWriteFactoryMustGiveTheReadSide: a ReadWrite Factory whose Locker has no RLocker is refused
// before anything runs, with a sentence that says what to do.
func TestAReadWriteFactoryMustGiveTheReadSide(t *testing.T) {
	cfg := Config{Name: "no-rlocker", Primitive: ReadWrite}.withDefaults()
	err := probe(t, modelClients(Recipe), cfg)
	if err == nil || !strings.Contains(err.Error(), "has no RLocker() Locker method") {
		t.Fatalf("got %v, want the probe to say the Locker has no RLocker", err)
	}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Primitive: 9}, "Config.Primitive is 9"},
		{Config{Leases: 3}, "only with Primitive Semaphore"},
		{Config{Primitive: Semaphore, Leases: -1}, "Config.Leases is -1"},
	} {
		if err := c.cfg.validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want an error containing %q", c.cfg, err, c.want)
		}
	}
}

// seededFailure explores v with seeded decisions until a run fails, and returns it.
func seededFailure(t *testing.T, v Variant, cfg Config, maxRuns int) *outcome {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 0x5eed))
	for n := 0; n < maxRuns; n++ {
		var out *outcome
		synctest.Test(t, func(t *testing.T) { out = executeWith(v.clients(), cfg, seededDecider{r}) })
		if out.failed() {
			return out
		}
	}
	t.Fatalf("%s: no failure in %d seeded runs", v.Name, maxRuns)
	return nil
}

// TestPrimitiveMutantsAreCaughtByTheirProperty: each mutant of the read-write lock, the semaphore and the
// election fails the property that targets its bug, and its trace (which names the primitive in its header,
// and a semaphore's leases) replays to the same text.
func TestPrimitiveMutantsAreCaughtByTheirProperty(t *testing.T) {
	for _, p := range []Primitive{ReadWrite, Semaphore, Election} {
		for _, v := range primitiveVariants(p) {
			if v.Expect == "" || isReachability(v.Expect) {
				continue // the reachability mutants: TestRunFailsAReaderThatNeverShares, TestEveryMutantIsCaughtFromEverySeed
			}
			t.Run(v.Name, func(t *testing.T) {
				cfg := v.Config.withDefaults()
				out := seededFailure(t, v, cfg, 3000)
				if !slices.Contains(strings.Split(v.Expect, "|"), out.property) {
					t.Fatalf("caught by %s (%s), want %s", out.property, out.verdict, v.Expect)
				}
				text := out.render(cfg)
				header := "\ndeadline: 30s\nprimitive: " + p.String() + "\n"
				if p == Semaphore {
					header += fmt.Sprintf("leases: %d\n", cfg.Leases)
				}
				if out.seed != 0 {
					header += fmt.Sprintf("run-seed: %d\n", out.seed)
				}
				if !strings.Contains(text, header+"property: ") {
					t.Fatalf("the trace's header does not name the primitive after the deadline:\n%s", text[:strings.Index(text, "decisions:")])
				}
				path := filepath.Join(t.TempDir(), v.Name+".trace")
				if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
				tr, err := ParseTrace(path)
				if err != nil {
					t.Fatal(err)
				}
				if tr.Config.Primitive != p || tr.Config.Leases != cfg.Leases {
					t.Fatalf("parsed primitive %s with %d leases, want %s with %d", tr.Config.Primitive, tr.Config.Leases, p, cfg.Leases)
				}
				replayed, err := replayWith(t, v.clients(), tr)
				if err != nil {
					t.Fatal(err)
				}
				if replayed != text {
					t.Fatalf("the replay printed something else:\n%s", firstDifference(text, replayed))
				}
			})
		}
	}
}

// TestAMutexTraceNamesNoPrimitive: a mutex's trace header is as it was before primitives (the committed
// corpus stays byte-identical): no "primitive:" and no "leases:" line.
func TestAMutexTraceNamesNoPrimitive(t *testing.T) {
	cfg := Config{Name: "recipe"}.withDefaults()
	var text string
	synctest.Test(t, func(t *testing.T) {
		text = execute(Recipe, cfg, seededDecider{rand.New(rand.NewPCG(1, 1))}).render(cfg)
	})
	if strings.Contains(text, "primitive:") || strings.Contains(text, "leases:") {
		t.Fatalf("a mutex's trace names a primitive:\n%s", text[:strings.Index(text, "decisions:")])
	}
}

// TestRunFailsAReaderThatNeverShares: a read-write lock whose readers never hold at once fails Run with
// readers-share, a property of all the runs together, although every run keeps every property.
func TestRunFailsAReaderThatNeverShares(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperNeverShares$", "-test.v")
	cmd.Env = append(os.Environ(), "ZKMODEL_NEVER_SHARES="+t.TempDir())
	got, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("the child passed or did not run (%v):\n%s", err, got)
	}
	if want := "readers-share violated: in 60 interleavings no two readers ever held the read lock at once"; !strings.Contains(string(got), want) {
		t.Fatalf("the child's output lacks %q:\n%s", want, got)
	}
}

// TestHelperNeverShares runs the reader-waits-on-reader mutant; it runs only as the child process of
// TestRunFailsAReaderThatNeverShares.
func TestHelperNeverShares(t *testing.T) {
	dir := os.Getenv("ZKMODEL_NEVER_SHARES")
	if dir == "" {
		return
	}
	v, err := VariantByName("rwlock-mutant-a-reader-waits-on-reader")
	if err != nil {
		t.Fatal(err)
	}
	cfg := v.Config
	cfg.Checks, cfg.TraceDir = 60, dir
	Run(t, v.Factory, cfg)
}

// TestToldWhenLost: a holder whose session expired is told through Lost() (the recipe: a "told-lost" event,
// and no property broken), one that is never told breaks told-when-lost (mutant i), and a Locker without
// Lost() is not asked (the recipe behind a wrapper that hides it: no event either way).
func TestToldWhenLost(t *testing.T) {
	never, err := VariantByName("mutant-i-never-told")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Name: "told", Faults: FaultExpire | FaultDisconnect | FaultAdvance}.withDefaults()
	hidden := func(conn recipe.Conn, path string) Locker { return noLost{Recipe(conn, path)} }
	found := map[string]bool{}
	for seed := uint64(1); seed <= 300 && len(found) < 3; seed++ {
		for name, f := range map[string]Factory{"recipe": Recipe, "never": never.Factory, "hidden": hidden} {
			var out *outcome
			synctest.Test(t, func(t *testing.T) {
				out = execute(f, cfg, seededDecider{rand.New(rand.NewPCG(seed, 5))})
			})
			text := out.historyText()
			told, notTold := strings.Contains(text, " told-lost "), strings.Contains(text, " not-told ")
			switch name {
			case "recipe":
				if out.failed() || notTold {
					t.Fatalf("seed %d: the recipe: %s violated: %s", seed, out.property, out.verdict)
				}
				if told {
					found[name] = true
				}
			case "never":
				if told {
					t.Fatalf("seed %d: mutant i was told:\n%s", seed, text)
				}
				if notTold {
					if out.property != "told-when-lost" {
						t.Fatalf("seed %d: mutant i not told, but the verdict is %q: %s", seed, out.property, out.verdict)
					}
					found[name] = true
				}
			case "hidden":
				if told || notTold {
					t.Fatalf("seed %d: a Locker without Lost() was asked:\n%s", seed, text)
				}
				if strings.Contains(text, "model:expire") {
					found[name] = true
				}
			}
		}
	}
	for _, name := range []string{"recipe", "never", "hidden"} {
		if !found[name] {
			t.Errorf("%s: no run of 300 showed it (told, not told, or an expiry unasked)", name)
		}
	}
}

// noLost hides a Locker's Lost().
type noLost struct{ l Locker }

func (n noLost) Lock(ctx context.Context) error   { return n.l.Lock(ctx) }
func (n noLost) Unlock(ctx context.Context) error { return n.l.Unlock(ctx) }
func (n noLost) Token() int64                     { return n.l.Token() }
