package check

import (
	"errors"
	"fmt"
)

// This file says what a trace's schedule does now when a replay no longer reproduces it: after a fix, the
// question is whether that schedule now passes, not only where it diverged.

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
