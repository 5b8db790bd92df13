package check

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
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

// choice is one thing the scheduler can make happen next: a model step, or an action of the scheduler's
// own. Its label, what traces call it ("apply c2", "stop s1", "cs-write c3", "advance 14s"), is made only
// when asked for: a decision lists many choices and takes one.
type choice struct {
	name   string // the label's first word (a step kind's name, "cs-read", …), or the whole label when on is 0
	on     byte   // 'c' when the label goes on to name client id, 's' server id
	id     int
	common labelName // the label's first word when it is one labelTable holds (name is then that word), or 0
	what   choiceKind
	step   model.Step              // stepChoice: the model step
	cl     *client                 // answerChoice: the client whose register request is answered
	cancel context.CancelCauseFunc // cancelChoice: the Lock call's cancel
}

// choiceKind is what taking a choice does.
type choiceKind uint8

const (
	stepChoice    choiceKind = iota // the model takes a step
	answerChoice                    // the register answers a client's request
	advanceChoice                   // the clock jumps (FaultAdvance)
	cancelChoice                    // a Lock call's context is cancelled (FaultCancel)
)

// label is the choice's label; for a model step, the step's String.
func (c *choice) label() string {
	if c.on == 0 {
		return c.name
	}
	if c.common != 0 && c.id >= 0 && c.id < len(labelTable[0]) {
		return labelTable[c.common][c.id]
	}
	key := labelKey{c.name, c.on, c.id}
	if l, ok := labels.Load(key); ok {
		return l.(string)
	}
	l, _ := labels.LoadOrStore(key, string(c.appendLabel(make([]byte, 0, len(c.name)+8))))
	return l.(string)
}

// labels holds the labels made so far, by labelKey: every decision of every run records one, and they are
// few (a step kind or scheduler action for each client and server).
var labels sync.Map

type labelKey struct {
	name string
	on   byte
	id   int
}

// labelName is a label's first word that labelTable holds: a model step kind (its model.StepKind), or one of
// the scheduler's own actions on a client.
type labelName uint8

const (
	csRead labelName = labelName(model.StartServer) + 1 + iota
	csWrite
	csHold
	cancelLabel
	labelNames // how many there are (0 is none)
)

// labelTable holds, made at start, the labels of the choices of the first clients and servers, by their first
// word and number: the label of every decision, found with neither a lookup in labels nor an allocation.
var labelTable = func() (t [labelNames][16]string) {
	for n := labelName(1); n < labelNames; n++ {
		c := choice{name: n.String(), on: 'c', common: n}
		if k := model.StepKind(n); n <= labelName(model.StartServer) && (k == model.StopServer || k == model.StartServer) {
			c.on = 's'
		}
		for id := range t[n] {
			c.id = id
			t[n][id] = string(c.appendLabel(nil))
		}
	}
	return t
}()

// String is the word: a step kind's name, "cs-read", "cs-write", "cs-hold" or "cancel".
func (n labelName) String() string {
	switch n {
	case csRead:
		return "cs-read"
	case csWrite:
		return "cs-write"
	case csHold:
		return "cs-hold"
	case cancelLabel:
		return "cancel"
	}
	return model.StepKind(n).String()
}

func (c *choice) appendLabel(b []byte) []byte {
	b = append(append(b, c.name...), ' ', c.on)
	return strconv.AppendInt(b, int64(c.id), 10)
}

// is reports whether label is the choice's label, without making it.
func (c *choice) is(label string) bool {
	if c.on == 0 {
		return label == c.name
	}
	var buf [48]byte
	return len(label) <= len(buf) && string(c.appendLabel(buf[:0])) == label
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

// runSeed draws the run's seed, the run's first draw (see runSeeder).
func (d rapidDecider) runSeed() uint64 { return runSeedGen.Draw(d.t, "run-seed") }

var runSeedGen = rapid.Uint64()

func (d rapidDecider) pick(progress, faults []choice) (string, error) {
	if len(faults) > 0 && (len(progress) == 0 || percent.Draw(d.t, "fault?") >= 90) {
		return faults[drawIndex(d.t, len(faults), "fault")].label(), nil
	}
	if len(progress) == 0 {
		return "", nil
	}
	return progress[drawIndex(d.t, len(progress), "step")].label(), nil
}

// rapidDecider's generators, made once: rapid.IntRange makes a generator per call, and every decision
// draws. A generator holds nothing of a draw (the draws come from the rapid.T), so runs share them.
var (
	percent = rapid.IntRange(0, 99)
	indexOf = func() (g [16]*rapid.Generator[int]) {
		for i := range g {
			g[i] = rapid.IntRange(0, i)
		}
		return g
	}()
)

// drawIndex draws an index into n choices, as rapid.IntRange(0, n-1).Draw does.
func drawIndex(t *rapid.T, n int, label string) int {
	if n <= len(indexOf) {
		return indexOf[n-1].Draw(t, label)
	}
	return rapid.IntRange(0, n-1).Draw(t, label)
}

// nothingChosen is the decision that ends an exploration which looked for a choice and took none (there was
// none, or the decider declined), before its steps ran out. It is written to traces like a decision, and a
// replay takes it by looking once more and stopping, as the recorded run did.
const nothingChosen = "# nothing chosen"

// replayDecider takes the decisions of a trace, in order.
type replayDecider struct {
	decisions []string
	next      int
	seed      uint64 // the trace's run seed
}

func (d *replayDecider) steps(max int) int { return len(d.decisions) }

func (d *replayDecider) runSeed() uint64 { return d.seed }

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
		if c.is(want) {
			return want, nil
		}
	}
	var avail []string
	for _, c := range append(append([]choice(nil), progress...), faults...) {
		avail = append(avail, c.label())
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
		if r.take(label, progress) {
			continue
		}
		if r.take(label, faultChoices) {
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
		c := &progress[n%len(progress)]
		r.do(c, c.label())
	}
	return nil
}

// take does the first of cs whose label is label, and reports whether there was one.
func (r *run) take(label string, cs []choice) bool {
	for i := range cs {
		if cs[i].is(label) {
			r.do(&cs[i], label)
			return true
		}
	}
	return false
}

// do takes a choice, whose label is label: it records the decision, begins the step and carries it out.
func (r *run) do(c *choice, label string) {
	r.decisions = append(r.decisions, label)
	r.beginStep(label)
	switch c.what {
	case stepChoice:
		if err := r.srv.Do(c.step); err != nil {
			panic(fmt.Sprintf("check: model refused a step it offered: %v", err))
		}
	case answerChoice:
		req := *c.cl.pending
		c.cl.pending = nil
		if req.hold {
			req.reply <- regReply{ok: true, value: r.reg.value}
			break
		}
		ok := r.reg.admit(req.token, req.shared)
		if ok && req.write {
			r.reg.value = req.value
		}
		req.reply <- regReply{ok: ok, value: r.reg.value}
	case advanceChoice:
		r.advance(advanceBy)
	case cancelChoice:
		r.note(c.id, "cancelled", "Lock's context cancelled", nil)
		c.cancel(context.Canceled)
	}
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

// list returns what can happen next. The two slices are the run's own buffers, which the next list reuses:
// a decision is taken before the scheduler looks again.
func (r *run) list(allowFaults bool) (progress, faults []choice) {
	progress, faults = r.progressBuf[:0], r.faultBuf[:0]
	defer func() {
		r.progressBuf = progress[:0]
		if faults != nil {
			r.faultBuf = faults[:0]
		}
	}()
	// Register requests waiting for the scheduler.
	for _, c := range r.clients {
		select {
		case c.waiting = <-c.reqs:
			c.pending = &c.waiting
		default:
		}
	}
	r.stepBuf = r.srv.AppendPending(r.stepBuf[:0])
	for _, st := range r.stepBuf {
		progress = append(progress, modelChoice(st))
	}
	for _, c := range r.clients {
		if c.pending == nil {
			continue
		}
		kind := csRead
		switch {
		case c.pending.write:
			kind = csWrite
		case c.pending.hold:
			kind = csHold
		}
		progress = append(progress, choice{name: kind.String(), on: 'c', id: c.id, common: kind, what: answerChoice, cl: c})
	}
	if !allowFaults {
		faults = nil
		return progress, faults
	}
	r.stepBuf = r.srv.AppendFaults(r.stepBuf[:0])
	for _, st := range r.stepBuf {
		if r.cfg.Faults&faultOfStep(st.Kind) != 0 {
			faults = append(faults, modelChoice(st))
		}
	}
	if r.cfg.Faults&FaultAdvance != 0 {
		faults = append(faults, choice{name: advanceLabel, what: advanceChoice})
	}
	if r.cfg.Faults&FaultCancel != 0 {
		r.mu.Lock()
		for _, c := range r.clients {
			if c.inLock && c.cancel != nil {
				faults = append(faults, choice{name: cancelLabel.String(), on: 'c', id: c.id, common: cancelLabel, what: cancelChoice, cancel: c.cancel})
			}
		}
		r.mu.Unlock()
	}
	return progress, faults
}

// pending is the model's Pending in the run's buffer of steps (list's), which the next look reuses.
func (r *run) pending() []model.Step {
	r.stepBuf = r.srv.AppendPending(r.stepBuf[:0])
	return r.stepBuf
}

// faultOfStep maps the model's fault steps to the fault kinds that enable them.
func faultOfStep(k model.StepKind) Fault {
	switch k {
	case model.LoseRequest:
		return FaultLoseRequest
	case model.LoseReply:
		return FaultLoseReply
	case model.Disconnect:
		return FaultDisconnect
	case model.ExpireSession:
		return FaultExpire
	case model.StopServer:
		return FaultStopServer
	}
	return 0
}

// The FaultAdvance choice: the clock jumps past the session timeout.
const advanceBy = sessionTimeout + 4*time.Second

var advanceLabel = "advance " + advanceBy.String()

// modelChoice is the choice of a model step; its label is the step's String.
func modelChoice(st model.Step) choice {
	if st.Kind == model.StopServer || st.Kind == model.StartServer {
		return choice{name: st.Kind.String(), on: 's', id: st.Server, common: commonStep(st.Kind), step: st}
	}
	return choice{name: st.Kind.String(), on: 'c', id: st.Client, common: commonStep(st.Kind), step: st}
}

// commonStep is the labelName of a step kind, or 0 if labelTable has none for it.
func commonStep(k model.StepKind) labelName {
	if k >= model.Apply && k <= model.StartServer {
		return labelName(k)
	}
	return 0
}

// beginStep starts the next step of the history with the scheduler's decision.
func (r *run) beginStep(label string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.step++
	r.addLocked(phaseStep, event{kind: "decision", text: label, at: r.elapsed}, nil)
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
		if r.allDone() || len(r.pending()) > 0 {
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
