package model

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkmodel/zkmodel/model/internal/core"
)

// Server is an in-memory ZooKeeper server: the pure core plus the transport between it and its clients.
// It is safe for concurrent use.
//
// With the default transport every call runs to completion inside the call, and watch events reach other
// sessions at once. With WithManualTransport nothing moves by itself: requests, replies, watch events and
// reconnections wait in per-client queues until a scheduler takes them one at a time with Do.
type Server struct {
	mu        sync.Mutex
	cfg       config
	core      *core.Core
	clients   []*Conn
	seq       int  // records emitted
	inStep    bool // a step is being taken (Do, Advance, Expire): its records are marked Step
	wire      wireState
	saslState saslState
	ens       ensembleState
	// sessionSets are the session expiry buckets sessions have left since (cnxnexpiry.go: dump lists them
	// until they pass).
	sessionSets map[int64]bool
	roSessions  map[int64]int // read-only (local) sessions and the member each is on (readonly.go)
	localSess   map[int64]int // read-write local sessions and the member each is on (localsession.go)
	scratch     []byte        // where apply builds a record's text, reused under mu
}

type config struct {
	seed int64
	tick time.Duration
	// minSession and maxSession are WithSessionTimeouts'; 0: 2 and 20 ticks.
	minSession, maxSession time.Duration
	start                  time.Time
	manual                 bool
	observer               func(Record)
	extended               bool          // WithExtendedTypes
	check                  time.Duration // WithContainerCheckInterval

	superDigest string     // WithSuperDigest
	sasl        SASLConfig // WithSASL
	members     int
	memberList  []EnsembleMember // WithMembers
	reconfig    bool             // WithReconfig
	skipACL     bool             // WithSkipACL
	x509        bool             // WithX509
	x509Super   string           // WithX509SuperUser
	enforceAuth []string         // WithEnforceAuth: the schemes a connection must hold one of

	readOnly       bool // WithReadOnlyMode
	localSessions  bool // WithLocalSessions
	localUpgrading bool // WithLocalSessionsUpgrading

	fourLetterWords []string // WithFourLetterWords; nil: DefaultFourLetterWords
}

// Option configures a Server.
type Option func(*config)

// WithSeed sets the seed that orders children in listings and derives session ids. The default is 1.
func WithSeed(seed int64) Option { return func(c *config) { c.seed = seed } }

// WithTickTime sets the server's tickTime (default 2s): negotiated session timeouts are clamped to
// [2, 20] ticks and sessions expire on tick boundaries, as in ZooKeeper.
func WithTickTime(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.tick = d
		}
	}
}

// WithSessionTimeouts sets the bounds negotiated session timeouts are clamped to, as ZooKeeper's
// minSessionTimeout and maxSessionTimeout do; a bound that is 0 or negative keeps its default, 2 and 20 ticks
// (WithTickTime). A test that asks for a session timeout beyond 20 ticks (ten seconds with a 100 ms tick)
// needs a larger maximum, as a real server configured for it does.
func WithSessionTimeouts(min, max time.Duration) Option {
	return func(c *config) {
		c.minSession, c.maxSession = 0, 0
		if min > 0 {
			c.minSession = min
		}
		if max > 0 {
			c.maxSession = max
		}
	}
}

// WithStartTime sets the virtual clock's starting point (default 2026-01-01T00:00:00Z); ctime and mtime come
// from this clock, which only Advance moves.
func WithStartTime(t time.Time) Option { return func(c *config) { c.start = t } }

// WithManualTransport makes every request, reply, watch event and reconnection a pending step that only Do
// carries out, so that a scheduler (package check) chooses the interleaving and the faults.
func WithManualTransport() Option { return func(c *config) { c.manual = true } }

// WithObserver calls fn, under the server's lock, with a record of every step: requests sent, applied and
// answered, events delivered, faults, session changes and clock moves. fn must not call back into the server.
func WithObserver(fn func(Record)) Option { return func(c *config) { c.observer = fn } }

// WithExtendedTypes enables TTL nodes (CreateTTL), as zookeeper.extendedTypesEnabled=true does on a real
// server. Without it TTL creates fail with ZooKeeper's UNIMPLEMENTED (-6).
func WithExtendedTypes() Option { return func(c *config) { c.extended = true } }

// WithContainerCheckInterval sets how often the container manager runs (ZooKeeper's
// znode.container.checkIntervalMs, default one minute): at the server's start time plus every whole interval
// of the virtual clock it deletes the empty containers that have had children and the childless TTL nodes
// whose mtime is more than their TTL ago. Durations are whole milliseconds; below 1 ms the default stays.
func WithContainerCheckInterval(d time.Duration) Option {
	return func(c *config) {
		if d >= time.Millisecond {
			c.check = d
		}
	}
}

// DefaultContainerCheckInterval is how often the container manager looks for empty containers and expired
// TTL nodes unless WithContainerCheckInterval says otherwise: ZooKeeper's znode.container.checkIntervalMs
// default, one minute.
const DefaultContainerCheckInterval = 60_000 // milliseconds

// NewServer returns a server with a fresh tree holding only / and /zookeeper (with config and quota).
func NewServer(opts ...Option) *Server {
	cfg := config{seed: 1, tick: 2 * time.Second, start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		check: DefaultContainerCheckInterval * time.Millisecond}
	for _, o := range opts {
		o(&cfg)
	}
	c := core.New(uint64(cfg.seed), cfg.start.UnixMilli())
	c.ConfigureReaper(cfg.extended, cfg.check.Milliseconds())
	c.Configure(cfg.coreSettings())
	members := cfg.memberList
	if members == nil {
		members = defaultMembers(max(cfg.members, 1))
	}
	c.SetMembers(members)
	return &Server{cfg: cfg, core: c, ens: newEnsemble(memberIDs(members))}
}

// Record is one step of the server's history, as given to an observer.
type Record struct {
	Seq     int           // 1, 2, 3, … in the order the steps happened
	Elapsed time.Duration // virtual time since the server started
	Client  int           // the client's ClientID, or 0 for server-wide steps
	Session int64         // the client's session at the time, if any
	Kind    string        // "send", "apply", "notify" (the server sends a watch event), "reply", "event" (it arrives), "state", "lose-request", "lose-reply", "disconnect", "reconnect", "expire", "advance", "reap" (the container manager deletes a node), "close", "stop", "start" (a server of the ensemble), "drop" (a stop closed the client's connection; it learns of it with its next delivery)
	Detail  string        // what happened, e.g. "create /lock/n- flags=3 -> /lock/n-0000000001 zxid=5"
	// Step is true for what a step produced (Do, Advance or Expire, under the server's lock) and false for
	// what a client's own call produced (a Close, say) or what Pending, Faults or Do found clients had sent
	// since the scheduler last looked. A scheduler that runs clients in goroutines tells a step's own
	// records from the clients' reactions to it by this, whichever goroutine got the lock first.
	Step bool
}

// String renders the record on one line.
func (r Record) String() string {
	who := "server"
	if r.Client > 0 {
		who = fmt.Sprintf("c%d", r.Client)
	}
	return fmt.Sprintf("%4d t=%-8s %-6s %-12s %s", r.Seq, fmtElapsed(r.Elapsed), who, r.Kind, r.Detail)
}

func fmtElapsed(d time.Duration) string {
	return fmt.Sprintf("%.3fs", d.Seconds())
}

func (s *Server) record(c *Conn, kind, format string, args ...any) {
	if s.cfg.observer == nil {
		return
	}
	s.recordText(c, kind, detail(format, args))
}

// recordText is record of a Detail already made: the hottest records' callers make it without boxing their
// arguments.
func (s *Server) recordText(c *Conn, kind, text string) {
	if s.cfg.observer == nil {
		return
	}
	s.seq++
	r := Record{Seq: s.seq, Elapsed: time.Duration(s.core.Now()-s.cfg.start.UnixMilli()) * time.Millisecond, Kind: kind, Detail: text, Step: s.inStep}
	if c != nil {
		r.Client, r.Session = c.id, c.session
	}
	s.cfg.observer(r)
}

// negotiate clamps a requested session timeout the way a ZooKeeper server does.
func (s *Server) negotiate(d time.Duration) time.Duration {
	lo, hi := s.cfg.sessionBounds()
	return min(max(d, lo), hi)
}

// sessionBounds returns the minimum and maximum session timeouts: WithSessionTimeouts', else 2 and 20 ticks.
func (c *config) sessionBounds() (lo, hi time.Duration) {
	lo, hi = 2*c.tick, 20*c.tick
	if c.minSession > 0 {
		lo = c.minSession
	}
	if c.maxSession > 0 {
		hi = c.maxSession
	}
	return lo, hi
}

// eventBuffer is the capacity of a client's session event channel. go-zookeeper's holds 6, but its
// reconnections are spread over network round trips, so a reader that drains it keeps up; the model emits
// a whole reconnection (and, with the default transport, an expiry and the new session) in one step, which a
// reader cannot interleave with. 64 holds the longest such burst of a client with dozens of watches.
const eventBuffer = 64

// Connect opens a client with a new session. The session exists when Connect returns, with either transport;
// the event channel has received StateConnecting, StateConnected and StateHasSession, as go-zookeeper sends
// them. Like go-zookeeper's, the channel also carries every watch event, drops what does not fit (it holds
// eventBuffer events), and is closed when the client is closed.
func (s *Server) Connect(sessionTimeout time.Duration) (*Conn, <-chan zk.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	member := s.ens.next(len(s.clients) % s.ens.size()) // clients spread over the ensemble's servers
	if member < 0 {
		_, need := s.quorum()
		return nil, nil, fmt.Errorf("model: Connect: no server is serving: %d of %d run, a quorum needs %d participants (StartServer)", s.ens.running(), s.ens.size(), need)
	}
	c := &Conn{
		member:   member,
		srv:      s,
		id:       len(s.clients) + 1,
		timeout:  sessionTimeout,
		events:   make(chan zk.Event, eventBuffer),
		watchers: map[watchKey][]chan zk.Event{},
		state:    zk.StateDisconnected,
	}
	s.clients = append(s.clients, c)
	c.setState(zk.StateConnecting)
	c.setState(zk.StateConnected)
	c.session = s.core.CreateSession(s.negotiate(sessionTimeout))
	c.connected = true
	c.setState(zk.StateHasSession)
	s.record(c, "connect", "session %#x timeout=%s", c.session, s.negotiate(sessionTimeout))
	return c, c.events, nil
}

// Expire ends a session as a session timeout would: its ephemeral nodes go in one transaction, other sessions'
// watches fire, and its client (if connected) sees the server close the connection; when that client
// reconnects it learns of the expiry (StateExpired, then EventNotWatching on every watch) and gets a new
// session, as go-zookeeper does. Expiring an unknown or already ended session does nothing.
func (s *Server) Expire(sessionID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushOutgoing()
	defer s.stepping()()
	s.expire(sessionID)
	s.settle()
}

// stepping marks the records that follow as a step's own, until the returned func is called.
func (s *Server) stepping() (done func()) {
	s.inStep = true
	return func() { s.inStep = false }
}

func (s *Server) expire(sid int64) {
	closeSession := s.core.CloseSession
	if s.isLocalSession(sid) {
		closeSession = s.core.CloseLocalSession // a local session's expiry is no transaction (measured)
		delete(s.localSess, sid)
		delete(s.roSessions, sid)
	}
	notes, ok := closeSession(sid)
	if !ok {
		return
	}
	owner := s.owner(sid)
	s.record(owner, "expire", "session %#x expired (zxid=%d)", sid, s.core.Zxid())
	s.route(notes)
	if owner != nil && owner.connected && !owner.closing {
		// The server closes the connection; what it had already sent still arrives first.
		owner.closing = true
		owner.outbox = append(owner.outbox, outItem{hangUp: true})
	}
}

// owner returns the client whose current session is sid, or nil.
func (s *Server) owner(sid int64) *Conn {
	for _, c := range s.clients {
		if c.session == sid && !c.finished {
			return c
		}
	}
	return nil
}

// route queues watch events for the clients whose sessions they are for. An event for a session whose client
// is not connected is lost, as on a real server; the client's watch comes back when it reconnects (SetWatches).
func (s *Server) route(notes []core.Notification) {
	for _, n := range notes {
		if c := s.owner(n.Session); c != nil && c.connected && !c.closing {
			c.outbox = append(c.outbox, outItem{event: n.Event})
			if s.cfg.observer != nil { // checked here so that the arguments are not boxed for nothing
				s.record(c, "notify", "%s %s zxid=%d", n.Event.Type, n.Event.Path, s.core.Zxid())
			}
		}
	}
}

// Advance moves the virtual clock forward by d. A connected client pings, so its session stays alive; a
// session whose client has been disconnected for longer than its timeout (rounded up to the next tick, as
// ZooKeeper's expiry queue does) expires. The container manager's passes that fall within d run at their
// times (see WithContainerCheckInterval), in time order with the expiries.
func (s *Server) Advance(d time.Duration) {
	if d <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushOutgoing()
	defer s.stepping()()
	from, target := s.core.Now(), s.core.Now()+d.Milliseconds()
	s.core.SetNow(target) // the record carries the time the clock moves to
	s.record(nil, "advance", "clock +%s", d)
	if !s.ens.anyServing() {
		s.core.PassedTo(target) // nor does the container manager run: it runs on the leader
		s.settle()              // without a leader no session expires: the next leader restarts their deadlines
		return
	}
	s.core.SetNow(from)
	heard := map[int64]bool{}
	for _, c := range s.clients {
		if c.connected && !c.closing && c.session != 0 {
			heard[c.session] = true
		}
	}
	// While there are containers or TTL nodes, the clock stops at each expiry deadline and each pass with
	// something to delete before target, so that a container emptied by an expiry goes at the next pass
	// after it, as on a real server. Without them it moves to target at once.
	for {
		step := target
		if at, ok := s.core.NextReap(); ok && at < step {
			step = at
		}
		if dl, ok := s.nextDeadline(heard); ok && dl < step && s.core.ReaperActive() {
			step = max(dl, s.core.Now())
		}
		s.core.SetNow(step)
		s.expireUnheard(heard)
		if at, ok := s.core.NextReap(); ok && at <= s.core.Now() {
			s.reap()
		}
		s.core.PassedTo(s.core.Now())
		if step == target {
			break
		}
	}
	s.settle()
}

// sessionDeadline is when a session not heard from since lastHeard expires: its timeout rounded up to the next
// tick, as ZooKeeper's expiry queue does.
func (s *Server) sessionDeadline(sess core.SessionInfo) int64 {
	tick := s.cfg.tick.Milliseconds()
	return (sess.LastHeard+sess.Timeout.Milliseconds())/tick*tick + tick
}

// nextDeadline returns the earliest expiry deadline of the sessions not in heard.
func (s *Server) nextDeadline(heard map[int64]bool) (int64, bool) {
	best, ok := int64(0), false
	for _, id := range s.core.SessionIDs() {
		sess, _ := s.core.Session(id)
		if dl := s.sessionDeadline(sess); !heard[id] && (!ok || dl < best) {
			best, ok = dl, true
		}
	}
	return best, ok
}

// expireUnheard brings the sessions in heard up to date and expires, in id order, the others whose deadline
// has passed.
func (s *Server) expireUnheard(heard map[int64]bool) {
	for _, id := range s.core.SessionIDs() {
		if heard[id] {
			s.heard(id)
			continue
		}
		if sess, ok := s.core.Session(id); ok && s.core.Now() >= s.sessionDeadline(sess) {
			s.expire(id)
		}
	}
}

// reap runs a pass of the container manager and sends its watch events.
func (s *Server) reap() {
	deleted, notes := s.core.Reap()
	for i, p := range deleted {
		s.record(nil, "reap", "container manager deleted %s zxid=%d", p, s.core.Zxid()-int64(len(deleted)-1-i))
	}
	s.route(notes)
}

// Now returns the virtual clock's time.
func (s *Server) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.UnixMilli(s.core.Now()).UTC()
}

// Dump renders the server's whole state — every node with its data and stat, the sessions and the watches —
// sorted, one item per line, so that equal states give equal text.
func (s *Server) Dump() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "time %s\n", fmtElapsed(time.Duration(s.core.Now()-s.cfg.start.UnixMilli())*time.Millisecond))
	s.core.Dump(&b)
	return b.String()
}

// SetSequence sets the counter the next sequential child of path is numbered from (the parent's cversion).
// It is not a ZooKeeper operation: it lets tests reach the int32 wrap-around of sequence numbers, which a real
// server reaches only after 2^31 changes to the children.
func (s *Server) SetSequence(path string, next int32) error {
	if why := core.PathProblem(path, false); why != "" {
		return fmt.Errorf("model: SetSequence: path %q %s: %w", path, why, zk.ErrInvalidPath)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.core.SetSequence(path, next); err != nil {
		return fmt.Errorf("model: SetSequence %s: %w", path, err)
	}
	return nil
}

// settle, with the default transport, runs everything that can run: every sent request is applied and every
// queued reply and event delivered, and a dropped connection is re-established at once, as go-zookeeper does.
func (s *Server) settle() {
	if s.cfg.manual {
		return
	}
	for progress := true; progress; {
		progress = false
		for _, c := range s.clients {
			for c.connected && !c.closing && len(c.sent) > 0 {
				s.apply(c)
				progress = true
			}
			for len(c.outbox) > 0 {
				s.deliver(c)
				progress = true
			}
			if (!c.connected && !c.closed && !c.wireClient && s.ens.anyServing()) || c.connecting != nil {
				s.reconnect(c)
				progress = true
			}
		}
	}
}

// --- steps --------------------------------------------------------------------------------------------------

// StepKind names one kind of transport step.
type StepKind uint8

const (
	// Apply: the server executes the client's oldest request not yet executed.
	Apply StepKind = iota + 1
	// Deliver: the client receives its oldest reply or watch event not yet received.
	Deliver
	// Reconnect: a disconnected client connects again (and learns whether its session survived). For a wire
	// client, which dials by itself, the server answers its waiting connect request.
	Reconnect
	// LoseRequest: the connection drops before the client's oldest unexecuted request reaches the server; it
	// and every later request are not executed and fail with zk.ErrConnectionClosed.
	LoseRequest
	// LoseReply: the connection drops before the client's oldest reply arrives; the request was executed but
	// its caller (and every later one) gets zk.ErrConnectionClosed.
	LoseReply
	// Disconnect: the connection drops, losing whatever was in flight either way.
	Disconnect
	// ExpireSession: the server expires the client's session.
	ExpireSession
	// StopServer: server Step.Server of the ensemble stops (a fault; see Server.StopServer).
	StopServer
	// StartServer: the stopped server Step.Server starts again (progress; see Server.StartServer).
	StartServer
)

var stepNames = [...]string{Apply: "apply", Deliver: "deliver", Reconnect: "reconnect", LoseRequest: "lose-request", LoseReply: "lose-reply", Disconnect: "disconnect", ExpireSession: "expire", StopServer: "stop", StartServer: "start"}

// String returns the step kind's name, as used in traces.
func (k StepKind) String() string {
	if int(k) < len(stepNames) && stepNames[k] != "" {
		return stepNames[k]
	}
	return fmt.Sprintf("StepKind(%d)", k)
}

// ParseStepKind is the inverse of StepKind.String.
func ParseStepKind(name string) (StepKind, error) {
	for k, n := range stepNames {
		if n != "" && n == name {
			return StepKind(k), nil
		}
	}
	return 0, fmt.Errorf("model: unknown step kind %q (want one of apply, deliver, reconnect, lose-request, lose-reply, disconnect, expire, stop, start)", name)
}

// Step is one transport step for one client, or a step of one server of the ensemble.
type Step struct {
	Kind   StepKind
	Client int // the client's ClientID (not for StopServer and StartServer)
	Server int // for StopServer and StartServer: the server, 0 to Members()-1
}

// String renders the step, e.g. "apply c2", "stop s1".
func (st Step) String() string {
	if st.Kind == StopServer || st.Kind == StartServer {
		return fmt.Sprintf("%s s%d", st.Kind, st.Server)
	}
	return fmt.Sprintf("%s c%d", st.Kind, st.Client)
}

// flushOutgoing moves what clients issued since the scheduler last looked into their queues: per client,
// sorted by the requests' text (they were issued concurrently, so any order is one the client could see),
// which keeps runs with several goroutines per client deterministic.
//
// A wire client's requests arrive in the order of its connection's byte stream, which they keep; they join
// its queue here too, so that what readers decoded meanwhile is recorded in client order, not in the order
// the reader goroutines happened to run.
func (s *Server) flushOutgoing() {
	for _, c := range s.clients {
		if c.wireClient {
			s.flushWire(c)
			continue
		}
		if len(c.outgoing) == 0 {
			continue
		}
		slices.SortStableFunc(c.outgoing, func(a, b *call) int { return strings.Compare(a.String(), b.String()) })
		for _, cl := range c.outgoing {
			if c.connected {
				c.sent = append(c.sent, cl)
			} else {
				c.queued = append(c.queued, cl)
			}
			if s.cfg.observer != nil {
				s.recordText(c, "send", cl.String())
			}
		}
		c.outgoing = c.outgoing[:0]
	}
}

// Pending returns the steps that make progress — Apply, Deliver and Reconnect, in client order, then
// StartServer for each stopped server — that can be taken now. Taking only these, in any order, until none
// is left, is a fault-free run.
func (s *Server) Pending() []Step { return s.AppendPending(nil) }

// AppendPending appends the steps Pending returns to dst and returns the extended slice: a scheduler that
// asks at every decision can reuse one buffer.
func (s *Server) AppendPending(dst []Step) []Step {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushOutgoing()
	for _, c := range s.clients {
		for _, k := range [...]StepKind{Apply, Deliver, Reconnect} {
			if s.can(c, k) {
				dst = appendStep(dst, Step{Kind: k, Client: c.id})
			}
		}
	}
	for i, down := range s.ens.down {
		if down {
			dst = append(dst, Step{Kind: StartServer, Server: i})
		}
	}
	return dst
}

// Faults returns the fault steps — LoseRequest, LoseReply, Disconnect and ExpireSession in client order,
// then, in an ensemble (WithEnsemble), StopServer for each running server — that can be taken now.
func (s *Server) Faults() []Step { return s.AppendFaults(nil) }

// AppendFaults appends the steps Faults returns to dst and returns the extended slice, as AppendPending does.
func (s *Server) AppendFaults(dst []Step) []Step {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushOutgoing()
	for _, c := range s.clients {
		for _, k := range [...]StepKind{LoseRequest, LoseReply, Disconnect, ExpireSession} {
			if s.can(c, k) {
				dst = appendStep(dst, Step{Kind: k, Client: c.id})
			}
		}
	}
	if s.ens.size() > 1 {
		for i, down := range s.ens.down {
			if !down {
				dst = append(dst, Step{Kind: StopServer, Server: i})
			}
		}
	}
	return dst
}

// appendStep is append, starting with room for a few: a checker asks for the steps at every decision.
func appendStep(steps []Step, st Step) []Step {
	if steps == nil {
		steps = make([]Step, 0, 8)
	}
	return append(steps, st)
}

func (s *Server) can(c *Conn, k StepKind) bool {
	live := c.connected && !c.closing
	switch k {
	case Apply, LoseRequest:
		return live && len(c.sent) > 0
	case Deliver:
		return len(c.outbox) > 0
	case Reconnect:
		if c.wireClient { // a wire client dials by itself; the step lets the server answer its connect request
			return c.connecting != nil
		}
		return !c.connected && !c.closed && s.ens.anyServing()
	case LoseReply:
		return live && len(c.outbox) > 0 && c.outbox[0].call != nil
	case Disconnect:
		return live
	case ExpireSession:
		_, ok := s.core.Session(c.session)
		return ok && !c.finished && s.ens.anyServing() // only a leader expires sessions
	}
	return false
}

// Do takes one step. It returns an error, and changes nothing, when the step cannot be taken now.
func (s *Server) Do(st Step) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushOutgoing()
	if st.Kind == StopServer || st.Kind == StartServer {
		return s.doServer(st)
	}
	if st.Client < 1 || st.Client > len(s.clients) {
		return fmt.Errorf("model: step %s: no client %d (clients are 1..%d)", st, st.Client, len(s.clients))
	}
	c := s.clients[st.Client-1]
	if !s.can(c, st.Kind) {
		return fmt.Errorf("model: step %s cannot be taken now (%s)", st, c.describe())
	}
	defer s.stepping()()
	switch st.Kind {
	case Apply:
		s.apply(c)
	case Deliver:
		s.deliver(c)
	case Reconnect:
		s.reconnect(c)
	case LoseRequest:
		s.record(c, "lose-request", "%s", c.sent[0])
		s.sever(c)
	case LoseReply:
		s.record(c, "lose-reply", "%s", c.outbox[0].call)
		s.sever(c)
	case Disconnect:
		s.record(c, "disconnect", "connection dropped")
		s.sever(c)
	case ExpireSession:
		s.expire(c.session)
	}
	s.settle()
	return nil
}

func (s *Server) apply(c *Conn) {
	cl := c.sent[0]
	c.sent = popFront(c.sent)
	s.heard(c.session)
	if cl.wire != nil {
		s.applyWire(c, cl)
		return
	}
	if (cl.req.Op == core.OpCreate || cl.req.Op == core.OpSetData || cl.req.Op == core.OpMulti) && cl.req.WireSize() > core.MaxPacket {
		s.record(c, "disconnect", "server dropped the connection: %s is a %d-byte packet, over jute.maxbuffer (%d)", cl.req.Op, cl.req.WireSize(), core.MaxPacket)
		c.sent = append([]*call{cl}, c.sent...)
		s.sever(c)
		return
	}
	res, notes := s.core.Apply(c.session, cl.req)
	s.noteRead(c.servedBy(), cl.req, res)
	if s.cfg.observer != nil {
		s.scratch = appendResult(append(append(s.scratch[:0], cl.String()...), " -> "...), cl.req, res)
		s.recordText(c, "apply", string(s.scratch))
	}
	// The server sends the notifications a transaction fires before its reply, to every session.
	s.route(notes)
	cl.rep.res = res // kept in the call until it is delivered, so that the queued item stays small
	c.outbox = append(c.outbox, outItem{call: cl})
	if cl.req.Op == core.OpCloseSession || cl.req.Op == core.OpAuth && res.Err != nil {
		// After a close, and after an auth packet it refuses, the server closes the connection.
		c.closing = true
		c.outbox = append(c.outbox, outItem{hangUp: true})
	}
}

func describeResult(r *core.Request, res core.Result) string {
	return string(appendResult(nil, r, res))
}

// appendResult appends describeResult's text to b.
func appendResult(b []byte, r *core.Request, res core.Result) []byte {
	switch {
	case r.Op == core.OpExists && res.Err == zk.ErrNoNode:
		b = append(b, "false"...) // not an error to the caller: exists says the node is not there
	case res.Err != nil && r.Op != core.OpMulti:
		b = fmt.Appendf(b, "error %q", res.Err)
	case r.Op == core.OpCreate || r.Op == core.OpSync:
		b = append(b, res.Path...)
	case r.Op == core.OpGetChildren: // fmt's "%v", without fmt: a checker's run renders many
		b = append(b, '[')
		for i, c := range res.Children {
			if i > 0 {
				b = append(b, ' ')
			}
			b = append(b, c...)
		}
		b = append(b, ']')
	case r.Op == core.OpGetData:
		b = fmt.Appendf(b, "%q version=%d", res.Data, res.Stat.Version)
	case r.Op == core.OpExists:
		b = strconv.AppendInt(append(b, "true version="...), int64(res.Stat.Version), 10)
		b = strconv.AppendInt(append(b, " czxid="...), res.Stat.Czxid, 10)
	case r.Op == core.OpSetData:
		b = strconv.AppendInt(append(b, "version="...), int64(res.Stat.Version), 10)
		b = strconv.AppendInt(append(b, " czxid="...), res.Stat.Czxid, 10)
	case r.Op == core.OpMulti:
		for i, m := range res.Multi {
			if i > 0 {
				b = append(b, ", "...)
			}
			if m.Error != nil {
				b = fmt.Appendf(b, "error %q", m.Error)
			} else if m.String != "" {
				b = append(b, m.String...)
			} else {
				b = append(b, "ok"...)
			}
		}
	default:
		b = append(b, "ok"...)
	}
	return strconv.AppendInt(append(b, " zxid="...), res.Zxid, 10)
}

// popFront removes a queue's first item and keeps its backing array, so that the queue's next appends reuse it
// instead of growing a fresh one (queues are short: shifting is cheaper than allocating).
func popFront[T any](q []T) []T {
	copy(q, q[1:])
	var zero T
	q[len(q)-1] = zero
	return q[:len(q)-1]
}

func (s *Server) deliver(c *Conn) {
	it := c.outbox[0]
	c.outbox = popFront(c.outbox)
	if c.wireClient {
		s.deliverWire(c, it)
		return
	}
	switch {
	case it.hangUp:
		s.record(c, "disconnect", "server closed the connection")
		s.sever(c)
	case it.drop:
		s.record(c, "disconnect", "the connection dropped: its server s%d stopped or stopped serving", c.member)
		s.sever(c)
	case it.call != nil:
		res := it.call.rep.res
		if res.Zxid > 0 {
			c.lastZxid = res.Zxid
		}
		ch := c.registerWatch(it.call.req, res.Err)
		c.rememberAuth(it.call.req, res.Err)
		if s.cfg.observer != nil {
			s.recordText(c, "reply", it.call.req.Op.String())
		}
		c.finish(it.call, res, ch)
	default:
		if s.cfg.observer != nil {
			s.recordText(c, "event", it.event.Type.String()+" "+it.event.Path)
		}
		c.sendEvent(it.event)
		c.notifyWatches(it.event)
	}
}

// sever drops c's connection: requests not yet executed are lost, replies not yet received are lost (both
// fail with zk.ErrConnectionClosed), undelivered watch events are lost (SetWatches brings them back on
// reconnect), and the session's timer starts.
func (s *Server) sever(c *Conn) {
	for _, cl := range c.sent {
		c.finish(cl, core.Result{Err: zk.ErrConnectionClosed}, nil)
	}
	for _, it := range c.outbox {
		if it.call != nil {
			c.finish(it.call, core.Result{Err: zk.ErrConnectionClosed}, nil)
		}
	}
	c.sent, c.outbox = nil, nil
	c.connected, c.closing = false, false
	if _, ok := s.core.Session(c.session); ok {
		s.heard(c.session)
		// ZooKeeper forgets a connection's watches when it closes (DataTree.removeCnxn); the client sets the
		// ones it knows of again on reconnection. A watch whose reply was lost must not survive.
		s.core.DropWatches(c.session)
	}
	if c.wireClient {
		s.unlink(c) // the client learns of it from the closed connection, and reconnects by itself
		return
	}
	c.setState(zk.StateDisconnected)
	if c.closed {
		c.teardown()
	}
}

// reconnect connects c again. If its session is alive, the session resumes: SetWatches re-registers the
// client's watches (firing those whose nodes changed meanwhile) and queued requests are sent. If the session
// has expired, c goes through go-zookeeper's sequence: StateExpired, EventNotWatching on every watch,
// StateDisconnected, then a new session.
func (s *Server) reconnect(c *Conn) {
	if c.wireClient {
		s.acceptConnect(c)
		return
	}
	c.member = s.ens.next(c.member + 1) // go-zookeeper moves on to the next server of its list
	c.setState(zk.StateConnecting)
	c.setState(zk.StateConnected)
	_, alive := s.core.Session(c.session)
	switch {
	case c.session == 0: // the previous connection learnt of an expiry: go-zookeeper opens a new session
		c.session = s.core.CreateSession(s.negotiate(c.timeout))
		c.lastZxid = 0
		c.connected = true
		s.resendAuth(c)
		c.setState(zk.StateHasSession)
		s.record(c, "reconnect", "new session %#x", c.session)
	case alive:
		s.heard(c.session)
		c.connected = true
		s.resendAuth(c)
		c.setState(zk.StateHasSession)
		data, exist, child := c.watchLists()
		persistent, recursive := c.persistentLists()
		_, notes := s.core.Apply(c.session, &core.Request{Op: core.OpSetWatches, Watches: &core.WatchesRequest{
			RelativeZxid: c.lastZxid, Data: data, Exist: exist, Child: child, Persistent: persistent, Recursive: recursive}})
		s.record(c, "reconnect", "session %#x resumed, %d watches re-set, %d fired", c.session, len(data)+len(exist)+len(child)-len(notes), len(notes))
		for _, n := range notes {
			c.outbox = append(c.outbox, outItem{event: n.Event})
		}
	default:
		// The server says the session is gone. go-zookeeper reports it, ends every watch and drops the
		// connection; its next connection (another Reconnect step) opens a new session, and only then are the
		// requests queued meanwhile sent.
		old := c.session
		c.setState(zk.StateExpired)
		c.invalidateWatches(zk.ErrSessionExpired)
		c.setState(zk.StateDisconnected)
		c.session = 0
		s.record(c, "reconnect", "session %#x had expired", old)
		return
	}
	c.sent = append(c.sent, c.queued...)
	c.queued = nil
}
