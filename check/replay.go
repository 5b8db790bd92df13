package check

import (
	"errors"
	"fmt"
	"time"
)

// This file is the replay strategy (ReplayTrace, -check.replay), and what a trace's schedule does now when a
// replay no longer reproduces it: after a fix, the question is whether that schedule now passes, not only
// where it diverged.

// ErrNowPasses is matched (errors.Is) by a replay's error when the trace no longer replays and the run its
// schedule gives now passes every property: as far as that schedule shows, the recorded bug is fixed.
var ErrNowPasses = errors.New("check: this schedule now passes")

// Divergence is the error of Replay and ReplayZK when a trace no longer replays: where the replay left the
// trace, and the verdict of the run the trace's schedule gives now. It matches ErrDiverged (errors.Is), and
// ErrNowPasses when that run passes.
type Divergence struct {
	Path  string // the trace file
	Where string // the first difference: a decision the run cannot take, a history line, or the verdict

	RecordedProperty string // what the trace recorded: a property, or "none" for a passing run

	// Property and Verdict are what the run now does: Property is "" when every property held. When one of
	// the trace's decisions cannot be taken, the run follows the decisions before it, then drains fairly.
	Property, Verdict string
	Followed          int // how many of the trace's decisions the run took
	Decisions         int // how many the trace has
}

// Error says what the schedule does now, then where the replay left the trace.
func (d *Divergence) Error() string {
	recorded := "a " + d.RecordedProperty + " violation"
	if d.RecordedProperty == "none" {
		recorded = "a passing run"
	}
	var now string
	switch {
	case d.Property == "":
		now = "this schedule now passes: every property held"
	case d.RecordedProperty == "none":
		now = fmt.Sprintf("this schedule now fails: %s violated: %s", d.Property, d.Verdict)
	case d.Property == d.RecordedProperty:
		now = fmt.Sprintf("this schedule still violates %s, differently: %s", d.Property, d.Verdict)
	default:
		now = fmt.Sprintf("this schedule now fails differently: %s violated: %s", d.Property, d.Verdict)
	}
	if d.Followed < d.Decisions {
		now += fmt.Sprintf(" (the run took the first %d of the trace's %d decisions, then drained fairly)", d.Followed, d.Decisions)
	}
	return fmt.Sprintf("check: %s: %s; the trace recorded %s; where the replay left it: %s", d.Path, now, recorded, d.Where)
}

// Is makes a Divergence match ErrDiverged, and ErrNowPasses when the schedule now passes.
func (d *Divergence) Is(target error) bool {
	return target == ErrDiverged || target == ErrNowPasses && d.Property == ""
}

// followDecider takes a trace's decisions while the run can take them; at the first it cannot, it ends the
// exploration (the fair drain follows), so that a schedule the code no longer offers still gives a run to
// judge.
type followDecider struct {
	replayDecider
	followed int // decisions taken (a "# nothing chosen" included)
	stopped  bool
}

func (d *followDecider) pick(progress, faults []choice) (string, error) {
	if d.stopped {
		return "", nil
	}
	label, err := d.replayDecider.pick(progress, faults)
	if err != nil {
		d.stopped = true
		d.followed = d.next - 1
		return "", nil
	}
	d.followed = d.next
	return label, nil
}

// The replay strategy: instead of exploring, Run (or RunZK) replays the one schedule a trace
// recorded, decision for decision, prints it, and fails as the recorded run did. -check.replay=FILE selects
// it from the command line. A trace replays only in the Run of its own variant (Config.Name), and only on
// the kind of client that recorded it. A schedule that failed and now passes (the user's fix) says so and
// passes; one that now does something else says what (see Divergence).

// ReplayTrace replays the trace in the file at path instead of exploring, as -check.replay does.
func ReplayTrace(path string) Strategy { return replayStrategy{path: path} }

type replayStrategy struct{ path string }

func (r replayStrategy) String() string { return "replay" }

func (r replayStrategy) explore(x *exploration) (Report, *outcome) {
	t, cfg := x.t, x.cfg
	t.Helper()
	tr, err := ParseTrace(r.path)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Config.Name != cfg.Name {
		t.Fatalf("check: -check.replay=%s is a trace of variant %q, and this Run's Config.Name is %q: a trace replays only in the Run of its own variant; select that test with -run, or leave -check.replay out to explore", tr.Path, tr.Config.Name, cfg.Name)
	}
	started := time.Now()
	text, err := replayWith(t, x.kind, tr)
	fmt.Print(text)
	if errors.Is(err, ErrNowPasses) {
		// The user's fix: the schedule that failed passes now. Say so, and pass.
		fmt.Println(err)
		return Report{Runs: 1, Elapsed: time.Since(started), Decisions: len(tr.Decisions), Part: x.part.String(), Workers: 1}, nil
	}
	if err != nil {
		t.Fatal(err)
	}
	rep := Report{Runs: 1, Trace: tr.Path, Elapsed: time.Since(started), Decisions: len(tr.Decisions), Part: x.part.String(), Workers: 1}
	if tr.Property != "none" {
		rep.Failed, rep.Property, rep.Verdict = true, tr.Property, tr.Verdict
		t.Errorf("check: replayed %s: %s violated: %s", tr.Path, tr.Property, tr.Verdict)
	}
	return rep, nil
}
