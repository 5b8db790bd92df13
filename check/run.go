package check

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing/synctest"
	"time"
	"unicode"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/model"
)

// lockDir is the lock path every client contends on.
const lockDir = "/lock"

// sessionTimeout is what every client asks for; with the model's default tick (2s) it is granted as is.
const sessionTimeout = 10 * time.Second

// ensembleSize is how many servers a run's model has when FaultStopServer is on (one otherwise): the
// smallest ensemble that survives a stop.
const ensembleSize = 3

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
	shared  bool // a reader's Lock call, hold or release (ReadWrite)
}

// clientConn is what the workload needs of a client's connection, whatever kind of client it is.
type clientConn interface {
	SessionID() int64
	Close()
}

// clients is what the scheduler schedules: how each of the K clients connects to the model, and how its
// Locker is made. The scheduler, the workload, the properties and the traces are the same for every kind.
type clients struct {
	name string // "model" or "go-zookeeper", as traces name it
	// connect opens the i-th client's connection (0, 1, …) inside the run's bubble and returns the model's
	// number for the client, the one its steps name.
	connect func(srv *model.Server, i int) (id int, conn clientConn, err error)
	// lock makes the client's Locker on its connection.
	lock func(conn clientConn, path string) Locker
	// forget, if set, is called for each connection once the run is over.
	forget func(conn clientConn)
}

// The kinds of client, as traces name them.
const (
	modelKind = "model"        // the model's own *model.Conn
	wireKind  = "go-zookeeper" // go-zookeeper's *zk.Conn over the model's in-process wire
)

// replayerOf names the function that replays a trace of the given kind of client.
func replayerOf(kind string) string {
	if kind == wireKind {
		return "check.ReplayZK (or RunZK with -check.replay)"
	}
	return "check.Replay (or Run with -check.replay)"
}

// modelClients are the model's own clients (*model.Conn) running f's lock.
func modelClients(f Factory) clients {
	return clients{
		name: modelKind,
		connect: func(srv *model.Server, _ int) (int, clientConn, error) {
			conn, _, err := srv.Connect(sessionTimeout)
			if err != nil {
				return 0, nil, err
			}
			return conn.ClientID(), conn, nil
		},
		lock: func(conn clientConn, path string) Locker { return f(conn.(*model.Conn), path) },
	}
}

// run is one execution: a model server, K clients running the workload, and the scheduler.
type run struct {
	cfg     Config
	kind    clients
	srv     *model.Server
	clients []*client
	byID    []*client // by model ClientID (the admin, connected last, has none)
	reg     register

	mu       sync.Mutex // guards what client goroutines touch: events, client fields, step, stopping
	step     int
	events   []*event
	elapsed  int64 // virtual ms since start
	stopping bool  // the run is over: clients start no new round

	eventBlock []event       // where addLocked makes the next events: the rest of the last of blocks
	blocks     []*eventBlock // the blocks the run's events are in, handed to its outcome (see recycle)

	decisions []string
	explored  int // decisions taken before the drain

	progressBuf, faultBuf []choice     // list's buffers
	stepBuf               []model.Step // list's buffer of the model's steps
	wg                    sync.WaitGroup
	rand                  *runRand // the run's crypto/rand stream (RunZK's runs), which its goroutines read
	seed                  uint64   // the run's seed, drawn by the decider (see runSeeder)
}

// runSeeder is a decider that draws the run's seed before anything else. RandFor's streams (and, for RunZK,
// crypto/rand's) are seeded by it and the client's number, so that the names of the recipes' nodes, and so
// their order by name, vary from run to run, and stay the same for the same decisions; a semaphore holder's
// hold time is drawn from it too (see holdSteps). The seed is recorded in the trace ("run-seed:"), and replay
// takes it from there. A decider that draws none (the exhaustive search's) gives seed 0: the same ids in
// every run and no hold, as before runs had seeds.
type runSeeder interface {
	runSeed() uint64
}

// react records what a client did, as a reaction to the current step.
func (r *run) react(c int, kind, text string, fill func(*event)) {
	r.add(phaseReaction, event{client: c, kind: kind, text: text}, fill)
}

// note records what the scheduler did, as part of the current step.
func (r *run) note(c int, kind, text string, fill func(*event)) {
	r.add(phaseStep, event{client: c, kind: kind, text: text}, fill)
}

func (r *run) add(phase int, e event, fill func(*event)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addLocked(phase, e, fill)
}

// clientByID is the client with the model's ClientID id, or nil.
func (r *run) clientByID(id int) *client {
	if id < 0 || id >= len(r.byID) {
		return nil
	}
	return r.byID[id]
}

// addLocked records e. Events are made in blocks, a run records hundreds.
func (r *run) addLocked(phase int, ev event, fill func(*event)) {
	if len(r.eventBlock) == 0 {
		b := eventBlocks.Get().(*eventBlock)
		r.blocks = append(r.blocks, b)
		r.eventBlock = b[:]
	}
	e := &r.eventBlock[0]
	r.eventBlock = r.eventBlock[1:]
	*e = ev
	e.step, e.phase = r.step, phase
	if cl := r.clientByID(e.client); cl != nil {
		cl.seq++
		e.seq = cl.seq
	}
	if fill != nil {
		fill(e)
	}
	r.events = append(r.events, e)
}

// eventBlock is a block of events, as addLocked makes them.
type eventBlock [64]event

// eventBlocks recycles the blocks of the runs that are over and were dropped (outcome.recycle): they were a
// third of the bytes a model run allocated, and with them the garbage collector's work.
var eventBlocks = sync.Pool{New: func() any { return new(eventBlock) }}

// recycle hands the outcome's event blocks back for other runs to record in. The outcome's history must not
// be read afterwards: only a search that drops the outcome (a run that passed, once judged) recycles it.
func (o *outcome) recycle() {
	for _, b := range o.blocks {
		clear(b[:]) // what the events referred to is garbage now
		eventBlocks.Put(b)
	}
	o.blocks, o.history = nil, nil
}

// outcome is a finished run: its decisions, history and verdict.
type outcome struct {
	blocks     []*eventBlock // where the history's events are (see recycle)
	clientKind string        // clients.name
	decisions  []string
	explored   int // decisions before the drain
	history    []*event
	property   string // "" when every property held
	verdict    string
	lockOps    []lockOp
	dump       string
	shared     bool   // the run reached the primitive's sharing: two readers, or Leases holders, at once
	pruned     bool   // partial-order reduction cut the run short: it is not judged
	seed       uint64 // the run's seed (see runSeeder); 0: node ids as before runs had seeds
	idOrder    []int  // the order of the clients' id streams (Config.idStreams); nil: each client its own
}

func (o *outcome) failed() bool { return o.property != "" }

// execute performs one run of f's lock on the model's own clients inside the current synctest bubble.
func execute(f Factory, cfg Config, d decider) *outcome { return executeWith(modelClients(f), cfg, d) }

// executeWith performs one run of the given kind of clients inside the current synctest bubble.
func executeWith(kind clients, cfg Config, d decider) *outcome {
	r := &run{cfg: cfg, kind: kind}
	r.reg.open = cfg.Primitive == Semaphore
	opts := []model.Option{model.WithManualTransport()}
	if cfg.Faults&FaultStopServer != 0 {
		opts = append(opts, model.WithEnsemble(ensembleSize)) // only then: runs without the fault are as before
	}
	r.srv = model.NewServer(append(opts, model.WithObserver(func(rec model.Record) {
		// Called under the model's lock, from the scheduler or from a client goroutine: the record says
		// whether the step itself produced it.
		e := event{client: rec.Client, kind: recordKind(rec.Kind), text: rec.Detail, session: rec.Session}
		if rec.Kind == "notify" {
			e.path, e.zxid = parseNotify(rec.Detail)
		}
		phase := phaseReaction
		if rec.Step {
			phase = phaseStep
		}
		r.add(phase, e, nil)
	}))...)
	out := &outcome{clientKind: kind.name, idOrder: cfg.idOrder()}
	if s, ok := d.(runSeeder); ok {
		r.seed = s.runSeed()
		out.seed = r.seed
	}
	defer forgetRunSeeds(r)
	if b, ok := d.(interface{ bind(*run) }); ok {
		b.bind(r) // the exhaustive search reads what each decision did
	}
	if err := r.setup(kind); err != nil {
		r.abandon()
		out.property, out.verdict = "setup", err.Error()
		return out
	}
	if kind.name == wireKind {
		var done func()
		r.rand, done = deterministicCryptoRand(r.seed)
		defer done()
	}
	// One client at a time, each until it is quiet: what they do at the start reads shared sources (such as
	// crypto/rand, for go-zookeeper's protected names) in client order.
	for i := range r.clients {
		r.wg.Add(1)
		go r.workload(r.clients[i])
		synctest.Wait()
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
	r.shutdown()
	out.decisions, out.explored = r.decisions, r.explored
	out.history = r.orderedHistory()
	out.blocks = r.blocks
	switch {
	case errors.Is(err, errPruned):
		out.pruned = true
	case err != nil:
		out.property, out.verdict = "replay", err.Error()
	default:
		out.evaluate(r, stuck, leftoverNodes(out.history, out.dump))
	}
	return out
}

// setup makes the clients, c1…cK, and the lock's parent. The parent is created by a client of its own (the
// admin, connected last so that the clients are numbered from 1), driven here; the history starts after it.
func (r *run) setup(kind clients) error {
	for i := 0; i < r.cfg.Clients; i++ {
		id, conn, err := kind.connect(r.srv, i)
		if err != nil {
			return fmt.Errorf("connecting client %d: %w", i+1, err)
		}
		c := &client{id: id, conn: conn, reqs: make(chan regRequest, 1), replies: make(chan regReply, 1)}
		if r.seed != 0 {
			c.holds = rand.New(rand.NewPCG(r.seed, uint64(id)))
		}
		rememberRunSeed(conn, runStream{seed: r.seed, stream: r.cfg.idStream(id)})
		r.mu.Lock()
		r.clients = append(r.clients, c)
		if c.id >= 0 {
			r.byID = append(r.byID, make([]*client, max(c.id+1-len(r.byID), 0))...)
			r.byID[c.id] = c
		}
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
		p := r.pending()
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
	for p := r.pending(); len(p) > 0; p = r.pending() {
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
		c.lock = kind.lock(c.conn, lockDir)
		if why := nilLocker(c.lock); why != "" {
			return fmt.Errorf("the Factory returned %s for client c%d: it must return a lock on the given connection and path", why, c.id)
		}
		if r.cfg.Primitive == ReadWrite {
			rw, ok := c.lock.(RWLocker)
			if !ok {
				return fmt.Errorf("the Factory returned a %T for client c%d, which has no RLocker() Locker method: a ReadWrite Factory's Locker is the write side and must return the read side from RLocker (check.RWLocker)", c.lock, c.id)
			}
			if c.rlock = rw.RLocker(); nilLocker(c.rlock) != "" {
				return fmt.Errorf("the RLocker of client c%d's Locker returned %s: it must return the read side", c.id, nilLocker(c.rlock))
			}
		}
	}
	return nil
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
	if r.kind.forget != nil {
		for _, c := range r.clients {
			r.kind.forget(c.conn)
		}
	}
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
		if p := r.pending(); len(p) > 0 {
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
		case c.waiting = <-c.reqs:
			c.pending = &c.waiting
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

// orderedHistory returns the events in a deterministic order: by step, the scheduler's part first, then the
// clients' reactions in client order, each client's own actions before the model's records of it (each
// group keeps its order).
func (r *run) orderedHistory() []*event {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := append([]*event(nil), r.events...)
	slices.SortStableFunc(h, historyOrder)
	for i, e := range h {
		e.ts = int64(i + 1)
	}
	return h
}

// historyOrder is the history's order (orderedHistory): by step; in a step the scheduler's own records in
// their order, then the clients' reactions in client order, each client's own actions before the model's
// records of it.
func historyOrder(a, b *event) int {
	if a.step != b.step {
		return cmp.Compare(a.step, b.step)
	}
	if a.phase != b.phase {
		return cmp.Compare(a.phase, b.phase)
	}
	if a.phase == 0 {
		return 0 // the scheduler's own order
	}
	if a.client != b.client {
		return cmp.Compare(a.client, b.client)
	}
	// A client's own actions first, then what the model recorded of it: the two can come from different
	// goroutines (go-zookeeper's redialling, say, beside the workload's), whose race must not show.
	if am, bm := strings.HasPrefix(a.kind, "model:"), strings.HasPrefix(b.kind, "model:"); am != bm {
		if bm {
			return -1
		}
		return 1
	}
	return cmp.Compare(a.seq, b.seq)
}

// parseNotify reads "EventNodeDeleted /lock/x zxid=12".
func parseNotify(detail string) (path string, zxid int64) {
	// strings.Fields' second and third fields, without the slice of them all: every notification is read.
	var f [3]string
	n := 0
	for w := range strings.FieldsSeq(detail) {
		f[n] = w
		if n++; n == len(f) {
			break
		}
	}
	if n == len(f) {
		path = f[1]
		if z, ok := strings.CutPrefix(f[2], "zxid="); ok {
			zxid, _ = strconv.ParseInt(z, 10, 64)
		}
	}
	return path, zxid
}

// recordKind is the kind of the event of a model record of the given kind: "model:" and the record's. The
// model's record kinds (model.Record) are answered with constants, made once: every record is asked about.
func recordKind(kind string) string {
	switch kind {
	case "send":
		return "model:send"
	case "apply":
		return "model:apply"
	case "notify":
		return "model:notify"
	case "reply":
		return "model:reply"
	case "event":
		return "model:event"
	case "state":
		return "model:state"
	case "lose-request":
		return "model:lose-request"
	case "lose-reply":
		return "model:lose-reply"
	case "disconnect":
		return "model:disconnect"
	case "reconnect":
		return "model:reconnect"
	case "expire":
		return "model:expire"
	case "advance":
		return "model:advance"
	case "reap":
		return "model:reap"
	case "close":
		return "model:close"
	case "stop":
		return "model:stop"
	case "start":
		return "model:start"
	case "drop":
		return "model:drop"
	case "connect":
		return "model:connect"
	case "reconfig":
		return "model:reconfig"
	}
	return "model:" + kind
}

// leftoverNodes lists the nodes of a model Dump that a client's Lock call left behind, in the Dump's order:
// every ephemeral node under lockDir, and every node, ephemeral or persistent, that a client created (a
// create applied for it in the history, before the run's shutdown) unless it is the recipe's own structure.
// A node is structure when some client created a node under it (a semaphore's leases and locks directories),
// or when its path is not the call's own: a plain (not sequential) create of the same path was applied more
// than once, for one client or several (each Lock call creating the directories it needs). Every other node
// a call created is that call's, and must not outlive it: once every client is done, each Lock call has
// returned and each hold has been released, so whatever is left outlived the call that made it.
func leftoverNodes(h []*event, dump string) []string {
	created := map[string]bool{} // nodes clients created
	parents := map[string]bool{} // nodes a client created a node under
	requests := map[string]int{} // plain creates applied, by requested path
	for _, e := range h {
		if e.kind == "shutdown" {
			break
		}
		if e.kind != "model:apply" || e.client <= 0 {
			continue
		}
		f0, req, nf := firstFields(e.text)
		if nf < 2 || f0 != "create" {
			continue
		}
		if !sequentialCreate(e.text) {
			requests[req]++ // the path is the request's, whoever asks
		}
		_, res, _ := strings.Cut(e.text, " -> ")
		if path, _, nr := firstFields(res); nr > 0 && strings.HasPrefix(path, "/") {
			created[path] = true
			if i := strings.LastIndexByte(path, '/'); i > 0 {
				parents[path[:i]] = true
			}
		}
	}
	var out []string
	for line := range strings.Lines(dump) {
		rest, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "node ")
		if !ok {
			continue
		}
		path := rest // the line's second field, as strings.Fields has it
		if i := strings.IndexFunc(path, unicode.IsSpace); i >= 0 {
			path = path[:i]
		}
		persistent := strings.Contains(line, " owner=0x0 ")
		switch {
		case !persistent && strings.HasPrefix(path, lockDir+"/"):
			out = append(out, path)
		case created[path] && !parents[path] && requests[path] < 2:
			if persistent {
				path += " (persistent)"
			}
			out = append(out, path)
		}
	}
	return out
}

// sequentialCreate reports whether an applied create's record ("create /p flags=3 …") asked for a sequential
// node (zk.FlagSequence in its flags: persistent, ephemeral or TTL sequential).
func sequentialCreate(text string) bool {
	_, rest, ok := strings.Cut(text, " flags=")
	if !ok {
		return false
	}
	end := strings.IndexByte(rest, ' ')
	if end < 0 {
		end = len(rest)
	}
	flags, err := strconv.Atoi(rest[:end])
	return err == nil && flags&zk.FlagSequence != 0
}

// runStream is what RandFor draws a connection's ids from: its run's seed, and the stream of the client
// number it draws (its own unless Config.idStreams reorders them; 0: the connection's own).
type runStream struct {
	seed   uint64
	stream int
}

// runSeeds are the streams of the connections of the runs under way, for RandFor.
var runSeeds = struct {
	sync.Mutex
	of map[clientConn]runStream
}{of: map[clientConn]runStream{}}

func rememberRunSeed(conn clientConn, s runStream) {
	runSeeds.Lock()
	runSeeds.of[conn] = s
	runSeeds.Unlock()
}

// forgetRunSeeds drops the run's connections from runSeeds, once the run is over.
func forgetRunSeeds(r *run) {
	runSeeds.Lock()
	defer runSeeds.Unlock()
	for _, c := range r.clients {
		delete(runSeeds.of, c.conn)
	}
}

// runStreamOf is the stream of the run a connection belongs to (zero if none).
func runStreamOf(conn clientConn) runStream {
	runSeeds.Lock()
	defer runSeeds.Unlock()
	return runSeeds.of[conn]
}
