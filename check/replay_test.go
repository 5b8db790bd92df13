package check

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"testing/synctest"
)

// TestReplayOnFixedCodeSaysTheSchedulePasses: the trace of a bug (the leave-on-cancel mutant), replayed on the
// fixed lock (the recipe), no longer reproduces; the replay says that the schedule now passes, not only where
// it diverged.
func TestReplayOnFixedCodeSaysTheSchedulePasses(t *testing.T) {
	_, _, out, path := failingTrace(t, "mutant-e-leave-on-cancel")
	tr, err := ParseTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	fixed, err := VariantByName("recipe")
	if err != nil {
		t.Fatal(err)
	}
	text, err := replayWith(t, fixed.clients(), tr)
	var d *Divergence
	if !errors.As(err, &d) || !errors.Is(err, ErrDiverged) || !errors.Is(err, ErrNowPasses) {
		t.Fatalf("got %v, want a Divergence matching ErrDiverged and ErrNowPasses", err)
	}
	want := "check: " + path + ": this schedule now passes: every property held"
	if !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "the trace recorded a "+out.property+" violation; where the replay left it: ") {
		t.Fatalf("got %q, want it to start %q and name the recorded %s", err, want, out.property)
	}
	if d.Followed != d.Decisions || strings.Contains(err.Error(), "drained fairly") {
		t.Fatalf("every decision was taken (history line 2 differs: the mutant names its nodes otherwise), yet %d of %d: %q", d.Followed, d.Decisions, err)
	}
	if !strings.Contains(text, "\nproperty: none\n") {
		t.Fatalf("the text is not the passing run's:\n%s", text)
	}
}

// TestReplayOfAPassingScheduleOnBrokenCodeSaysHowItFails: a passing run's trace replayed on a broken lock
// says that the schedule now fails, and how; a decision the broken lock never offers ends the run's
// exploration there, and the error says how many decisions were taken.
func TestReplayOfAPassingScheduleOnBrokenCodeSaysHowItFails(t *testing.T) {
	recipe, _ := VariantByName("recipe")
	broken, _ := VariantByName("mutant-e-leave-on-cancel")
	cfg := Config{Name: "recipe", Faults: FaultCancel}.withDefaults()
	for seed := uint64(1); seed < 200; seed++ {
		var out *outcome
		synctest.Test(t, func(t *testing.T) {
			out = executeWith(recipe.clients(), cfg, seededDecider{rand.New(rand.NewPCG(seed, 1))})
		})
		path := fmt.Sprintf("recipe-seed-%d.trace", seed) // parsed from the text: no file
		tr, err := parseTrace(path, out.render(cfg))
		if err != nil {
			t.Fatal(err)
		}
		_, err = replayWith(t, broken.clients(), tr)
		var d *Divergence
		if !errors.As(err, &d) || d.Property == "" {
			continue
		}
		if errors.Is(err, ErrNowPasses) || !strings.HasPrefix(err.Error(), "check: "+path+": this schedule now fails: "+d.Property+" violated: "+d.Verdict) || !strings.Contains(err.Error(), "the trace recorded a passing run") {
			t.Fatalf("seed %d: got %q", seed, err)
		}
		// The mutant names its nodes differently, so its runs leave the recipe's schedules early.
		said := fmt.Sprintf("(the run took the first %d of the trace's %d decisions, then drained fairly); the trace recorded a passing run; where the replay left it: decision %d ", d.Followed, d.Decisions, d.Followed+1)
		if d.Followed >= d.Decisions || !strings.Contains(err.Error(), said) {
			t.Fatalf("seed %d: %d of %d decisions taken: got %q, want it to contain %q", seed, d.Followed, d.Decisions, err, said)
		}
		return
	}
	t.Fatal("no seed in 200 gave a passing schedule on which the mutant fails")
}

// TestRunWithTheFlagSaysWhatTheScheduleDoesNow runs a user's test with -check.replay, in a child process: on
// the fixed lock, the failing trace's schedule now passes and so does the test, saying so; a trace of
// another variant fails the test, naming the variant.
func TestRunWithTheFlagSaysWhatTheScheduleDoesNow(t *testing.T) {
	_, _, _, path := failingTrace(t, "users-lock")
	got, err := helperUsersFixedLock(path)
	if err != nil || !strings.Contains(got, "this schedule now passes: every property held") {
		t.Fatalf("replaying the failing trace on the fixed lock: %v, want a pass that says so:\n%s", err, got)
	}
	_, _, _, other := failingTrace(t, "other-lock")
	got, err = helperUsersFixedLock(other)
	want := `check: -check.replay=` + other + ` is a trace of variant "other-lock", and this Run's Config.Name is "users-lock": a trace replays only in the Run of its own variant; select that test with -run, or leave -check.replay out to explore`
	if err == nil || !strings.Contains(got, want) {
		t.Fatalf("replaying another variant's trace: %v, want a failure saying %q:\n%s", err, want, got)
	}
}

func helperUsersFixedLock(trace string) (string, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperUsersFixedLock$", "-test.v", "-check.replay="+trace)
	cmd.Env = append(os.Environ(), "ZKMODEL_USERS_FIXED_LOCK=1")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestHelperUsersFixedLock stands for a user's test of their lock after the fix (the recipe); it runs only as
// the child process of TestRunWithTheFlagSaysWhatTheScheduleDoesNow.
func TestHelperUsersFixedLock(t *testing.T) {
	if os.Getenv("ZKMODEL_USERS_FIXED_LOCK") == "" {
		return
	}
	Run(t, Recipe, Config{Name: "users-lock", Faults: FaultCancel})
}
