package check

import (
	"context"
	"fmt"
	"strings"
	"testing/synctest"
	"time"

	"github.com/zkmodel/zkmodel/model"
	"pgregory.net/rapid"
)

// This file is the scheduler: what can happen next (the model's transport steps, the register's answers and
// the faults), the decision among them, and letting the clients settle in between. It is the same whatever
// kind of client it schedules (see clients in run.go).

// idleLimit is how long, in the bubble's time, the scheduler lets the clients' own timers run when nothing
// else can happen, before it concludes that nothing will.
const idleLimit = 2 * time.Minute

// drainLimit bounds the fair drain after the faults stop; a run that has not quiesced by then is a livelock.
const drainLimit = 20000

// choice is one thing the scheduler can make happen next.
type choice struct {
	label string
	do    func()
}

// decider picks the next choice: among progress choices, or, while faults are allowed, among faults.
type decider interface {
	// pick returns the label of the choice to take; "" ends the exploration phase.
	pick(progress, faults []choice) (string, error)
	// steps returns how many decisions the exploration phase may take, at most max.
	steps(max int) int
}

// rapidDecider draws decisions from rapid, so that rapid explores and shrinks them. Shrinking moves draws
// towards 0: towards "no fault" and towards the first progress choice, which is what makes traces short.
type rapidDecider struct{ t *rapid.T }

// steps is drawn too, so that shrinking also shortens the exploration (the fair drain does the rest).
func (d rapidDecider) steps(max int) int { return rapid.IntRange(1, max).Draw(d.t, "steps") }

func (d rapidDecider) pick(progress, faults []choice) (string, error) {
	if len(faults) > 0 && (len(progress) == 0 || rapid.IntRange(0, 99).Draw(d.t, "fault?") >= 90) {
		return faults[rapid.IntRange(0, len(faults)-1).Draw(d.t, "fault")].label, nil
	}
	if len(progress) == 0 {
		return "", nil
	}
	return progress[rapid.IntRange(0, len(progress)-1).Draw(d.t, "step")].label, nil
}

// nothingChosen is the decision that ends an exploration which looked for a choice and took none (there was
// none, or the decider declined), before its steps ran out. It is written to traces like a decision, and a
// replay takes it by looking once more and stopping, as the recorded run did.
const nothingChosen = "# nothing chosen"

// replayDecider takes the decisions of a trace, in order.
type replayDecider struct {
	decisions []string
	next      int
}

func (d *replayDecider) steps(max int) int { return len(d.decisions) }

func (d *replayDecider) pick(progress, faults []choice) (string, error) {
	if d.next >= len(d.decisions) {
		return "", nil
	}
	want := d.decisions[d.next]
	d.next++
	if want == nothingChosen {
		return "", nil
	}
	for _, c := range append(append([]choice(nil), progress...), faults...) {
		if c.label == want {
			return want, nil
		}
	}
	var avail []string
	for _, c := range append(append([]choice(nil), progress...), faults...) {
		avail = append(avail, c.label)
	}
	return "", fmt.Errorf("decision %d %q cannot be taken: the run has diverged from the trace (possible now: %s)", d.next, want, strings.Join(avail, ", "))
}

// schedule runs the exploration phase with the decider, then drains fairly without faults.
func (r *run) schedule(d decider) error {
	faults := 0
	steps := d.steps(r.cfg.Steps)
	ended := false // the exploration looked for a choice and took none
	for n := 0; n < steps; n++ {
		progress, faultChoices := r.choices(faults < r.cfg.MaxFault)
		if len(progress) == 0 && len(faultChoices) == 0 {
			ended = true
			break
		}
		label, err := d.pick(progress, faultChoices)
		if err != nil {
			return err
		}
		if label == "" {
			ended = true
			break
		}
		if take(label, progress) {
			continue
		}
		if take(label, faultChoices) {
			faults++
		}
	}
	r.explored = len(r.decisions)
	if ended {
		// That last look let the bubble's clock run (choices idles when nothing is pending), which the
		// clients' own timers see: a replay must look once more too, or it drains at another time.
		r.decisions = append(r.decisions, nothingChosen)
	}
	r.decisions = append(r.decisions, "# drain")
	for n := 0; n < drainLimit; n++ {
		progress, _ := r.choices(false)
		if len(progress) == 0 {
			return nil
		}
		progress[n%len(progress)].do()
	}
	return nil
}

func take(label string, cs []choice) bool {
	for _, c := range cs {
		if c.label == label {
			c.do()
			return true
		}
	}
	return false
}

// choices waits until every client is blocked, then lists what can happen next. When nothing can, it lets
// the bubble's clock run — in doubling sleeps, so that a client's own timer (a lock's retry pause, say) fires
// and the client acts before a later one (a cleanup deadline) — and looks again; if nothing happens within
// idleLimit, nothing will.
func (r *run) choices(allowFaults bool) (progress, faults []choice) {
	synctest.Wait()
	progress, faults = r.list(allowFaults)
	for idle := time.Millisecond; len(progress) == 0 && !r.allDone() && idle <= idleLimit; idle *= 2 {
		time.Sleep(idle)
		synctest.Wait()
		progress, faults = r.list(allowFaults)
	}
	return progress, faults
}

func (r *run) allDone() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.clients {
		if !c.done {
			return false
		}
	}
	return true
}

func (r *run) list(allowFaults bool) (progress, faults []choice) {
	// Register requests waiting for the scheduler.
	for _, c := range r.clients {
		select {
		case req := <-c.reqs:
			c.pending = &req
		default:
		}
	}
	for _, st := range r.srv.Pending() {
		progress = append(progress, r.modelChoice(st))
	}
	for _, c := range r.clients {
		if c.pending == nil {
			continue
		}
		c := c
		kind := "cs-read"
		if c.pending.write {
			kind = "cs-write"
		}
		progress = append(progress, r.choice(fmt.Sprintf("%s c%d", kind, c.id), func() {
			req := *c.pending
			c.pending = nil
			ok := r.reg.admit(req.token, req.shared)
			if ok && req.write {
				r.reg.value = req.value
			}
			req.reply <- regReply{ok: ok, value: r.reg.value}
		}))
	}
	if !allowFaults {
		return progress, nil
	}
	for _, st := range r.srv.Faults() {
		if r.cfg.Faults&faultOfStep[st.Kind] != 0 {
			faults = append(faults, r.modelChoice(st))
		}
	}
	if r.cfg.Faults&FaultAdvance != 0 {
		d := sessionTimeout + 4*time.Second
		faults = append(faults, r.choice("advance "+d.String(), func() { r.advance(d) }))
	}
	if r.cfg.Faults&FaultCancel != 0 {
		r.mu.Lock()
		for _, c := range r.clients {
			if c.inLock && c.cancel != nil {
				cancel, id := c.cancel, c.id
				faults = append(faults, r.choice(fmt.Sprintf("cancel c%d", c.id), func() {
					r.note(id, "cancelled", "Lock's context cancelled", nil)
					cancel(context.Canceled)
				}))
			}
		}
		r.mu.Unlock()
	}
	return progress, faults
}

// faultOfStep maps the model's fault steps to the fault kinds that enable them.
var faultOfStep = map[model.StepKind]Fault{model.LoseRequest: FaultLoseRequest, model.LoseReply: FaultLoseReply, model.Disconnect: FaultDisconnect, model.ExpireSession: FaultExpire, model.StopServer: FaultStopServer}

func (r *run) modelChoice(st model.Step) choice {
	return r.choice(st.String(), func() {
		if err := r.srv.Do(st); err != nil {
			panic(fmt.Sprintf("check: model refused a step it offered: %v", err))
		}
	})
}

// choice wraps an action so that taking it advances the step counter and records the decision.
func (r *run) choice(label string, do func()) choice {
	return choice{label: label, do: func() {
		r.decisions = append(r.decisions, label)
		r.beginStep(label)
		do()
	}}
}

// beginStep starts the next step of the history with the scheduler's decision.
func (r *run) beginStep(label string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.step++
	r.addLocked(phaseStep, &event{kind: "decision", text: label, at: r.elapsed}, nil)
}

// advance moves the model's clock and cancels the Lock calls whose deadline it passes.
func (r *run) advance(d time.Duration) {
	r.srv.Advance(d)
	r.mu.Lock()
	r.elapsed += d.Milliseconds()
	type due struct {
		id     int
		cancel context.CancelCauseFunc
	}
	var expired []due
	for _, c := range r.clients {
		if c.inLock && c.deadline > 0 && r.elapsed >= c.deadline && c.cancel != nil {
			expired = append(expired, due{c.id, c.cancel})
		}
	}
	r.mu.Unlock()
	for _, d := range expired {
		r.note(d.id, "cancelled", "Lock's deadline passed", nil)
		d.cancel(context.DeadlineExceeded)
	}
}

// idle lets the bubble's clock run in doubling sleeps, up to idleLimit, until a client asks for something
// or every client is done; it reports whether that happened.
func (r *run) idle() bool {
	for d := time.Millisecond; d <= idleLimit; d *= 2 {
		time.Sleep(d)
		synctest.Wait()
		if r.allDone() || len(r.srv.Pending()) > 0 {
			return true
		}
		for _, c := range r.clients {
			if len(c.reqs) > 0 {
				return true
			}
		}
	}
	return false
}
