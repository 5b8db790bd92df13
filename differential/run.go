package differential

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/conformance"
)

// Session is what both *zk.Conn and *model.Conn provide: the client calls the conformance suite exercises.
type Session = conformance.Conn

// Side is one ZooKeeper implementation under comparison. Run calls Begin, then Connect once per
// session, then Settle after every step, and End at the end.
type Side interface {
	// Name names the side in transcripts ("model", "real").
	Name() string
	// Begin prepares a fresh sequence: it creates the base node (and its missing ancestors) and
	// returns an admin session that the sequence's sessions do not know about, for reading the
	// final tree.
	Begin(ctx context.Context, base string) (Session, error)
	// Connect opens session number i (1-based). Run waits for StateHasSession on the channel.
	Connect(ctx context.Context, i int) (Session, <-chan zk.Event, error)
	// Settle returns once every event the steps so far fired has reached the live sessions'
	// channels.
	Settle(ctx context.Context, base string, live []Session) error
	// Sever drops session i's connection; the client reconnects by itself.
	Sever(ctx context.Context, i int) error
	// Pass lets time pass on the server's clock until the container manager has deleted every container and
	// TTL node it would delete: expiring are the TTL nodes that expire at once, containers the containers the
	// sequence created and did not delete itself (a server's stat does not tell them apart; see timed.go).
	Pass(ctx context.Context, expiring, containers []string) error
	// End removes what Begin created and closes the admin session.
	End(ctx context.Context, base string) error
}

// Step is what one op observed, normalised.
type Step struct {
	Op       Op
	Result   string   // the call's return values
	AtReturn []string // events the acting session had received when the call returned, in order
	Events   []string // events every session received by the time the step settled, sorted
	// Uncompared holds the session events of sessions that received too many in the step to compare
	// (see Transcript.Unsettled), for the reader.
	Uncompared []string
}

// Transcript is what a sequence observed on one side.
type Transcript struct {
	Side    string
	Base    string
	Connect []string // events of opening the sessions
	Steps   []Step
	Final   []string // the base's tree after the last op, one line per node
	Closing []string // events of closing the sessions still open at the end
	// Reaped counts the nodes under the base that went while time passed (Side.Pass): the container manager's
	// deletions.
	Reaped int
	// Unsettled counts the steps where a session channel may have dropped events (it received 6 or
	// more in one step, go-zookeeper's buffer size), so its session events were not compared.
	Unsettled int
}

// ErrHiccup marks a run that saw the real side misbehave on its own: a session lost its connection or
// its session when no op severed or closed it (an ensemble stalled on a loaded machine does that). Such
// a run says nothing about the model; run the sequence again.
var ErrHiccup = errors.New("the session was disconnected or expired by no op of the sequence")

// collectTimeout bounds every wait for the real side (a session to be established, a channel to
// close).
const collectTimeout = 15 * time.Second

// sessionTimeout is the session timeout every sequence asks for.
const sessionTimeout = 10 * time.Second

// openACL is the ACL of the nodes the sides create themselves (the bases and their ancestors).
var openACL = zk.WorldACL(zk.PermAll)

type watchChan struct {
	id         string // w<step>
	session    int
	ch         <-chan zk.Event
	persistent bool // AddWatch's: it stays after an event, until it is closed
}

type runner struct {
	side     Side
	admin    Session
	base     string
	baseline int64
	// timed renders zxids as placeholders that rankZxids turns into ranks once the run is over (see zxid).
	timed    bool
	sessions []Session // index i-1 is session i
	logs     []*eventLog
	closed   []bool
	watches  []watchChan
	owners   map[int64]string
	expiring []string // the TTL nodes created with tinyTTL, for Side.Pass
	// containers are the containers the sequence created, less those it deleted or saw go, for Side.Pass.
	containers map[string]bool
}

// Run executes seq on side under base and returns the transcript. An error is a failure of the side
// (a timeout, a lost ensemble), not a difference.
func Run(ctx context.Context, side Side, base string, seq Sequence) (tr *Transcript, err error) {
	admin, err := side.Begin(ctx, base)
	if err != nil {
		return nil, fmt.Errorf("%s: begin %s: %w", side.Name(), base, err)
	}
	defer func() {
		if endErr := side.End(context.WithoutCancel(ctx), base); endErr != nil && err == nil {
			err = fmt.Errorf("%s: end %s: %w", side.Name(), base, endErr)
		}
	}()
	_, st, err := admin.Exists(base)
	if err != nil {
		return nil, fmt.Errorf("%s: read base %s: %w", side.Name(), base, err)
	}
	r := &runner{side: side, admin: admin, base: base, baseline: st.Czxid, timed: seq.Timed, owners: map[int64]string{}, containers: map[string]bool{}}
	r.owners[admin.SessionID()] = "admin"
	defer r.stopLogs()
	defer func() {
		if err != nil {
			r.closeAll()
		}
	}()
	tr = &Transcript{Side: side.Name(), Base: base}
	if seq.Timed {
		defer rankZxids(tr)
	}
	for i := 1; i <= seq.Sessions; i++ {
		s, events, err := side.Connect(ctx, i)
		if err != nil {
			return nil, fmt.Errorf("%s: connect session %d: %w", side.Name(), i, err)
		}
		log := newEventLog(events)
		r.sessions = append(r.sessions, s)
		r.logs = append(r.logs, log)
		r.closed = append(r.closed, false)
		evs, err := log.waitFor(ctx, isHasSession)
		if err != nil {
			// No op of the sequence has run yet: a session the side cannot establish is the side's trouble.
			return nil, fmt.Errorf("%s: session %d: %w (%w)", side.Name(), i, err, ErrHiccup)
		}
		if !slices.Equal(evs, []zk.Event{
			{Type: zk.EventSession, State: zk.StateConnecting, Server: evs[0].Server},
			{Type: zk.EventSession, State: zk.StateConnected, Server: evs[0].Server},
			{Type: zk.EventSession, State: zk.StateHasSession, Server: evs[0].Server},
		}) {
			return nil, fmt.Errorf("%s: session %d connected with %v: %w", side.Name(), i, evs, ErrHiccup)
		}
		r.owners[s.SessionID()] = fmt.Sprintf("s%d", i)
		tr.Connect = append(tr.Connect, r.sessionEvents(i, evs)...)
	}
	for i, op := range seq.Ops {
		step, err := r.do(ctx, i+1, op, tr)
		if err != nil {
			return tr, fmt.Errorf("%s: step %d (%s): %w", side.Name(), i+1, op, err)
		}
		tr.Steps = append(tr.Steps, step)
	}
	// The admin session may sit on a server that has not applied the last writes yet.
	if err := side.Settle(ctx, base, []Session{admin}); err != nil {
		return tr, fmt.Errorf("%s: settle the admin session: %w", side.Name(), err)
	}
	if tr.Final, err = r.dumpTree(admin, base); err != nil {
		return tr, fmt.Errorf("%s: read the final tree: %w", side.Name(), err)
	}
	for i := 1; i <= seq.Sessions; i++ {
		if r.closed[i-1] {
			continue
		}
		step, err := r.do(ctx, 0, Op{Kind: Close, Session: i}, tr)
		if err != nil {
			return tr, fmt.Errorf("%s: close session %d: %w", side.Name(), i, err)
		}
		tr.Closing = append(tr.Closing, step.Events...)
	}
	return tr, nil
}

func isHasSession(ev zk.Event) bool {
	return ev.Type == zk.EventSession && ev.State == zk.StateHasSession
}

func (r *runner) stopLogs() {
	for _, l := range r.logs {
		l.stop()
	}
}

// closeAll closes the sessions still open, when a run ends early: a session left open would outlive the run
// and end (expire) in the middle of a later one.
func (r *runner) closeAll() {
	for i, s := range r.sessions {
		if !r.closed[i] {
			s.Close()
			r.closed[i] = true
		}
	}
}

func (r *runner) live() []Session {
	var out []Session
	for i, s := range r.sessions {
		if !r.closed[i] {
			out = append(out, s)
		}
	}
	return out
}

// do runs one op and collects what it observed.
func (r *runner) do(ctx context.Context, index int, op Op, tr *Transcript) (Step, error) {
	step := Step{Op: op}
	if op.Session < 1 || op.Session > len(r.sessions) {
		return step, fmt.Errorf("op names session %d; the sequence has sessions 1..%d", op.Session, len(r.sessions))
	}
	s := r.sessions[op.Session-1]
	log := r.logs[op.Session-1]
	perSession := make([][]zk.Event, len(r.sessions))
	var watchEvents []string
	switch op.Kind {
	case Close:
		sid := s.SessionID()
		s.Close()
		if !r.closed[op.Session-1] {
			r.closed[op.Session-1] = true
			evs, err := log.waitClosed(ctx)
			if err != nil {
				return step, err
			}
			perSession[op.Session-1] = evs
			if err := r.awaitEphemeralsGone(ctx, sid); err != nil {
				return step, err
			}
		}
		step.Result = "closed"
	case Sever:
		if r.closed[op.Session-1] {
			step.Result = "not connected"
			break
		}
		if err := r.side.Sever(ctx, op.Session); err != nil {
			return step, fmt.Errorf("sever: %w", err)
		}
		evs, err := log.waitFor(ctx, isHasSession)
		if err != nil {
			return step, notBack(err)
		}
		perSession[op.Session-1] = evs
		step.Result = "reconnected"
	default:
		step.Result = r.call(s, index, op)
		if op.Kind == AddAuth && step.Result == authRefused && !r.closed[op.Session-1] {
			// The server closed the connection after its answer; the client reconnects, as after a Sever.
			evs, err := log.waitFor(ctx, isHasSession)
			if err != nil {
				return step, notBack(err)
			}
			perSession[op.Session-1] = evs
			break
		}
		if !r.closed[op.Session-1] {
			at := log.flush()
			perSession[op.Session-1] = at
			step.AtReturn = r.sessionEvents(op.Session, at)
			step.AtReturn = append(step.AtReturn, r.pollWatches(op.Session)...)
		}
		if op.Pass || op.Kind == PassTime {
			if err := r.pass(ctx, tr); err != nil {
				return step, err
			}
		}
	}
	settleErr := r.side.Settle(ctx, r.base, r.live())
	for i, l := range r.logs {
		perSession[i] = append(perSession[i], l.flush()...)
	}
	if settleErr != nil {
		return step, lostConnection(fmt.Errorf("settle: %w", settleErr), perSession)
	}
	watchEvents = r.pollWatches(0)
	for i, evs := range perSession {
		if !reconnects(step) || i != op.Session-1 {
			for _, ev := range evs {
				if ev.Type == zk.EventSession {
					return step, fmt.Errorf("s%d received %s: %w", i+1, ev.State, ErrHiccup)
				}
			}
		} else if slices.ContainsFunc(evs, func(ev zk.Event) bool { return ev.State == zk.StateExpired }) {
			return step, fmt.Errorf("s%d's session expired: %w", i+1, ErrHiccup)
		}
		if len(evs) >= eventChanSize {
			tr.Unsettled++
			step.Events = append(step.Events, fmt.Sprintf("s%d received %d or more session events: not compared", i+1, eventChanSize))
			step.Uncompared = append(step.Uncompared, r.sessionEvents(i+1, evs)...)
			continue
		}
		step.Events = append(step.Events, r.sessionEvents(i+1, evs)...)
	}
	step.Events = append(step.Events, watchEvents...)
	slices.Sort(step.Events)
	return step, nil
}

// awaitEphemeralsGone returns once no node under the base is an ephemeral of session sid, as the admin session
// sees after a Sync. A client's Close may return before the ensemble has committed the session's end (a real
// server can close the connection before it answers closeSession), and until it has, another session's Sync
// does not order the deletions, and their events, before the step settles. A session that owned no ephemeral
// leaves nothing for the others to see.
func (r *runner) awaitEphemeralsGone(ctx context.Context, sid int64) error {
	if sid == 0 {
		return nil // no session, no ephemerals (and 0 is every persistent node's owner)
	}
	ctx, cancel := context.WithTimeout(ctx, collectTimeout)
	defer cancel()
	for {
		if _, err := r.admin.Sync(r.base); err != nil {
			return fmt.Errorf("sync %s after a close: %w", r.base, err)
		}
		left, err := ephemeralsOf(r.admin, r.base, sid)
		if err != nil {
			return err
		}
		if len(left) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the closed session %#x still owns %v (%w)", sid, left, ErrHiccup)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// ephemeralsOf returns the nodes at and below p whose ephemeral owner is sid, tolerating nodes that go meanwhile.
func ephemeralsOf(admin Session, p string, sid int64) ([]string, error) {
	ok, st, err := admin.Exists(p)
	if err != nil {
		return nil, fmt.Errorf("exists %s: %w", p, err)
	}
	if !ok {
		return nil, nil
	}
	var out []string
	if st.EphemeralOwner == sid {
		out = append(out, p)
	}
	if st.NumChildren == 0 {
		return out, nil
	}
	children, _, err := admin.Children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("children of %s: %w", p, err)
	}
	slices.Sort(children)
	for _, c := range children {
		below, err := ephemeralsOf(admin, p+"/"+c, sid)
		if err != nil {
			return nil, err
		}
		out = append(out, below...)
	}
	return out, nil
}

// notBack marks err, a wait for a session to reconnect after its connection was cut on purpose, as
// ErrHiccup: a server that does not take the session back in time is the side's trouble.
func notBack(err error) error {
	return fmt.Errorf("the session did not come back: %w (%w)", err, ErrHiccup)
}

// lostConnection returns err marked as ErrHiccup when a session saw its connection go (seen holds each
// session's events of the step): a wait that then fails says the server did not take the session back in
// time, which is the side's trouble and not a difference. Otherwise it returns err as it is.
func lostConnection(err error, seen [][]zk.Event) error {
	for i, evs := range seen {
		for _, ev := range evs {
			if ev.Type == zk.EventSession && (ev.State == zk.StateDisconnected || ev.State == zk.StateExpired) {
				return fmt.Errorf("%w, after s%d received %s (%w)", err, i+1, ev.State, ErrHiccup)
			}
		}
	}
	return err
}

// pass lets time pass on the side and counts the nodes that went meanwhile.
func (r *runner) pass(ctx context.Context, tr *Transcript) error {
	before, err := countNodes(r.admin, r.base)
	if err != nil {
		return err
	}
	if err := r.side.Pass(ctx, r.expiring, slices.Sorted(maps.Keys(r.containers))); err != nil {
		return fmt.Errorf("let time pass: %w", err)
	}
	after, err := countNodes(r.admin, r.base)
	tr.Reaped += before - after
	r.expiring = nil
	for p := range r.containers {
		ok, _, err := r.admin.Exists(p)
		if err != nil {
			return fmt.Errorf("exists %s: %w", p, err)
		}
		if !ok {
			delete(r.containers, p)
		}
	}
	return err
}

// countNodes counts the nodes of the tree at p.
func countNodes(s Session, p string) (int, error) {
	children, _, err := s.Children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("children of %s: %w", p, err)
	}
	n := 1
	for _, c := range children {
		m, err := countNodes(s, p+"/"+c)
		if err != nil {
			return 0, err
		}
		n += m
	}
	return n, nil
}

// reconnects reports whether the step's op cost its session the connection: a Close, a Sever, an addAuth the
// server refused.
func reconnects(step Step) bool {
	switch step.Op.Kind {
	case Close, Sever:
		return true
	case AddAuth:
		return step.Result == authRefused
	}
	return false
}

// authRefused is the result of an addAuth the server refused (and then closed the connection).
const authRefused = "err=ErrAuthFailed"

// eventChanSize is go-zookeeper's session channel buffer: a session that receives more in one burst
// loses the rest, on either side, depending on how fast the reader is.
const eventChanSize = 6

// pollWatches takes the events that arrived on open watch channels (of one session, or all when
// session is 0) and returns them rendered; a one-shot channel that fired is forgotten, a persistent one
// when it is closed.
func (r *runner) pollWatches(session int) []string {
	var out []string
	kept := r.watches[:0]
	for _, w := range r.watches {
		if session != 0 && w.session != session {
			kept = append(kept, w)
			continue
		}
		if w.persistent {
			if r.pollPersistent(w, &out) {
				kept = append(kept, w)
			}
			continue
		}
		select {
		case ev, ok := <-w.ch:
			if !ok {
				out = append(out, fmt.Sprintf("s%d %s closed without an event", w.session, w.id))
				continue
			}
			out = append(out, fmt.Sprintf("s%d %s %s", w.session, w.id, r.event(ev)))
		default:
			kept = append(kept, w)
		}
	}
	r.watches = kept
	return out
}

// pollPersistent takes every event waiting on a persistent watch's channel and reports whether it is still
// open.
func (r *runner) pollPersistent(w watchChan, out *[]string) bool {
	for {
		select {
		case ev, ok := <-w.ch:
			if !ok {
				*out = append(*out, fmt.Sprintf("s%d %s closed", w.session, w.id))
				return false
			}
			*out = append(*out, fmt.Sprintf("s%d %s %s", w.session, w.id, r.event(ev)))
		default:
			return true
		}
	}
}

func (r *runner) sessionEvents(session int, evs []zk.Event) []string {
	out := make([]string, 0, len(evs))
	for _, ev := range evs {
		out = append(out, fmt.Sprintf("s%d ev %s", session, r.event(ev)))
	}
	return out
}

// event renders an event without its Server field (the model's is "model", the real one's an address).
func (r *runner) event(ev zk.Event) string {
	var b strings.Builder
	b.WriteString(ev.Type.String())
	if ev.Type == zk.EventSession {
		b.WriteString(" " + ev.State.String())
	} else {
		b.WriteString(" " + r.path(ev.Path))
		if ev.State != zk.StateSyncConnected {
			b.WriteString(" state=" + ev.State.String())
		}
	}
	if ev.Err != nil {
		b.WriteString(" err=" + errName(ev.Err))
	}
	return b.String()
}

// path renders a path the server returned: under the base as ~/…, others as they are.
func (r *runner) path(p string) string {
	switch {
	case p == r.base:
		return "~"
	case strings.HasPrefix(p, r.base+"/"):
		return "~/" + p[len(r.base)+1:]
	}
	return p
}

func (r *runner) abs(p string) string {
	switch {
	case strings.HasPrefix(p, "/"):
		return p
	case p == "":
		return r.base
	}
	return r.base + "/" + p
}

func (r *runner) addWatch(session, index int, ch <-chan zk.Event) string {
	return r.keepWatch(watchChan{id: fmt.Sprintf("w%d", index), session: session, ch: ch})
}

func (r *runner) keepWatch(w watchChan) string {
	if w.ch == nil {
		return "watch=nil"
	}
	r.watches = append(r.watches, w)
	return "watch=" + w.id
}

// call makes the op's client call and renders what it returned.
func (r *runner) call(s Session, index int, op Op) string {
	p := r.abs(op.Path)
	switch op.Kind {
	case Create:
		got, err := s.Create(p, op.Data, op.Flags, aclOf(op)) // the container mode makes a persistent node here
		return fmt.Sprintf("path=%q err=%s", r.path(got), errName(err))
	case CreateTTL:
		got, err := s.CreateTTL(p, op.Data, op.Flags, aclOf(op), op.TTL)
		if err == nil && op.TTL == tinyTTL {
			r.expiring = append(r.expiring, got)
		}
		return fmt.Sprintf("path=%q err=%s", r.path(got), errName(err))
	case CreateContainer:
		got, err := s.CreateContainer(p, op.Data, op.Flags, aclOf(op))
		if err == nil {
			r.containers[got] = true
		}
		return fmt.Sprintf("path=%q err=%s", r.path(got), errName(err))
	case PassTime:
		return "time passed"
	case Delete:
		err := s.Delete(p, op.Version)
		if err == nil {
			delete(r.containers, p)
		}
		return "err=" + errName(err)
	case Set:
		st, err := s.Set(p, op.Data, op.Version)
		return fmt.Sprintf("stat=%s err=%s", r.stat(st), errName(err))
	case Exists:
		if op.Watch {
			ok, st, ch, err := s.ExistsW(p)
			return fmt.Sprintf("ok=%t stat=%s %s err=%s", ok, r.stat(st), r.addWatch(op.Session, index, ch), errName(err))
		}
		ok, st, err := s.Exists(p)
		return fmt.Sprintf("ok=%t stat=%s err=%s", ok, r.stat(st), errName(err))
	case Get:
		if op.Watch {
			data, st, ch, err := s.GetW(p)
			return fmt.Sprintf("data=%s stat=%s %s err=%s", showData(data), r.stat(st), r.addWatch(op.Session, index, ch), errName(err))
		}
		data, st, err := s.Get(p)
		return fmt.Sprintf("data=%s stat=%s err=%s", showData(data), r.stat(st), errName(err))
	case Children:
		if op.Watch {
			children, st, ch, err := s.ChildrenW(p)
			return fmt.Sprintf("children=%s stat=%s %s err=%s", showChildren(children), r.stat(st), r.addWatch(op.Session, index, ch), errName(err))
		}
		children, st, err := s.Children(p)
		return fmt.Sprintf("children=%s stat=%s err=%s", showChildren(children), r.stat(st), errName(err))
	case Sync:
		got, err := s.Sync(p)
		return fmt.Sprintf("path=%q err=%s", r.path(got), errName(err))
	case Multi:
		ops := make([]any, 0, len(op.Ops))
		for _, sub := range op.Ops {
			sp := r.abs(sub.Path)
			switch sub.Kind {
			case Create:
				ops = append(ops, &zk.CreateRequest{Path: sp, Data: sub.Data, Acl: aclOf(sub), Flags: sub.Flags})
			case Delete:
				ops = append(ops, &zk.DeleteRequest{Path: sp, Version: sub.Version})
			case Set:
				ops = append(ops, &zk.SetDataRequest{Path: sp, Data: sub.Data, Version: sub.Version})
			case Check:
				ops = append(ops, &zk.CheckVersionRequest{Path: sp, Version: sub.Version})
			}
		}
		res, err := s.Multi(ops...)
		// Applied: go-zookeeper answers ErrAPIError for a multi that succeeded with a container's create in it
		// (it cannot decode that result).
		if err == nil || errors.Is(err, zk.ErrAPIError) {
			for _, sub := range op.Ops {
				switch {
				case sub.Kind == Create && sub.Flags == zk.FlagContainer: // a multi's create makes a container
					r.containers[r.abs(sub.Path)] = true
				case sub.Kind == Delete:
					delete(r.containers, r.abs(sub.Path))
				}
			}
		}
		return fmt.Sprintf("%s err=%s", r.multi(res), errName(err))
	case AddAuth, GetACL, SetACL:
		a, ok := s.(conformance.ACLConn)
		if !ok {
			return fmt.Sprintf("%T cannot send %s", s, op.Kind)
		}
		switch op.Kind {
		case AddAuth:
			return "err=" + errName(a.AddAuth(op.Scheme, op.Data))
		case GetACL:
			acl, st, err := a.GetACL(p)
			return fmt.Sprintf("acl=%s stat=%s err=%s", showACL(acl), r.stat(st), errName(err))
		default:
			st, err := a.SetACL(p, aclOf(op), op.Version)
			return fmt.Sprintf("stat=%s err=%s", r.stat(st), errName(err))
		}
	case AddWatch, RemoveWatches, CheckWatches:
		w, ok := s.(conformance.WatchConn)
		if !ok {
			return fmt.Sprintf("%T cannot send %s", s, op.Kind)
		}
		switch op.Kind {
		case AddWatch:
			ch, err := w.AddWatch(p, op.Mode == 1)
			return fmt.Sprintf("%s err=%s", r.keepWatch(watchChan{id: fmt.Sprintf("w%d", index), session: op.Session, ch: ch, persistent: true}), errName(err))
		case RemoveWatches:
			return "err=" + errName(w.RemoveWatches(p, op.Mode))
		default:
			return "err=" + errName(w.CheckWatches(p, op.Mode))
		}
	}
	return fmt.Sprintf("op kind %s cannot be called", op.Kind)
}

func (r *runner) multi(res []zk.MultiResponse) string {
	if res == nil {
		return "responses=nil"
	}
	parts := make([]string, len(res))
	for i, m := range res {
		parts[i] = fmt.Sprintf("{path=%q stat=%s err=%s}", r.path(m.String), r.stat(m.Stat), errName(m.Error))
	}
	return "responses=[" + strings.Join(parts, " ") + "]"
}

func showChildren(children []string) string {
	if children == nil {
		return "nil"
	}
	sorted := slices.Clone(children)
	slices.Sort(sorted)
	return "[" + strings.Join(sorted, " ") + "]"
}

// zxid renders a zxid relative to the sequence's baseline, the base node's czxid: as its offset (B+3), or, in
// a timed sequence, as a placeholder for its rank among the zxids the run saw (B#2, see rankZxids).
func (r *runner) zxid(z int64) string {
	switch {
	case z == 0:
		return "0"
	case z < r.baseline:
		return "<B"
	case r.timed:
		return fmt.Sprintf("%c%d%c", zxidMark, z-r.baseline, zxidMark)
	}
	return fmt.Sprintf("B+%d", z-r.baseline)
}

// zxidMark brackets the offsets of a timed run's zxids until rankZxids replaces them.
const zxidMark = '\x00'

var zxidPlaceholder = regexp.MustCompile("\x00([0-9]+)\x00")

// rankZxids replaces the zxid placeholders of a timed run's transcript by ranks: B#0 is the baseline, B#1 the
// lowest zxid above it that the run saw, and so on. A timed sequence compares the order of zxids, not their
// distances: a real server's container manager spends a zxid on every delete it sends, and when a pass of
// its runs before the previous pass's delete is applied (a loaded machine), it sends that delete again and
// the server logs the failure as an error txn, with a zxid of its own (ContainerManager.checkContainers,
// PrepRequestProcessor's deleteContainer case). How many such retries a pass makes is a matter of timing;
// what the sequence observed of the tree is not. Untimed sequences keep the offsets, which also compare how
// many zxids each failed or successful write consumed.
func rankZxids(tr *Transcript) {
	offsets := map[int64]bool{0: true}
	visit := func(f func(*string)) {
		each := func(lines []string) {
			for i := range lines {
				f(&lines[i])
			}
		}
		each(tr.Connect)
		for i := range tr.Steps {
			st := &tr.Steps[i]
			f(&st.Result)
			each(st.AtReturn)
			each(st.Events)
			each(st.Uncompared)
		}
		each(tr.Final)
		each(tr.Closing)
	}
	visit(func(s *string) {
		for _, m := range zxidPlaceholder.FindAllStringSubmatch(*s, -1) {
			n, _ := strconv.ParseInt(m[1], 10, 64)
			offsets[n] = true
		}
	})
	sorted := slices.Sorted(maps.Keys(offsets))
	visit(func(s *string) {
		*s = zxidPlaceholder.ReplaceAllStringFunc(*s, func(m string) string {
			n, _ := strconv.ParseInt(m[1:len(m)-1], 10, 64)
			rank, _ := slices.BinarySearch(sorted, n)
			return fmt.Sprintf("B#%d", rank)
		})
	})
}

func showTime(ms int64) string {
	if ms == 0 {
		return "0"
	}
	return "T"
}

func (r *runner) owner(id int64) string {
	switch id {
	case 0:
		return "0"
	case containerOwner:
		return "container"
	}
	if name, ok := r.owners[id]; ok {
		return name
	}
	return "unknown-session"
}

// containerOwner is the ephemeralOwner ZooKeeper gives container nodes (Long.MIN_VALUE).
const containerOwner = -1 << 63

func (r *runner) stat(st *zk.Stat) string {
	if st == nil {
		return "nil"
	}
	if *st == (zk.Stat{}) {
		return "{}"
	}
	return fmt.Sprintf("{cz=%s mz=%s pz=%s ct=%s mt=%s v=%d cv=%d av=%d owner=%s len=%d nch=%d}",
		r.zxid(st.Czxid), r.zxid(st.Mzxid), r.zxid(st.Pzxid), showTime(st.Ctime), showTime(st.Mtime),
		st.Version, st.Cversion, st.Aversion, r.owner(st.EphemeralOwner), st.DataLength, st.NumChildren)
}

// sentinels are the go-zookeeper errors results are compared by.
var sentinels = []struct {
	name string
	err  error
}{
	{"ErrConnectionClosed", zk.ErrConnectionClosed}, {"ErrUnknown", zk.ErrUnknown}, {"ErrAPIError", zk.ErrAPIError},
	{"ErrNoNode", zk.ErrNoNode}, {"ErrNoAuth", zk.ErrNoAuth}, {"ErrBadVersion", zk.ErrBadVersion},
	{"ErrNoChildrenForEphemerals", zk.ErrNoChildrenForEphemerals}, {"ErrNodeExists", zk.ErrNodeExists},
	{"ErrNotEmpty", zk.ErrNotEmpty}, {"ErrSessionExpired", zk.ErrSessionExpired}, {"ErrInvalidACL", zk.ErrInvalidACL},
	{"ErrInvalidFlags", zk.ErrInvalidFlags}, {"ErrAuthFailed", zk.ErrAuthFailed}, {"ErrClosing", zk.ErrClosing},
	{"ErrNothing", zk.ErrNothing}, {"ErrSessionMoved", zk.ErrSessionMoved}, {"ErrReconfigDisabled", zk.ErrReconfigDisabled},
	{"ErrBadArguments", zk.ErrBadArguments}, {"ErrInvalidPath", zk.ErrInvalidPath}, {"ErrNoServer", zk.ErrNoServer},
	{"ErrShortBuffer", zk.ErrShortBuffer},
}

// errName names err by the go-zookeeper sentinel it matches, or quotes its message when it matches none.
func errName(err error) string {
	if err == nil {
		return "nil"
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return s.name
		}
	}
	return fmt.Sprintf("%q", err.Error())
}

// dumpTree reads every node under base (depth first, children sorted) with the admin session.
func (r *runner) dumpTree(admin Session, base string) ([]string, error) {
	var out []string
	var walk func(p string) error
	walk = func(p string) error {
		data, st, err := admin.Get(p)
		if p == base && errors.Is(err, zk.ErrNoNode) {
			out = append(out, "~ does not exist")
			return nil
		}
		if err != nil {
			return fmt.Errorf("get %s: %w", p, err)
		}
		children, _, err := admin.Children(p)
		if err != nil {
			return fmt.Errorf("children of %s: %w", p, err)
		}
		slices.Sort(children)
		line := fmt.Sprintf("%s data=%s stat=%s", r.path(p), showData(data), r.stat(st))
		if a, ok := admin.(conformance.ACLConn); ok {
			acl, _, err := a.GetACL(p)
			if err != nil {
				return fmt.Errorf("ACL of %s: %w", p, err)
			}
			if !isOpen(acl) {
				line += " acl=" + showACL(acl)
			}
		}
		out = append(out, line)
		for _, c := range children {
			if err := walk(p + "/" + c); err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk(base)
}
