package check

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/model"
	"pgregory.net/rapid"
)

// lockDir is the lock path every client contends on.
const lockDir = "/lock"

// sessionTimeout is what every client asks for; with the model's default tick (2s) it is granted as is.
const sessionTimeout = 10 * time.Second

// idleLimit is how long, in the bubble's time, the scheduler lets the clients' own timers run when nothing
// else can happen, before it concludes that nothing will.
const idleLimit = time.Hour

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

// The two phases of a step in the history: what the scheduler did (its decision and the model's records of
// the step itself), then what the clients did in reaction. A client's event is always a reaction, whichever
// goroutine got a lock first, so that a woken client logging while the scheduler is still inside Do cannot
// change the order.
const (
	phaseStep     = 0
	phaseReaction = 1
)

// event is one thing that happened, for the history: a model record or a client's action.
type event struct {
	step   int
	phase  int // phaseStep or phaseReaction
	client int
	seq    int
	kind   string
	text   string
	ts     int64 // assigned after the run, in history order
	at     int64 // for decisions: the virtual time, in milliseconds since the start

	// for the properties
	session int64
	token   int64
	err     error
	zxid    int64
	path    string
	op      *csOp
}

type csOp struct {
	token int64
	// lostAtRead: the Locker's Lost() had closed when the client asked for the read, so the read may be
	// refused without breaking the fencing property. (A client told of loss skips the write.)
	lostAtRead bool
	readOK     bool
	read       int
	wrote      bool
	writeOK    bool
	// incomplete: the run ended before the register answered (only when clients are stuck)
	incomplete bool
}

// register is the shared state the critical sections update. It refuses a read or a write whose fencing
// token is lower than one it has already seen; token 0 means "no token" and is never refused.
type register struct {
	value    int
	maxToken int64
}

func (r *register) admit(token int64) bool {
	if token == 0 {
		return true
	}
	if token < r.maxToken {
		return false
	}
	r.maxToken = token
	return true
}

type client struct {
	id     int
	conn   *model.Conn
	lock   Locker
	reqs   chan regRequest
	cancel context.CancelCauseFunc
	// deadline in virtual milliseconds since the start, or 0
	deadline int64
	inLock   bool
	pending  *regRequest
	done     bool
	seq      int
}

type regRequest struct {
	write bool
	token int64
	value int
	reply chan regReply
}

type regReply struct {
	ok    bool
	value int
}

// run is one execution: a model server, K clients running the workload, and the scheduler.
type run struct {
	cfg     Config
	srv     *model.Server
	clients []*client
	byID    map[int]*client // by model ClientID (client 1 is the set-up client)
	reg     register

	mu       sync.Mutex // guards what client goroutines touch: events, client fields, step, stopping
	step     int
	events   []*event
	elapsed  int64 // virtual ms since start
	stopping bool  // the run is over: clients start no new round

	decisions []string
	explored  int // decisions taken before the drain
	wg        sync.WaitGroup
}

// react records what a client did, as a reaction to the current step.
func (r *run) react(c int, kind, text string, fill func(*event)) {
	r.add(phaseReaction, &event{client: c, kind: kind, text: text}, fill)
}

// note records what the scheduler did, as part of the current step.
func (r *run) note(c int, kind, text string, fill func(*event)) {
	r.add(phaseStep, &event{client: c, kind: kind, text: text}, fill)
}

func (r *run) add(phase int, e *event, fill func(*event)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addLocked(phase, e, fill)
}

func (r *run) addLocked(phase int, e *event, fill func(*event)) {
	e.step, e.phase = r.step, phase
	if cl := r.byID[e.client]; cl != nil {
		cl.seq++
		e.seq = cl.seq
	}
	if fill != nil {
		fill(e)
	}
	r.events = append(r.events, e)
}

// outcome is a finished run: its decisions, history and verdict.
type outcome struct {
	decisions []string
	explored  int // decisions before the drain
	history   []*event
	property  string // "" when every property held
	verdict   string
	lockOps   []lockOp
	dump      string
}

func (o *outcome) failed() bool { return o.property != "" }

// execute performs one run inside the current synctest bubble.
func execute(f Factory, cfg Config, d decider) *outcome {
	r := &run{cfg: cfg, byID: map[int]*client{}}
	r.srv = model.NewServer(model.WithManualTransport(), model.WithObserver(func(rec model.Record) {
		// Called under the model's lock, from the scheduler or from a client goroutine: the record says
		// whether the step itself produced it.
		e := &event{client: rec.Client, kind: "model:" + rec.Kind, text: rec.Detail, session: rec.Session}
		if rec.Kind == "notify" {
			e.path, e.zxid = parseNotify(rec.Detail)
		}
		phase := phaseReaction
		if rec.Step {
			phase = phaseStep
		}
		r.add(phase, e, nil)
	}))
	out := &outcome{}
	if err := r.setup(f); err != nil {
		out.property, out.verdict = "setup", err.Error()
		return out
	}
	for i := range r.clients {
		r.wg.Add(1)
		go r.workload(r.clients[i])
	}
	// rapid aborts a run by panicking out of a draw (when shrinking runs out of data, say): end the clients
	// first, or their goroutines would outlive the bubble.
	defer func() {
		if p := recover(); p != nil {
			r.shutdown()
			panic(p)
		}
	}()
	err := r.schedule(d)
	stuck := r.stuckClients()
	out.dump = r.srv.Dump()
	leftovers := lockNodes(out.dump)
	r.shutdown()
	out.decisions, out.explored = r.decisions, r.explored
	out.history = r.orderedHistory()
	switch {
	case err != nil:
		out.property, out.verdict = "replay", err.Error()
	default:
		out.evaluate(r, stuck, leftovers)
	}
	return out
}

// setup makes the clients, c1…cK, and the lock's parent. The parent is created by a client of its own (the
// admin, connected last so that the clients are numbered from 1), driven here; the history starts after it.
func (r *run) setup(f Factory) error {
	for i := 0; i < r.cfg.Clients; i++ {
		conn, _, err := r.srv.Connect(sessionTimeout)
		if err != nil {
			return err
		}
		c := &client{id: conn.ClientID(), conn: conn, reqs: make(chan regRequest, 1)}
		r.mu.Lock()
		r.clients = append(r.clients, c)
		r.byID[c.id] = c
		r.mu.Unlock()
	}
	admin, _, err := r.srv.Connect(sessionTimeout)
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() {
		_, err := admin.Create(lockDir, nil, 0, zk.WorldACL(zk.PermAll))
		errc <- err
	}()
	for {
		synctest.Wait()
		p := r.srv.Pending()
		if len(p) == 0 {
			break
		}
		if err := r.srv.Do(p[0]); err != nil {
			return err
		}
	}
	if err := <-errc; err != nil {
		return fmt.Errorf("creating %s: %w", lockDir, err)
	}
	admin.Close()
	for p := r.srv.Pending(); len(p) > 0; p = r.srv.Pending() {
		if err := r.srv.Do(p[0]); err != nil {
			return err
		}
	}
	r.mu.Lock()
	r.events = r.events[:0] // the history starts with the clients
	for _, c := range r.clients {
		c.seq = 0
	}
	r.mu.Unlock()
	for _, c := range r.clients {
		c.lock = f(c.conn, lockDir)
		if c.lock == nil {
			return fmt.Errorf("the Factory returned a nil Locker for client c%d: it must return a lock on the given connection and path", c.id)
		}
	}
	return nil
}

// workload is one client: Rounds times lock, a fenced read-modify-write of the register, unlock.
func (r *run) workload(c *client) {
	defer r.wg.Done()
	defer func() {
		r.mu.Lock()
		c.done = true
		r.mu.Unlock()
	}()
	for round := 1; round <= r.cfg.Rounds; round++ {
		ctx, cancel := context.WithCancelCause(context.Background())
		r.mu.Lock()
		if r.stopping {
			r.mu.Unlock()
			cancel(nil)
			return
		}
		c.cancel, c.inLock = cancel, true
		c.deadline = 0
		if r.cfg.Deadline > 0 && c.id%2 == 1 {
			c.deadline = r.elapsed + r.cfg.Deadline.Milliseconds()
		}
		r.mu.Unlock()
		r.react(c.id, "lock", fmt.Sprintf("Lock() round %d", round), nil)
		err := c.lock.Lock(ctx)
		r.mu.Lock()
		c.inLock, c.cancel = false, nil
		r.mu.Unlock()
		cancel(nil)
		if err != nil {
			r.react(c.id, "lock-err", fmt.Sprintf("Lock() failed: %v", err), func(e *event) { e.err = err })
			continue
		}
		token := c.lock.Token()
		sess := c.conn.SessionID()
		r.react(c.id, "lock-ok", fmt.Sprintf("Lock() ok, token %d, session %#x", token, sess), func(e *event) { e.token, e.session = token, sess })
		r.critical(c, token)
		r.react(c.id, "unlock", "Unlock()", nil)
		uerr := c.lock.Unlock(context.Background())
		if uerr != nil {
			r.react(c.id, "unlock-err", fmt.Sprintf("Unlock() failed: %v", uerr), func(e *event) { e.err = uerr })
		} else {
			r.react(c.id, "unlock-ok", "Unlock() ok", nil)
		}
	}
}

// critical is the critical section: read the register, then write it plus one, both with the fencing token,
// each a step the scheduler takes. A Locker that reports loss (Lost) is asked before the write.
func (r *run) critical(c *client, token int64) {
	op := &csOp{token: token, lostAtRead: lost(c.lock)}
	r.react(c.id, "cs-read", fmt.Sprintf("read register with token %d", token), func(e *event) { e.op = op })
	rep := r.register(c, regRequest{token: token})
	op.readOK, op.read = rep.ok, rep.value
	if rep.value < 0 {
		op.incomplete = true
		return
	}
	if !rep.ok {
		r.react(c.id, "cs-refused", fmt.Sprintf("register refused the read: token %d is stale", token), func(e *event) { e.op = op })
		return
	}
	r.react(c.id, "cs-value", fmt.Sprintf("register read %d", rep.value), func(e *event) { e.op = op })
	if lost(c.lock) {
		r.react(c.id, "cs-abort", "lock lost: write skipped", func(e *event) { e.op = op })
		return
	}
	op.wrote = true
	rep = r.register(c, regRequest{write: true, token: token, value: op.read + 1})
	op.writeOK = rep.ok
	if rep.value < 0 {
		op.incomplete = true
		return
	}
	verdict := "accepted"
	if !rep.ok {
		verdict = "refused: stale token"
	}
	r.react(c.id, "cs-write", fmt.Sprintf("write %d with token %d: %s", op.read+1, token, verdict), func(e *event) { e.op = op })
}

// lost reports whether a Locker that reports loss (Lost) has closed its channel.
func lost(l Locker) bool {
	if l, ok := l.(interface{ Lost() <-chan struct{} }); ok {
		select {
		case <-l.Lost():
			return true
		default:
		}
	}
	return false
}

func (r *run) register(c *client, req regRequest) regReply {
	req.reply = make(chan regReply, 1)
	c.reqs <- req
	return <-req.reply
}

// schedule runs the exploration phase with the decider, then drains fairly without faults.
func (r *run) schedule(d decider) error {
	faults := 0
	steps := d.steps(r.cfg.Steps)
	for n := 0; n < steps; n++ {
		progress, faultChoices := r.choices(faults < r.cfg.MaxFault)
		if len(progress) == 0 && len(faultChoices) == 0 {
			break
		}
		label, err := d.pick(progress, faultChoices)
		if err != nil {
			return err
		}
		if label == "" {
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
			ok := r.reg.admit(req.token)
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
var faultOfStep = map[model.StepKind]Fault{model.LoseRequest: FaultLoseRequest, model.LoseReply: FaultLoseReply, model.Disconnect: FaultDisconnect, model.ExpireSession: FaultExpire}

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

func (r *run) stuckClients() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var stuck []int
	for _, c := range r.clients {
		if !c.done {
			stuck = append(stuck, c.id)
		}
	}
	return stuck
}

// errRunOver is the cause given to the contexts of the Lock calls still running when a run ends.
var errRunOver = errors.New("check: run over")

// shutdown ends every client so that no goroutine outlives the bubble. It is taken as steps of the history,
// each carried out until the clients are quiet before the next begins, so that what the clients do in
// reaction comes out the same every time: first no client starts another round and every Lock's context is
// cancelled, and what that sets off runs its course (requests applied, replies delivered, register requests
// refused); then each connection is closed in turn, and its close runs its course.
func (r *run) shutdown() {
	r.beginStep("shutdown")
	r.note(0, "shutdown", "the run is over: every client is cancelled, then closed", nil)
	r.mu.Lock()
	r.stopping = true
	var cancels []context.CancelCauseFunc
	for _, c := range r.clients {
		if c.cancel != nil {
			cancels = append(cancels, c.cancel)
		}
	}
	r.mu.Unlock()
	for _, cancel := range cancels {
		cancel(errRunOver)
	}
	r.windDown()
	for _, c := range r.clients {
		r.beginStep(fmt.Sprintf("close c%d", c.id))
		c.conn.Close()
		r.windDown()
	}
	r.wg.Wait()
}

// windDown carries out what the clients do until they are quiet: register requests are refused, pending
// model steps are taken one at a time (each a step of the history), and when nothing is pending the bubble's
// clock runs, so that the clients' own timers fire, until something is or idleLimit has passed.
func (r *run) windDown() {
	for n := 0; n < drainLimit; n++ {
		synctest.Wait()
		if r.refuseRegisterRequests() {
			continue
		}
		if p := r.srv.Pending(); len(p) > 0 {
			r.beginStep(p[0].String())
			if err := r.srv.Do(p[0]); err != nil {
				panic(fmt.Sprintf("check: model refused a step it offered: %v", err))
			}
			continue
		}
		if r.allDone() || !r.idle() {
			return
		}
	}
}

// refuseRegisterRequests answers every waiting register request with "no answer" (the run is over), so that
// critical sections end; it reports whether there were any.
func (r *run) refuseRegisterRequests() bool {
	refused := false
	for _, c := range r.clients {
		select {
		case req := <-c.reqs:
			c.pending = &req
		default:
		}
		if c.pending != nil {
			c.pending.reply <- regReply{value: -1}
			c.pending = nil
			refused = true
		}
	}
	return refused
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

// orderedHistory returns the events in a deterministic order: by step, the scheduler's part first, then the
// clients' reactions in client order (each client's own events keep their order).
func (r *run) orderedHistory() []*event {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := append([]*event(nil), r.events...)
	sort.SliceStable(h, func(i, j int) bool {
		a, b := h[i], h[j]
		if a.step != b.step {
			return a.step < b.step
		}
		if a.phase != b.phase {
			return a.phase < b.phase
		}
		if a.phase == 0 {
			return false // the scheduler's own order
		}
		if a.client != b.client {
			return a.client < b.client
		}
		return a.seq < b.seq
	})
	for i, e := range h {
		e.ts = int64(i + 1)
	}
	return h
}

// parseNotify reads "EventNodeDeleted /lock/x zxid=12".
func parseNotify(detail string) (path string, zxid int64) {
	f := strings.Fields(detail)
	if len(f) >= 3 {
		path = f[1]
		fmt.Sscanf(f[2], "zxid=%d", &zxid)
	}
	return path, zxid
}

// lockNodes lists the nodes under lockDir in a model Dump.
func lockNodes(dump string) []string {
	var out []string
	for _, line := range strings.Split(dump, "\n") {
		if strings.HasPrefix(line, "node "+lockDir+"/") {
			out = append(out, strings.Fields(line)[1])
		}
	}
	return out
}
