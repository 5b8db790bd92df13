package model

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkmodel/zkmodel/internal/evqueue"
	"github.com/zkmodel/zkmodel/internal/watches"
	"github.com/zkmodel/zkmodel/model/internal/core"
)

// Conn is a client of a model Server. Its methods have the signatures of go-zookeeper's *zk.Conn and behave
// like them, down to what they return alongside an error, the watch channels (buffered, one event, then
// closed) and the session events; see the package documentation for the details.
type Conn struct {
	srv     *Server
	id      int
	timeout time.Duration // as requested; the server clamps it
	session int64
	state   zk.State
	events  chan zk.Event

	connected bool    // the connection is up
	closing   bool    // the server is closing the connection: it executes nothing more for it
	closed    bool    // Close was called
	finished  bool    // closed and torn down: the event channel is closed
	outgoing  []*call // manual transport: issued since the scheduler last looked, not yet in sent or queued
	sent      []*call
	queued    []*call // issued while disconnected; sent on reconnect
	outbox    []outItem
	lastZxid  int64
	watchers  watches.Table[chan zk.Event]
	creds     []authCred // accepted addAuths, sent again on every new connection

	member     int          // the ensemble's server it is (or was last) connected to
	wireClient bool         // a client on the wire protocol (wire.go): only the server's side of it lives here
	link       *wireLink    // its current connection, nil when it has none
	connecting *wireConnect // manual transport: a connect request waiting for a Reconnect step

	persistent watches.Table[*evqueue.Queue] // AddWatch's channels (pwatch.go)
	spareDone  []chan reply                  // reply channels of finished calls, for the next calls (do)
}

type call struct {
	req  *core.Request // &reqv for calls made by do
	reqv core.Request  // the request, in the same allocation as the call
	done chan reply    // made only when the caller has to wait: a call the default transport finishes at once needs none
	rep  reply         // the reply, once over
	over bool
	wire *wireCall // a request that came over the wire, with what the server answers
	text string    // the request's String, once asked for: its records name it when sent and when applied
}

// callPool recycles the calls the default transport finishes within do: the model's hottest allocation.
var callPool = sync.Pool{New: func() any { return new(call) }}

// String renders the call's request for traces.
func (cl *call) String() string {
	if cl.wire != nil {
		return cl.wire.text
	}
	if cl.text == "" {
		cl.text = cl.req.String()
	}
	return cl.text
}

type reply struct {
	res   core.Result
	watch <-chan zk.Event
}

// outItem is one thing the server has sent the client that has not arrived yet.
type outItem struct {
	call   *call    // a reply to this call (the reply itself waits in call.rep.res)
	event  zk.Event // or a watch event
	hangUp bool     // or the server closing the connection
	drop   bool     // or the connection dropping at once (its server stopped): what is queued behind is lost
}

// watchKey is one path's watches of one kind, in the client's tables (package watches).
type watchKey = watches.Key

// ClientID returns the client's number on its server: 1 for the first Connect, 2 for the second, and so on.
// Steps name clients by it.
func (c *Conn) ClientID() int { return c.id }

// SessionID returns the client's current session id. After an expiry it is the id of the new session.
func (c *Conn) SessionID() int64 {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	return c.session
}

// State returns the client's connection state, as the last session event reported it.
func (c *Conn) State() zk.State {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	return c.state
}

func (c *Conn) describe() string {
	return fmt.Sprintf("client %d: connected=%t closing=%t closed=%t outgoing=%d sent=%d outbox=%d queued=%d", c.id, c.connected, c.closing, c.closed, len(c.outgoing), len(c.sent), len(c.outbox), len(c.queued))
}

// setState records and announces a session state, as go-zookeeper's setState does.
func (c *Conn) setState(st zk.State) {
	c.state = st
	c.sendEvent(zk.Event{Type: zk.EventSession, State: st, Server: "model"})
	c.srv.recordText(c, "state", st.String())
}

// sendEvent offers ev to the session event channel, dropping it when the channel is full (as go-zookeeper does).
func (c *Conn) sendEvent(ev zk.Event) {
	if c.finished {
		return
	}
	select {
	case c.events <- ev:
	default:
	}
}

// finish completes a call once; later completions are ignored.
func (c *Conn) finish(cl *call, res core.Result, watch <-chan zk.Event) {
	if cl.over {
		return
	}
	cl.over = true
	cl.rep = reply{res, watch}
	if cl.done != nil {
		cl.done <- cl.rep
	}
}

// registerWatch adds the client-side watcher a successful watching read leaves, as go-zookeeper does when the
// reply arrives: GetW and ChildrenW on success, ExistsW on success (data) or ErrNoNode (exist).
func (c *Conn) registerWatch(r *core.Request, err error) <-chan zk.Event {
	if r.Op == core.OpAddWatch || r.Op == core.OpRemoveWatches {
		return c.registerPersistent(r, err)
	}
	if !r.Watch {
		return nil
	}
	var kind watches.Kind
	switch {
	case r.Op == core.OpGetData && err == nil, r.Op == core.OpExists && err == nil:
		kind = watches.Data
	case r.Op == core.OpExists && err == zk.ErrNoNode:
		kind = watches.Exist
	case r.Op == core.OpGetChildren && err == nil:
		kind = watches.Child
	default:
		return nil
	}
	ch := make(chan zk.Event, 1)
	c.watchers.Add(r.Path, kind, ch)
	return ch
}

// notifyWatches hands a watch event to every channel waiting for it, with go-zookeeper's dispatch table
// (watches.OneShot), and to the persistent watches it is for.
func (c *Conn) notifyWatches(ev zk.Event) {
	c.fireStandard(ev, ev.Path, watches.OneShot(ev.Type)...)
	c.notifyPersistent(ev)
}

// fireStandard hands ev to the standard (one-shot) watches of path of the kinds, closes their channels and
// forgets them.
func (c *Conn) fireStandard(ev zk.Event, path string, kinds ...watches.Kind) {
	for _, ch := range c.watchers.Take(path, kinds...) {
		ch <- ev
		close(ch)
	}
}

// invalidateWatches ends every watch with EventNotWatching carrying err, as go-zookeeper does on session
// expiry (zk.ErrSessionExpired) and on Close (zk.ErrClosing).
func (c *Conn) invalidateWatches(err error) {
	for _, k := range c.watchers.SortedKeys() {
		ev := zk.Event{Type: zk.EventNotWatching, State: zk.StateDisconnected, Path: k.Path, Err: err}
		c.sendEvent(ev)
		for _, ch := range c.watchers[k] {
			ch <- ev
			close(ch)
		}
	}
	c.watchers = watches.Table[chan zk.Event]{}
	c.endPersistent(err)
}

// watchLists returns the paths of the client's watches by kind, for SetWatches.
func (c *Conn) watchLists() (data, exist, child []string) {
	for _, k := range c.watchers.SortedKeys() {
		switch k.Kind {
		case watches.Data:
			data = append(data, k.Path)
		case watches.Exist:
			exist = append(exist, k.Path)
		case watches.Child:
			child = append(child, k.Path)
		}
	}
	return data, exist, child
}

// teardown finishes a closed client: go-zookeeper flushes its requests with ErrClosing, ends its watches and
// closes the event channel.
func (c *Conn) teardown() {
	if c.finished {
		return
	}
	for _, cl := range c.queued {
		c.finish(cl, core.Result{Err: zk.ErrClosing}, nil)
	}
	c.queued = nil
	c.invalidateWatches(zk.ErrClosing)
	c.srv.record(c, "close", "client closed")
	c.finished = true
	close(c.events)
}

// do sends a request and waits for its reply. Validation has already happened.
func (c *Conn) do(r *core.Request) (core.Result, <-chan zk.Event) {
	res, watch, _ := c.doContext(context.Background(), r)
	return res, watch
}

// doContext is do that stops waiting when ctx is done first, and then returns ctx's error as
// abandoned: the request goes on as sent, and its reply, when it comes, is dropped (finish sends it on the
// call's own buffered channel, which nothing reads).
func (c *Conn) doContext(ctx context.Context, r *core.Request) (res core.Result, watch <-chan zk.Event, abandoned error) {
	s := c.srv
	s.mu.Lock()
	if c.closed {
		s.mu.Unlock()
		return core.Result{Err: zk.ErrConnectionClosed}, nil, nil
	}
	if (r.Op == core.OpCreate || r.Op == core.OpSetData || r.Op == core.OpMulti) && r.WireSize() > core.ClientBuffer {
		s.mu.Unlock()
		return core.Result{Err: zk.ErrShortBuffer}, nil, nil
	}
	cl := callPool.Get().(*call)
	*cl = call{reqv: *r} // a copy, so that the caller's request need not escape to the heap
	cl.req = &cl.reqv
	if s.cfg.manual {
		// Goroutines of one client may send at the same moment; the scheduler puts what they sent in a
		// deterministic order when it next looks (flushOutgoing), so that runs replay exactly.
		c.outgoing = append(c.outgoing, cl)
	} else if c.connected {
		c.sent = append(c.sent, cl)
	} else {
		c.queued = append(c.queued, cl)
	}
	if s.cfg.observer != nil && !s.cfg.manual {
		s.recordText(c, "send", cl.String())
	}
	s.settle()
	if cl.over {
		rep := cl.rep
		if !s.cfg.manual {
			// Finished within settle by the default transport: nothing refers to the call any more (the
			// queues it passed through dropped it, and the observer's records are formatted when made), so
			// the next call may reuse it.
			*cl = call{}
			callPool.Put(cl)
		}
		s.mu.Unlock()
		return rep.res, rep.watch, nil
	}
	// Under the lock, so finish cannot have run in between. The channel is the client's own spare when it has
	// one: finish sends on it once, and once that is received nothing refers to it.
	if n := len(c.spareDone); n > 0 {
		cl.done, c.spareDone = c.spareDone[n-1], c.spareDone[:n-1]
	} else {
		cl.done = make(chan reply, 1)
	}
	s.mu.Unlock()
	select {
	case rep := <-cl.done:
		s.mu.Lock()
		c.spareDone = append(c.spareDone, cl.done)
		s.mu.Unlock()
		return rep.res, rep.watch, nil
	case <-ctx.Done(): // nil, which never fires, for context.Background
		return core.Result{}, nil, ctx.Err()
	}
}

// Close ends the client, as go-zookeeper's Close does: calls still waiting return zk.ErrConnectionClosed, a
// close request ends the session on the server (its ephemeral nodes go), then every watch receives
// EventNotWatching with zk.ErrClosing and the event channel is closed. Closing a disconnected client leaves
// its session to expire on the server. Close is idempotent.
func (c *Conn) Close() {
	s := c.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	for _, cl := range c.outgoing { // not sent yet: never will be
		c.finish(cl, core.Result{Err: zk.ErrConnectionClosed}, nil)
	}
	c.outgoing = nil
	for _, cl := range c.sent {
		c.finish(cl, core.Result{Err: zk.ErrConnectionClosed}, nil)
	}
	for _, it := range c.outbox {
		if it.call != nil {
			c.finish(it.call, core.Result{Err: zk.ErrConnectionClosed}, nil)
		}
	}
	for _, cl := range c.queued {
		c.finish(cl, core.Result{Err: zk.ErrConnectionClosed}, nil)
	}
	c.queued = nil
	if c.connected && !c.closing {
		cl := &call{req: &core.Request{Op: core.OpCloseSession}, over: true}
		c.sent = append(c.sent, cl)
		s.record(c, "send", "close")
	} else if !c.connected {
		c.teardown()
	}
	s.settle()
}

// --- the zk.Conn methods ---------------------------------------------------------------------------------

// Create creates a znode and returns its path (with the sequence suffix, for sequential nodes). flags is one
// of zk.FlagPersistent, zk.FlagEphemeral, zk.FlagSequence, zk.FlagEphemeralSequential and zk.FlagContainer
// (TTL modes need CreateTTL). It needs CREATE on the parent; acl is stored as ZooKeeper stores it (see SetACL)
// and enforced.
func (c *Conn) Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	return c.create(context.Background(), path, data, flags, acl)
}

func (c *Conn) create(ctx context.Context, path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	// go-zookeeper's order: unknown flags, then the path (a trailing / is fine for the sequential modes,
	// TTL included), then the refusal of TTL modes.
	m, err := clientCreateMode(flags)
	if err != nil {
		return "", err
	}
	if err := core.ValidatePath(path, m.sequential); err != nil {
		return "", err
	}
	if m.ttl > 0 {
		return "", fmt.Errorf("Create with TTL flag disallowed: %w", zk.ErrInvalidFlags)
	}
	res, _, abandoned := c.doContext(ctx, &core.Request{Op: core.OpCreate, Path: path, Data: data, Flags: flags, ACL: acl})
	if abandoned != nil {
		return "", abandoned
	}
	return res.Path, res.Err
}

// CreateContainer creates a container node (flag must be zk.FlagContainer), which the server's container
// manager deletes once it has had children and has none left; see WithContainerCheckInterval. It checks its
// arguments as go-zookeeper's does.
func (c *Conn) CreateContainer(path string, data []byte, flag int32, acl []zk.ACL) (string, error) {
	m, err := clientCreateMode(flag)
	if err != nil {
		return "", err
	}
	if err := core.ValidatePath(path, m.sequential); err != nil {
		return "", err
	}
	if !m.container {
		return "", fmt.Errorf("CreateContainer requires container flag: %w", zk.ErrInvalidFlags)
	}
	res, _ := c.do(&core.Request{Op: core.OpCreateContainer, Path: path, Data: data, Flags: flag, ACL: acl})
	return res.Path, res.Err
}

// CreateTTL creates a TTL node (flag zk.FlagTTL, or zk.FlagPersistentSequentialWithTTL for a sequential one),
// which the server's container manager deletes once it is childless and ttl has passed since its mtime. The
// server must enable extended types (WithExtendedTypes), or the create fails with ZooKeeper's UNIMPLEMENTED
// (-6); ttl is sent in whole milliseconds, and outside 1 ms to 2^40-1 ms it fails with zk.ErrBadArguments.
// It checks its arguments as go-zookeeper's does.
func (c *Conn) CreateTTL(path string, data []byte, flag int32, acl []zk.ACL, ttl time.Duration) (string, error) {
	m, err := clientCreateMode(flag)
	if err != nil {
		return "", err
	}
	if err := core.ValidatePath(path, m.sequential); err != nil {
		return "", err
	}
	if m.ttl == 0 {
		return "", fmt.Errorf("CreateTTL requires TTL flag: %w", zk.ErrInvalidFlags)
	}
	res, _ := c.do(&core.Request{Op: core.OpCreateTTL, Path: path, Data: data, Flags: flag, ACL: acl, TTL: ttl.Milliseconds()})
	return res.Path, res.Err
}

// clientCreateMode parses flags as go-zookeeper does before it sends a create: an unknown value fails with
// go-zookeeper's own words; ttl is 1 for the TTL modes.
// clientMode is what go-zookeeper makes of a create's flags before sending it.
type clientMode struct {
	ephemeral, sequential, container bool
	ttl                              int64 // > 0: a TTL mode
}

func clientCreateMode(flags int32) (clientMode, error) {
	switch flags {
	case zk.FlagPersistent:
		return clientMode{}, nil
	case zk.FlagEphemeral:
		return clientMode{ephemeral: true}, nil
	case zk.FlagSequence:
		return clientMode{sequential: true}, nil
	case zk.FlagEphemeralSequential:
		return clientMode{ephemeral: true, sequential: true}, nil
	case zk.FlagContainer:
		return clientMode{container: true}, nil
	case zk.FlagTTL:
		return clientMode{ttl: 1}, nil
	case zk.FlagPersistentSequentialWithTTL:
		return clientMode{sequential: true, ttl: 1}, nil
	}
	// go-zookeeper's own words, wrapping no sentinel; kept so that code behaves the same on both.
	return clientMode{}, fmt.Errorf("invalid flag value: [%v]", flags)
}

// Delete deletes a znode if its version matches (-1 matches any).
func (c *Conn) Delete(path string, version int32) error {
	return c.delete(context.Background(), path, version)
}

func (c *Conn) delete(ctx context.Context, path string, version int32) error {
	if err := core.ValidatePath(path, false); err != nil {
		return err
	}
	res, _, abandoned := c.doContext(ctx, &core.Request{Op: core.OpDelete, Path: path, Version: version})
	if abandoned != nil {
		return abandoned
	}
	return res.Err
}

// Exists reports whether a znode exists, with its stat (zero when it does not).
func (c *Conn) Exists(path string) (bool, *zk.Stat, error) {
	if err := core.ValidatePath(path, false); err != nil {
		return false, nil, err
	}
	res, _ := c.do(&core.Request{Op: core.OpExists, Path: path})
	return existsResult(res)
}

func existsResult(res core.Result) (bool, *zk.Stat, error) {
	switch res.Err {
	case zk.ErrConnectionClosed:
		return false, nil, res.Err
	case zk.ErrNoNode:
		return false, &res.Stat, nil
	}
	return res.Err == nil, &res.Stat, res.Err
}

// ExistsW is Exists that also leaves a watch, whether or not the znode exists: NodeCreated fires it for a
// missing znode; NodeDataChanged or NodeDeleted for an existing one.
func (c *Conn) ExistsW(path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	return c.existsW(context.Background(), path)
}

func (c *Conn) existsW(ctx context.Context, path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	if err := core.ValidatePath(path, false); err != nil {
		return false, nil, nil, err
	}
	res, ch, abandoned := c.doContext(ctx, &core.Request{Op: core.OpExists, Path: path, Watch: true})
	if abandoned != nil {
		return false, nil, nil, abandoned
	}
	ok, st, err := existsResult(res)
	if err != nil {
		return false, nil, nil, err
	}
	return ok, st, ch, nil
}

// Get returns a znode's data and stat.
func (c *Conn) Get(path string) ([]byte, *zk.Stat, error) { return c.get(context.Background(), path) }

func (c *Conn) get(ctx context.Context, path string) ([]byte, *zk.Stat, error) {
	if err := core.ValidatePath(path, false); err != nil {
		return nil, nil, err
	}
	res, _, abandoned := c.doContext(ctx, &core.Request{Op: core.OpGetData, Path: path})
	if abandoned != nil {
		return nil, nil, abandoned
	}
	if res.Err == zk.ErrConnectionClosed {
		return nil, nil, res.Err
	}
	return res.Data, &res.Stat, res.Err
}

// GetW is Get that also leaves a data watch (none when the znode does not exist: the call fails with
// zk.ErrNoNode).
func (c *Conn) GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	if err := core.ValidatePath(path, false); err != nil {
		return nil, nil, nil, err
	}
	res, ch := c.do(&core.Request{Op: core.OpGetData, Path: path, Watch: true})
	if res.Err != nil {
		return nil, nil, nil, res.Err
	}
	return res.Data, &res.Stat, ch, nil
}

// Set replaces a znode's data if its version matches (-1 matches any) and returns the new stat.
func (c *Conn) Set(path string, data []byte, version int32) (*zk.Stat, error) {
	if err := core.ValidatePath(path, false); err != nil {
		return nil, err
	}
	res, _ := c.do(&core.Request{Op: core.OpSetData, Path: path, Data: data, Version: version})
	if res.Err == zk.ErrConnectionClosed {
		return nil, res.Err
	}
	return &res.Stat, res.Err
}

// Children returns a znode's children, in an order that is deterministic for the server's seed and
// deliberately not sorted (a real server returns them in hash-set order), with the znode's stat.
func (c *Conn) Children(path string) ([]string, *zk.Stat, error) {
	return c.children(context.Background(), path)
}

func (c *Conn) children(ctx context.Context, path string) ([]string, *zk.Stat, error) {
	if err := core.ValidatePath(path, false); err != nil {
		return nil, nil, err
	}
	res, _, abandoned := c.doContext(ctx, &core.Request{Op: core.OpGetChildren, Path: path})
	if abandoned != nil {
		return nil, nil, abandoned
	}
	if res.Err == zk.ErrConnectionClosed {
		return nil, nil, res.Err
	}
	return res.Children, &res.Stat, res.Err
}

// ChildrenW is Children that also leaves a child watch (none when the znode does not exist).
func (c *Conn) ChildrenW(path string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	if err := core.ValidatePath(path, false); err != nil {
		return nil, nil, nil, err
	}
	res, ch := c.do(&core.Request{Op: core.OpGetChildren, Path: path, Watch: true})
	if res.Err != nil {
		return nil, nil, nil, res.Err
	}
	return res.Children, &res.Stat, ch, nil
}

// Multi runs the operations (*zk.CreateRequest, *zk.DeleteRequest, *zk.SetDataRequest,
// *zk.CheckVersionRequest) as one transaction: all or none. It returns one response per operation and the
// first operation's error, as go-zookeeper does; like go-zookeeper it does not validate paths itself (the
// server does, with zk.ErrBadArguments). A successful multi holding a container create (zk.FlagContainer)
// returns zk.ErrAPIError and only the responses before that create, as go-zookeeper does: it cannot decode
// the rest of the reply, though the server applied every operation.
func (c *Conn) Multi(ops ...any) ([]zk.MultiResponse, error) {
	for _, op := range ops {
		switch op.(type) {
		case *zk.CreateRequest, *zk.DeleteRequest, *zk.SetDataRequest, *zk.CheckVersionRequest:
		default:
			return nil, fmt.Errorf("unknown operation type %T", op)
		}
	}
	res, _ := c.do(&core.Request{Op: core.OpMulti, Ops: multiOps(ops)})
	if res.Err == zk.ErrConnectionClosed {
		return nil, res.Err
	}
	if res.Err == nil {
		for i, op := range ops {
			if o, ok := op.(*zk.CreateRequest); ok && o.Flags == zk.FlagContainer {
				// The server applied the multi, but answers a container create with a result type
				// (createContainer) go-zookeeper cannot decode: it stops there with zk.ErrAPIError.
				return res.Multi[:i], zk.ErrAPIError
			}
		}
	}
	return res.Multi, res.Err
}

// Sync waits until the server has applied every write it had received before, and returns path.
func (c *Conn) Sync(path string) (string, error) {
	if err := core.ValidatePath(path, false); err != nil {
		return "", err
	}
	res, _ := c.do(&core.Request{Op: core.OpSync, Path: path})
	if res.Err == zk.ErrConnectionClosed {
		return "", res.Err
	}
	return res.Path, res.Err
}

// String names the client for traces and error messages.
func (c *Conn) String() string { return fmt.Sprintf("model client %d", c.id) }

// multiOps translates Multi's operations (go-zookeeper's request types, checked by Multi) into the core's.
func multiOps(ops []any) []core.Request {
	out := make([]core.Request, len(ops))
	for i, op := range ops {
		switch o := op.(type) {
		case *zk.CreateRequest:
			out[i] = core.Request{Op: core.OpCreate, Path: o.Path, Data: o.Data, Flags: o.Flags, ACL: o.Acl}
		case *zk.DeleteRequest:
			out[i] = core.Request{Op: core.OpDelete, Path: o.Path, Version: o.Version}
		case *zk.SetDataRequest:
			out[i] = core.Request{Op: core.OpSetData, Path: o.Path, Data: o.Data, Version: o.Version}
		case *zk.CheckVersionRequest:
			out[i] = core.Request{Op: core.OpCheck, Path: o.Path, Version: o.Version}
		}
	}
	return out
}
