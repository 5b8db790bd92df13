package model

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"pgregory.net/rapid"

	"github.com/zkmodel/zkmodel/model/internal/core"
)

// The property test drives a server with random operations from several sessions — and, with the manual
// transport, random transport steps and faults — and checks after every action that the tree's invariants
// hold, then replays the same decisions on a fresh server and requires a byte-identical history.

type actionKind uint8

const (
	actCreate actionKind = iota
	actDelete
	actSet
	actExists
	actGet
	actChildren
	actMulti
	actSync
	actConnect
	actClose
	actExpire
	actAdvance
	actStep // manual transport only: one of Pending()+Faults(), by index
	numActionKinds
)

var actionNames = [...]string{"create", "delete", "set", "exists", "get", "children", "multi", "sync", "connect", "close", "expire", "advance", "step"}

// action is one decision, drawn before the run so that the same decisions can be replayed. Its fields are
// indexes and choices that the run interprets against the state it finds.
type action struct {
	kind    actionKind
	client  int
	path    int
	flags   int32
	version int32
	watch   bool
	big     bool // an oversized write
	fault   bool // a step: take a fault rather than progress
	n       int  // step index, advance amount, or the sub-operations of a multi
	ops     []action
}

func (a action) String() string {
	s := fmt.Sprintf("%s c%d path=%d flags=%d version=%d watch=%t n=%d", actionNames[a.kind], a.client, a.path, a.flags, a.version, a.watch, a.n)
	if a.big {
		s += " big"
	}
	if a.fault {
		s += " fault"
	}
	for _, op := range a.ops {
		s += " {" + op.String() + "}"
	}
	return s
}

// propPaths are the plain paths operations use; the sequential prefixes end in "s-" or "e-", which no plain
// name contains, so a child named like that was created sequentially.
var propPaths = []string{"/a", "/b", "/a/x", "/a/n", "/b/n", "/a/x/n", "/zookeeper/q"}
var propSeqPrefixes = []string{"/a/s-", "/b/s-", "/a/x/s-", "/a/n/e-", "/"}

// propFlags is weighted towards persistent nodes, so that the tree grows deep enough for watches to fire.
var propFlags = []int32{zk.FlagPersistent, zk.FlagPersistent, zk.FlagPersistent, zk.FlagEphemeral, zk.FlagSequence, zk.FlagEphemeralSequential, zk.FlagContainer, 7}

func drawAction(t *rapid.T, manual bool, depth int) action {
	maxKind := int(numActionKinds) - 1
	if !manual {
		maxKind = int(actStep) - 1
	}
	if depth > 0 {
		maxKind = int(actSet) // inside a multi: create, delete, set, and check (exists)
	}
	a := action{
		kind:    actionKind(rapid.IntRange(0, maxKind).Draw(t, "kind")),
		client:  rapid.IntRange(0, 3).Draw(t, "client"),
		path:    rapid.IntRange(0, 63).Draw(t, "path"),
		flags:   rapid.SampledFrom(propFlags).Draw(t, "flags"),
		version: rapid.Int32Range(-1, 2).Draw(t, "version"),
		watch:   rapid.Bool().Draw(t, "watch"),
		n:       rapid.IntRange(0, 40).Draw(t, "n"),
	}
	if manual && depth == 0 && rapid.IntRange(0, 1).Draw(t, "step") == 0 {
		a.kind = actStep // half the actions move the transport: a call needs two steps, a fault one
		a.fault = rapid.IntRange(0, 4).Draw(t, "fault") == 0
	}
	if depth > 0 && a.kind > actSet {
		a.kind = actExists // check
	}
	if a.kind == actCreate || a.kind == actSet {
		a.big = rapid.IntRange(0, 40).Draw(t, "big") == 0
	}
	if a.kind == actMulti {
		a.ops = rapid.SliceOfN(rapid.Custom(func(t *rapid.T) action { return drawAction(t, manual, depth+1) }), 0, 4).Draw(t, "ops")
		for i := range a.ops {
			if a.ops[i].n%2 == 0 {
				a.ops[i].path = a.path // ops on one path (delete then create, say) are where rollback gets hard
			}
		}
	}
	return a
}

// fataler is what the run needs from *testing.T and *rapid.T.
type fataler interface {
	Fatalf(format string, args ...any)
}

// propRun is one execution of a decision sequence.
type propRun struct {
	t       fataler
	srv     *Server
	manual  bool
	history strings.Builder

	clients  []*Conn
	events   []<-chan zk.Event
	inflight []chan outcome // manual transport: the call each client is waiting for
	calls    []string       // and what it is

	watches    []<-chan zk.Event
	watchOwner []int // the client index each watch channel belongs to
	fired      []bool
	// established counts each client's sessions established (StateHasSession on its session channel), and
	// replayed holds, per client, the watch events one more notification may repeat on its session channel
	// alone: on reconnection the server answers setWatches with one notification per list a path is in (a
	// deleted node's data watch and child watch: two NodeDeleted), as ZooKeeper's DataTree.setWatches does, and
	// go-zookeeper hands the first to every watch of the path and the second to the session channel alone.
	established map[int]int
	replayed    map[int]map[zk.Event]bool

	lastZxid    int64
	lastCreated string              // the path the last successful create returned
	cversions   map[string][2]int64 // path → {czxid, reported cversion}
	seqMax      map[string]int64    // "parent@czxid" → highest sequence number seen
	seqSeen     map[string]bool     // "child@czxid" of sequential children already seen
}

func runDecisions(t fataler, seed int64, manual bool, actions []action) string {
	r := &propRun{t: t, manual: manual, cversions: map[string][2]int64{}, seqMax: map[string]int64{}, seqSeen: map[string]bool{},
		established: map[int]int{}, replayed: map[int]map[zk.Event]bool{}}
	opts := []Option{WithSeed(seed), WithTickTime(200 * time.Millisecond), WithObserver(r.observe)}
	if manual {
		opts = append(opts, WithManualTransport())
	}
	r.srv = NewServer(opts...)
	r.connect()
	r.connect()
	for _, p := range []string{"/a", "/b"} {
		r.act(action{kind: actCreate, path: slices.Index(propPaths, p)})
		r.finish("setting up")
	}
	for i, a := range actions {
		fmt.Fprintf(&r.history, "#%d %s\n", i, a)
		r.act(a)
		r.collect()
		r.check(fmt.Sprintf("after action %d (%s)", i, a))
	}
	r.finish("finishing")
	r.history.WriteString(r.srv.Dump())
	return r.history.String()
}

// finish, with the manual transport, takes progress steps until none is left, so that every call returns.
func (r *propRun) finish(when string) {
	if !r.manual {
		r.collect()
		return
	}
	for range 100000 {
		p := r.srv.Pending()
		if len(p) == 0 {
			break
		}
		if err := r.srv.Do(p[0]); err != nil {
			r.t.Fatalf("Do(%s) while %s: %v", p[0], when, err)
		}
		r.collect()
		r.check(when + ", after " + p[0].String())
	}
	r.collect()
	for i, done := range r.inflight {
		if done != nil {
			r.t.Fatalf("client %d's %s never returned", i+1, r.calls[i])
		}
	}
}

func (r *propRun) connect() {
	c, ev, err := r.srv.Connect(time.Second)
	if err != nil {
		r.t.Fatalf("Connect: %v", err)
	}
	r.clients = append(r.clients, c)
	r.events = append(r.events, ev)
	r.inflight = append(r.inflight, nil)
	r.calls = append(r.calls, "")
}

// observe records every step and checks that zxids never go back, and that an applied write spends exactly
// one and a read none. It runs under the server's lock.
func (r *propRun) observe(rec Record) {
	fmt.Fprintf(&r.history, "%s\n", rec)
	z := r.srv.core.Zxid()
	if z < r.lastZxid {
		r.t.Fatalf("zxid went back from %d to %d at %s", r.lastZxid, z, rec)
	}
	if rec.Kind == "apply" {
		op := strings.TrimSuffix(strings.Fields(rec.Detail)[0], "W")
		want := r.lastZxid
		switch op {
		case "create", "delete", "set", "multi", "close":
			want++
		}
		if z != want {
			r.t.Fatalf("applying %q moved the zxid from %d to %d", rec.Detail, r.lastZxid, z)
		}
	}
	r.lastZxid = z
}

func (r *propRun) pathFor(a action) string {
	switch {
	case a.kind == actCreate && (a.flags == zk.FlagSequence || a.flags == zk.FlagEphemeralSequential):
		return propSeqPrefixes[a.path%len(propSeqPrefixes)]
	case a.path == 63:
		return "/bad/" // malformed: the client refuses it, the server (in a multi) too
	case a.path >= 48 && r.lastCreated != "" && a.kind != actCreate:
		// Often a sequential node, as recipes use them. Never for a create: a plain node named like a
		// sequential one would confuse the sequence check.
		return r.lastCreated
	}
	return propPaths[a.path%len(propPaths)]
}

func (r *propRun) data(a action) []byte {
	if a.big {
		return make([]byte, 1<<20)
	}
	return []byte(strconv.Itoa(a.n))
}

func (r *propRun) multiOp(a action) any {
	switch a.kind {
	case actCreate:
		return &zk.CreateRequest{Path: r.pathFor(a), Data: r.data(a), Acl: worldACL, Flags: a.flags}
	case actDelete:
		return &zk.DeleteRequest{Path: r.pathFor(a), Version: a.version}
	case actSet:
		return &zk.SetDataRequest{Path: r.pathFor(a), Data: r.data(a), Version: a.version}
	default:
		return &zk.CheckVersionRequest{Path: r.pathFor(a), Version: a.version}
	}
}

// call returns the client call an action makes, or nil for the other actions.
func (r *propRun) call(c *Conn, a action) func() outcome {
	p := r.pathFor(a)
	switch a.kind {
	case actCreate:
		return func() outcome { s, err := c.Create(p, r.data(a), a.flags, worldACL); return outcome{path: s, err: err} }
	case actDelete:
		return func() outcome { return outcome{err: c.Delete(p, a.version)} }
	case actSet:
		return func() outcome { st, err := c.Set(p, r.data(a), a.version); return outcome{stat: st, err: err} }
	case actExists:
		if a.watch {
			return bgWatch(c, callExistsW, p)
		}
		return func() outcome { ok, st, err := c.Exists(p); return outcome{ok: ok, stat: st, err: err} }
	case actGet:
		if a.watch {
			return bgWatch(c, callGetW, p)
		}
		return func() outcome { d, st, err := c.Get(p); return outcome{data: d, stat: st, err: err} }
	case actChildren:
		if a.watch {
			return bgWatch(c, callChildrenW, p)
		}
		return func() outcome { k, st, err := c.Children(p); return outcome{kids: k, stat: st, err: err} }
	case actMulti:
		ops := make([]any, len(a.ops))
		for i, op := range a.ops {
			ops[i] = r.multiOp(op)
		}
		return func() outcome { res, err := c.Multi(ops...); return outcome{multi: res, err: err} }
	case actSync:
		return func() outcome { s, err := c.Sync(p); return outcome{path: s, err: err} }
	}
	return nil
}

func (r *propRun) act(a action) {
	i := a.client % len(r.clients)
	c := r.clients[i]
	if call := r.call(c, a); call != nil {
		if !r.manual {
			r.record(i, a.kind.String(), call())
			return
		}
		if r.inflight[i] != nil {
			fmt.Fprintf(&r.history, "c%d busy\n", i+1)
			return
		}
		done := make(chan outcome, 1)
		go func() { done <- call() }()
		r.waitUntil(func() bool { return len(done) > 0 || r.busy(c) })
		r.inflight[i], r.calls[i] = done, a.kind.String()
		return
	}
	switch a.kind {
	case actConnect:
		if len(r.clients) < 4 {
			r.connect()
		}
	case actClose:
		c.Close()
	case actExpire:
		r.srv.Expire(c.SessionID())
	case actAdvance:
		r.srv.Advance(time.Duration(a.n) * 100 * time.Millisecond)
	case actStep:
		steps := r.srv.Pending()
		if faults := r.srv.Faults(); a.fault || len(steps) == 0 {
			steps = faults
		}
		if len(steps) == 0 {
			return
		}
		st := steps[a.n%len(steps)]
		if err := r.srv.Do(st); err != nil {
			r.t.Fatalf("Do(%s), offered by Pending/Faults: %v", st, err)
		}
	}
}

func (k actionKind) String() string { return actionNames[k] }

// busy reports whether c has a call that has not returned in its queues (with the manual transport, a client
// has at most one call of ours at a time).
func (r *propRun) busy(c *Conn) bool {
	r.srv.mu.Lock()
	defer r.srv.mu.Unlock()
	for _, cl := range c.outgoing {
		if !cl.over {
			return true
		}
	}
	for _, cl := range c.sent {
		if !cl.over {
			return true
		}
	}
	for _, cl := range c.queued {
		if !cl.over {
			return true
		}
	}
	for _, it := range c.outbox {
		if it.call != nil && !it.call.over {
			return true
		}
	}
	return false
}

func (r *propRun) waitUntil(cond func() bool) {
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			r.t.Fatalf("a call neither returned nor reached its client's queue")
		}
		runtime.Gosched()
	}
}

// collect records, in a fixed order, the calls that have returned and every event delivered since the last
// action, and checks that no watch channel delivers twice.
func (r *propRun) collect() {
	for i, done := range r.inflight {
		if done != nil && !r.busy(r.clients[i]) {
			var o outcome
			select {
			case o = <-done:
			case <-time.After(10 * time.Second):
				r.t.Fatalf("client %d's %s finished on the server but did not return", i+1, r.calls[i])
			}
			r.inflight[i] = nil
			r.record(i, r.calls[i], o)
		}
	}
	// Watch channels first, then session channels: every watch event a session channel carries must have
	// fired at least one of that client's watch channels (the server only notifies watches the client set).
	firedNow := map[int]map[zk.Event]bool{}
	for w, ch := range r.watches {
		select {
		case ev, ok := <-ch:
			if !ok {
				if !r.fired[w] {
					r.t.Fatalf("watch %d closed without an event", w)
				}
				continue
			}
			if r.fired[w] {
				r.t.Fatalf("watch %d delivered a second event %+v", w, ev)
			}
			r.fired[w] = true
			fmt.Fprintf(&r.history, "watch %d %+v\n", w, ev)
			if firedNow[r.watchOwner[w]] == nil {
				firedNow[r.watchOwner[w]] = map[zk.Event]bool{}
			}
			firedNow[r.watchOwner[w]][ev] = true
			if ev2, ok := <-ch; ok {
				r.t.Fatalf("watch %d delivered %+v and then %+v", w, ev, ev2)
			}
		default:
		}
	}
	for i, ch := range r.events {
		// After Close, a reply that was already on its way still arrives and registers its watch, as in
		// go-zookeeper, but the call has returned zk.ErrConnectionClosed without the channel: only an open
		// client's events can be matched with channels we hold.
		r.srv.mu.Lock()
		closed := r.clients[i].closed
		r.srv.mu.Unlock()
		for _, ev := range drain(ch) {
			fmt.Fprintf(&r.history, "c%d session-event %+v\n", i+1, ev)
			switch {
			case ev.Type == zk.EventSession && ev.State == zk.StateHasSession:
				r.established[i]++
				delete(r.replayed, i)
			case closed || ev.Type == zk.EventSession || ev.Type == zk.EventNotWatching:
			case firedNow[i][ev]:
				if r.established[i] > 1 { // a reconnection's replay may repeat it once
					if r.replayed[i] == nil {
						r.replayed[i] = map[zk.Event]bool{}
					}
					r.replayed[i][ev] = true
				}
			case r.replayed[i][ev]:
				delete(r.replayed[i], ev)
			default:
				r.t.Fatalf("client %d's session channel got %+v, which fired none of its watches", i+1, ev)
			}
		}
	}
}

func (r *propRun) record(client int, what string, o outcome) {
	if what == "create" && o.err == nil && o.path != "" {
		r.lastCreated = o.path
	}
	fmt.Fprintf(&r.history, "c%d %s -> path=%q data=%q ok=%t kids=%q err=%v", client+1, what, o.path, o.data, o.ok, o.kids, o.err)
	if o.stat != nil {
		fmt.Fprintf(&r.history, " stat=%+v", *o.stat)
	}
	for _, m := range o.multi {
		fmt.Fprintf(&r.history, " [%q %v", m.String, m.Error)
		if m.Stat != nil {
			fmt.Fprintf(&r.history, " %+v", *m.Stat)
		}
		r.history.WriteString("]")
	}
	if o.watch != nil {
		fmt.Fprintf(&r.history, " watch=%d", len(r.watches))
		r.watches = append(r.watches, o.watch)
		r.watchOwner = append(r.watchOwner, client)
		r.fired = append(r.fired, false)
	}
	r.history.WriteString("\n")
}

// check verifies the tree's invariants on the core.
func (r *propRun) check(when string) {
	r.srv.mu.Lock()
	defer r.srv.mu.Unlock()
	c := r.srv.core
	fail := func(format string, args ...any) {
		r.t.Fatalf("%s: %s\n%s", when, fmt.Sprintf(format, args...), r.dumpLocked())
	}
	if err := c.CheckInvariants(); err != nil {
		fail("%v", err)
	}
	for _, path := range c.Paths() {
		st, _ := c.Stat(path)
		cv := int64(st.Cversion)
		if prev, ok := r.cversions[path]; ok && prev[0] == st.Czxid && cv < prev[1] {
			fail("%s: reported cversion went back from %d to %d", path, prev[1], cv)
		}
		r.cversions[path] = [2]int64{st.Czxid, cv}
	}
	// Sequence numbers under one parent (one incarnation of it) only grow. Children that appeared in the same
	// action must have distinct numbers, all above every number seen before.
	type seqNote struct {
		key, path string
		num       int64
	}
	var news []seqNote
	for _, path := range c.Paths() {
		num, ok := seqNumber(path)
		if !ok {
			continue
		}
		st, _ := c.Stat(path)
		id := path + "@" + strconv.FormatInt(st.Czxid, 10)
		if r.seqSeen[id] {
			continue
		}
		r.seqSeen[id] = true
		parent := core.ParentOf(path)
		pst, _ := c.Stat(parent)
		news = append(news, seqNote{parent + "@" + strconv.FormatInt(pst.Czxid, 10), path, num})
	}
	slices.SortFunc(news, func(a, b seqNote) int {
		if a.key != b.key {
			return strings.Compare(a.key, b.key)
		}
		return int(a.num - b.num)
	})
	for i, s := range news {
		if i > 0 && news[i-1].key == s.key && news[i-1].num == s.num {
			fail("two new children under %s share sequence number %d", s.key, s.num)
		}
		if top, ok := r.seqMax[s.key]; ok && s.num <= top {
			fail("new sequential child %s numbered %d, not above %d already used under the same parent", s.path, s.num, top)
		}
	}
	for _, s := range news {
		if top, ok := r.seqMax[s.key]; !ok || s.num > top {
			r.seqMax[s.key] = s.num
		}
	}
}

// seqNumber returns the sequence number of a node created from one of propSeqPrefixes.
func seqNumber(path string) (int64, bool) {
	name := core.BaseName(path)
	switch {
	case strings.HasPrefix(name, "s-"), strings.HasPrefix(name, "e-"):
		name = name[2:]
	case core.ParentOf(path) != "/":
		return 0, false
	}
	if len(name) < 10 {
		return 0, false
	}
	num, err := strconv.ParseInt(name, 10, 64)
	return num, err == nil
}

func (r *propRun) dumpLocked() string {
	var b strings.Builder
	r.srv.core.Dump(&b)
	return b.String()
}

// TestPropertyInvariantsAndDeterminism runs random decision sequences, checks the invariants after every
// action, and requires two runs of the same decisions to give byte-identical histories.
func TestPropertyInvariantsAndDeterminism(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		seed := rapid.Int64().Draw(t, "seed")
		manual := rapid.Bool().Draw(t, "manual")
		actions := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) action { return drawAction(t, manual, 0) }), 30, 150).Draw(t, "actions")
		first := runDecisions(t, seed, manual, actions)
		second := runDecisions(t, seed, manual, actions)
		if first != second {
			t.Fatalf("the same decisions gave different histories:\n%s", firstDifference(first, second))
		}
	})
}

// firstDifference shows where two histories part.
func firstDifference(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return fmt.Sprintf("line %d:\n  first:  %s\n  second: %s", i+1, la[i], lb[i])
		}
	}
	return fmt.Sprintf("one history is longer (%d vs %d lines)", len(la), len(lb))
}
