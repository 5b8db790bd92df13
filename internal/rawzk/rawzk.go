// Package rawzk is a small ZooKeeper 3.8 client on the project's own wire encoding (jute), for the
// requests go-zookeeper v1.0.4 cannot send: addWatch (persistent and persistent-recursive watches, ZooKeeper
// 3.6+), removeWatches and checkWatches. It also has the ordinary requests (create, delete, exists, getData,
// setData, getChildren, multi, sync, addAuth, getACL, setACL) with go-zookeeper's signatures and return values, so that one session
// can mix both kinds of watch; conformance rules and differential tests use it on every target (the model
// through its wire front end, and a real server).
//
// It is internal: it exists to measure and test, not to be a ZooKeeper client for applications. It keeps one
// connection at a time, reconnects by itself when the connection drops (resuming the session and setting its
// watches again with setWatches2, as the Java client does), pings, and stops for good when the session
// expires (unlike go-zookeeper, it never opens a new session behind its caller's back).
//
// Every call takes a context. Errors are go-zookeeper's values (zk.ErrNoNode, …) for the codes go-zookeeper
// names, and go-zookeeper's rendering ("unknown error: -121") for the others, so that results compare equal
// with go-zookeeper's and the model's. Sync wraps a Conn for code written against go-zookeeper's method set.
package rawzk

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/internal/digestmd5"
	"github.com/zkmodel/zkmodel/internal/evqueue"
	"github.com/zkmodel/zkmodel/internal/watches"
	"github.com/zkmodel/zkmodel/jute"
)

// The types of watch removeWatches and checkWatches name (Java's Watcher.WatcherType).
const (
	WatcherChildren int32 = 1
	WatcherData     int32 = 2
	WatcherAny      int32 = 3
)

// The modes of addWatch (Java's AddWatchMode).
const (
	ModePersistent          int32 = 0
	ModePersistentRecursive int32 = 1
)

// Channel buffers: the session event channel's and a watch channel's. An event that does not fit waits for
// the reader; none is dropped.
const (
	eventBuffer = 256
	watchBuffer = 64
)

// ErrExpired is returned by every call once the server has expired the session (the Conn is then dead).
var ErrExpired = errors.New("rawzk: session expired")

// DialFunc opens a connection to addr; nil means TCP.
type DialFunc func(ctx context.Context, addr string) (net.Conn, error)

// cred is one addAuth the server accepted.
type cred struct {
	scheme string
	auth   []byte
}

// pending is a request sent and not yet answered.
type pending struct {
	op      int32
	done    chan result
	onReply func(code int32) // run in the read loop before any later notification is dispatched
}

type result struct {
	hdr  jute.ReplyHeader
	resp jute.Response
	err  error
}

// Conn is one ZooKeeper session. Its methods are safe for concurrent use.
type Conn struct {
	addrs   []string
	dial    DialFunc
	timeout time.Duration // negotiated

	writeMu sync.Mutex // serialises frames on nc

	mu        sync.Mutex
	nc        net.Conn // nil while disconnected
	up        chan struct{}
	next      int // index in addrs of the next server to try
	sessionID int64
	passwd    []byte
	lastZxid  int64
	xid       int32
	pend      map[int32]*pending
	watchers  watches.Table[*evqueue.Queue]
	state     zk.State
	closed    bool
	closing   bool // Close sent closeSession: a lost connection is not reconnected
	expired   bool
	creds     []cred // addAuths the server accepted, sent again on every new connection
	events    *evqueue.Queue
	stop      chan struct{}
	loops     sync.WaitGroup
}

// Connect opens a new session on one of addrs (tried in order) and returns once the server has granted it,
// with the session event channel: go-zookeeper's session events (StateConnecting, StateConnected,
// StateHasSession, StateDisconnected, StateExpired) and every watch notification the server sends, in order,
// never dropped. dial may be nil (TCP).
func Connect(ctx context.Context, addrs []string, sessionTimeout time.Duration, dial DialFunc) (*Conn, <-chan zk.Event, error) {
	if len(addrs) == 0 {
		return nil, nil, errors.New("rawzk: no server address given; pass at least one host:port")
	}
	if dial == nil {
		dial = func(ctx context.Context, addr string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		}
	}
	c := &Conn{
		addrs: slices.Clone(addrs), dial: dial, timeout: sessionTimeout,
		up: make(chan struct{}), pend: map[int32]*pending{}, watchers: watches.Table[*evqueue.Queue]{},
		events: evqueue.New(eventBuffer), stop: make(chan struct{}),
	}
	if err := c.connect(ctx); err != nil {
		c.events.Close()
		return nil, nil, err
	}
	c.loops.Add(1)
	go c.pinger()
	return c, c.events.C(), nil
}

// connect dials the servers in turn until one answers the connect request, then starts reading.
func (c *Conn) connect(ctx context.Context) error {
	var errs []error
	for range c.addrs {
		c.mu.Lock()
		addr := c.addrs[c.next]
		c.next = (c.next + 1) % len(c.addrs)
		c.mu.Unlock()
		c.emit(zk.Event{Type: zk.EventSession, State: zk.StateConnecting, Server: addr})
		err := c.handshake(ctx, addr)
		if err == nil || errors.Is(err, ErrExpired) {
			return err
		}
		errs = append(errs, err)
	}
	return fmt.Errorf("rawzk: no server of %v took the session: %w", c.addrs, errors.Join(errs...))
}

func (c *Conn) handshake(ctx context.Context, addr string) error {
	nc, err := c.dial(ctx, addr)
	if err != nil {
		return fmt.Errorf("dial %s: %w", addr, err)
	}
	c.mu.Lock()
	req := jute.ConnectRequest{LastZxidSeen: c.lastZxid, TimeOut: int32(c.timeout.Milliseconds()), SessionID: c.sessionID, Passwd: c.passwd, HasReadOnly: true}
	if req.Passwd == nil {
		req.Passwd = make([]byte, 16)
	}
	c.mu.Unlock()
	e := jute.NewEncoder(nil)
	req.Encode(e)
	if deadline, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(deadline)
	} else {
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	}
	if err := jute.WriteFrame(nc, e.Bytes()); err != nil {
		nc.Close()
		return fmt.Errorf("send connect request to %s: %w", addr, err)
	}
	body, err := jute.ReadFrame(nc, jute.MaxBuffer)
	if err != nil {
		nc.Close()
		return fmt.Errorf("read connect response from %s: %w", addr, err)
	}
	resp, err := jute.DecodeConnectResponse(body)
	if err != nil {
		nc.Close()
		return fmt.Errorf("connect response from %s: %w", addr, err)
	}
	_ = nc.SetDeadline(time.Time{})
	if resp.TimeOut <= 0 {
		nc.Close()
		c.expire()
		return ErrExpired
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		nc.Close()
		return zk.ErrConnectionClosed
	}
	resumed := c.sessionID != 0
	c.sessionID, c.passwd, c.timeout = resp.SessionID, resp.Passwd, time.Duration(resp.TimeOut)*time.Millisecond
	var sw *jute.Request
	if resumed {
		sw = c.setWatchesLocked()
	}
	if sw != nil {
		// Written before the connection is published: the server sees the watches again ahead of any request.
		if err := c.write(nc, sw); err != nil {
			c.mu.Unlock()
			nc.Close()
			return fmt.Errorf("send setWatches2 to %s: %w", addr, err)
		}
	}
	// The accepted credentials go again too, ahead of any request, as the Java client sends them (xid -4: the
	// read loop skips their replies). They were accepted once, and the schemes do not change.
	for _, cr := range c.creds {
		auth := &jute.Request{Header: jute.RequestHeader{Xid: jute.XidAuth, Type: jute.OpAuth}, Scheme: cr.scheme, Auth: cr.auth}
		if err := c.write(nc, auth); err != nil {
			c.mu.Unlock()
			nc.Close()
			return fmt.Errorf("send auth again to %s: %w", addr, err)
		}
	}
	c.nc = nc
	c.state = zk.StateHasSession
	close(c.up)
	c.loops.Add(1)
	go c.readLoop(nc)
	c.mu.Unlock()
	c.emit(zk.Event{Type: zk.EventSession, State: zk.StateConnected, Server: addr})
	c.emit(zk.Event{Type: zk.EventSession, State: zk.StateHasSession, Server: addr})
	return nil
}

// setWatchesLocked returns the setWatches2 request that sets the client's watches again, or nil if it has none.
func (c *Conn) setWatchesLocked() *jute.Request {
	r := &jute.Request{Header: jute.RequestHeader{Xid: jute.XidSetWatches, Type: jute.OpSetWatches2}, RelativeZxid: c.lastZxid,
		DataWatches: []string{}, ExistWatches: []string{}, ChildWatches: []string{}, PersistentWatches: []string{}, RecursiveWatches: []string{}}
	n := 0
	for k, qs := range c.watchers {
		if len(qs) == 0 {
			continue
		}
		n++
		switch k.Kind {
		case watches.Data:
			r.DataWatches = append(r.DataWatches, k.Path)
		case watches.Exist:
			r.ExistWatches = append(r.ExistWatches, k.Path)
		case watches.Child:
			r.ChildWatches = append(r.ChildWatches, k.Path)
		case watches.Persistent:
			r.PersistentWatches = append(r.PersistentWatches, k.Path)
		case watches.Recursive:
			r.RecursiveWatches = append(r.RecursiveWatches, k.Path)
		}
	}
	if n == 0 {
		return nil
	}
	for _, l := range [][]string{r.DataWatches, r.ExistWatches, r.ChildWatches, r.PersistentWatches, r.RecursiveWatches} {
		slices.Sort(l)
	}
	return r
}

func (c *Conn) write(nc net.Conn, r *jute.Request) error {
	e := jute.NewEncoder(nil)
	if err := jute.EncodeRequest(e, r); err != nil {
		return fmt.Errorf("rawzk: encode request type %d: %w", r.Header.Type, err)
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	return jute.WriteFrame(nc, e.Bytes())
}

// readLoop reads nc until it fails, then fails what was pending and reconnects.
func (c *Conn) readLoop(nc net.Conn) {
	defer c.loops.Done()
	for {
		body, err := jute.ReadFrame(nc, jute.MaxBuffer)
		if err != nil {
			c.lost(nc)
			return
		}
		d := jute.NewDecoder(body)
		h := jute.DecodeReplyHeader(d)
		if d.Err() != nil {
			c.lost(nc)
			return
		}
		switch h.Xid {
		case jute.XidNotification:
			ev := jute.DecodeWatcherEvent(d)
			c.notify(zk.Event{Type: zk.EventType(ev.Type), State: zk.State(ev.State), Path: ev.Path})
			continue
		case jute.XidPing, jute.XidSetWatches, jute.XidAuth:
			continue
		}
		c.mu.Lock()
		p := c.pend[h.Xid]
		delete(c.pend, h.Xid)
		if h.Zxid > 0 {
			c.lastZxid = h.Zxid
		}
		if p != nil && p.onReply != nil {
			p.onReply(h.Err)
		}
		c.mu.Unlock()
		if p == nil {
			continue
		}
		res := result{hdr: h}
		if h.Err != 0 {
			res.err = codeError(h.Err) // the body is not read, as go-zookeeper does not read it
		} else {
			res.resp, res.err = jute.DecodeResponse(d, p.op)
		}
		p.done <- res
	}
}

// lost handles the end of connection nc: pending calls fail with zk.ErrConnectionClosed, and unless the Conn
// is closed it reconnects.
func (c *Conn) lost(nc net.Conn) {
	nc.Close()
	c.mu.Lock()
	if c.nc != nc {
		c.mu.Unlock()
		return
	}
	c.nc = nil
	c.up = make(chan struct{})
	for xid, p := range c.pend {
		p.done <- result{err: zk.ErrConnectionClosed}
		delete(c.pend, xid)
	}
	closed := c.closed || c.closing
	if !closed {
		c.state = zk.StateDisconnected
	}
	c.mu.Unlock()
	if closed {
		return
	}
	c.emit(zk.Event{Type: zk.EventSession, State: zk.StateDisconnected})
	c.loops.Add(1)
	go c.reconnect()
}

func (c *Conn) reconnect() {
	defer c.loops.Done()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		err := c.connect(ctx)
		cancel()
		if err == nil || errors.Is(err, ErrExpired) {
			return
		}
		select {
		case <-c.stop:
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// expire marks the session expired: every watch ends with EventNotWatching and zk.ErrSessionExpired, as
// go-zookeeper ends them.
func (c *Conn) expire() {
	c.mu.Lock()
	c.expired, c.state = true, zk.StateExpired
	c.mu.Unlock()
	c.emit(zk.Event{Type: zk.EventSession, State: zk.StateExpired})
	c.endWatches(zk.ErrSessionExpired)
}

func (c *Conn) endWatches(err error) {
	c.mu.Lock()
	keys := c.watchers.SortedKeys()
	ended := c.watchers
	c.watchers = watches.Table[*evqueue.Queue]{}
	c.mu.Unlock()
	for _, k := range keys {
		ev := zk.Event{Type: zk.EventNotWatching, State: zk.StateDisconnected, Path: k.Path, Err: err}
		c.emit(ev)
		for _, q := range ended[k] {
			q.Push(ev)
			q.Close()
		}
	}
}

// notify hands a notification to the session event channel and to the watches it is for: the one-shot ones
// by go-zookeeper's table (they end), the persistent ones on the path, and, unless it is NodeChildrenChanged,
// the recursive ones on the path and its ancestors (these stay).
func (c *Conn) notify(ev zk.Event) {
	c.emit(ev)
	c.mu.Lock()
	fired := c.watchers.Take(ev.Path, watches.OneShot(ev.Type)...)
	kept := c.watchers.Lasting(ev)
	c.mu.Unlock()
	for _, q := range fired {
		q.Push(ev)
		q.Close()
	}
	for _, q := range kept {
		q.Push(ev)
	}
}

func (c *Conn) emit(ev zk.Event) { c.events.Push(ev) }

func (c *Conn) pinger() {
	defer c.loops.Done()
	for {
		c.mu.Lock()
		every := c.timeout / 3
		c.mu.Unlock()
		select {
		case <-c.stop:
			return
		case <-time.After(every):
		}
		c.mu.Lock()
		nc := c.nc
		c.mu.Unlock()
		if nc != nil {
			_ = c.write(nc, &jute.Request{Header: jute.RequestHeader{Xid: jute.XidPing, Type: jute.OpPing}})
		}
	}
}

// do sends r (its xid is set here) once the Conn is connected and waits for the reply. onReply, if not nil,
// runs in the read loop with the reply's code, before any notification that follows the reply is dispatched.
func (c *Conn) do(ctx context.Context, r jute.Request, onReply func(code int32)) (jute.ReplyHeader, jute.Response, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return jute.ReplyHeader{}, jute.Response{}, zk.ErrConnectionClosed
		}
		if c.expired {
			c.mu.Unlock()
			return jute.ReplyHeader{}, jute.Response{}, ErrExpired
		}
		if c.nc != nil {
			break
		}
		up := c.up
		c.mu.Unlock()
		select {
		case <-up:
		case <-ctx.Done():
			return jute.ReplyHeader{}, jute.Response{}, fmt.Errorf("rawzk: waiting for a connection: %w", ctx.Err())
		}
	}
	c.xid++
	r.Header.Xid = c.xid
	p := &pending{op: r.Header.Type, done: make(chan result, 1), onReply: onReply}
	c.pend[r.Header.Xid] = p
	nc := c.nc
	c.mu.Unlock()
	if err := c.write(nc, &r); err != nil {
		nc.Close() // the read loop fails the call
	}
	select {
	case res := <-p.done:
		return res.hdr, res.resp, res.err
	case <-ctx.Done():
		return jute.ReplyHeader{}, jute.Response{}, fmt.Errorf("rawzk: request type %d on %q: %w", r.Header.Type, r.Path, ctx.Err())
	}
}

// watch returns an onReply that adds a client-side watch of kind on path when the reply's code is one of ok.
func (c *Conn) watch(path string, kind watches.Kind, q **evqueue.Queue, ok ...int32) func(int32) {
	return func(code int32) {
		if slices.Contains(ok, code) {
			*q = evqueue.New(watchBuffer)
			c.watchers.Add(path, kind, *q)
		}
	}
}

// AddWatch sets a persistent watch on path (mode ModePersistent) or a persistent-recursive one
// (ModePersistentRecursive) and returns its channel, which receives every event the watch gets, in order,
// until removeWatches or the end of the session ends it (its last event is then EventNotWatching) and closes
// it. Other modes are sent as given, to see what a server answers.
func (c *Conn) AddWatch(ctx context.Context, path string, mode int32) (<-chan zk.Event, error) {
	kind := watches.Persistent
	if mode == ModePersistentRecursive {
		kind = watches.Recursive
	}
	var q *evqueue.Queue
	_, _, err := c.do(ctx, jute.Request{Header: jute.RequestHeader{Type: jute.OpAddWatch}, Path: path, Mode: mode}, func(code int32) {
		if code == 0 && (mode == ModePersistent || mode == ModePersistentRecursive) {
			c.watch(path, kind, &q, 0)(0)
		}
	})
	if err != nil {
		return nil, err
	}
	return q.C(), nil
}

// CheckWatches asks whether the session has a watch of type t (WatcherChildren, WatcherData, WatcherAny) on
// path: nil if it has, the server's error otherwise ("unknown error: -121", NoWatcher, if it has none).
func (c *Conn) CheckWatches(ctx context.Context, path string, t int32) error {
	_, _, err := c.do(ctx, jute.Request{Header: jute.RequestHeader{Type: jute.OpCheckWatches}, Path: path, Mode: t}, nil)
	return err
}

// RemoveWatches removes the session's watches of type t on path on the server. On success the client's
// channels for them end: each receives EventNotWatching (State StateSyncConnected, Err nil) and is closed —
// for WatcherChildren the child watches, for WatcherData the data and exist watches, for WatcherAny those and
// the persistent and recursive watches on path.
func (c *Conn) RemoveWatches(ctx context.Context, path string, t int32) error {
	var ended []*evqueue.Queue
	_, _, err := c.do(ctx, jute.Request{Header: jute.RequestHeader{Type: jute.OpRemoveWatches}, Path: path, Mode: t}, func(code int32) {
		if code != 0 {
			return
		}
		ended = c.watchers.Take(path, watches.Removed(t)...)
	})
	for _, q := range ended {
		q.Push(zk.Event{Type: zk.EventNotWatching, State: zk.StateSyncConnected, Path: path})
		q.Close()
	}
	return err
}

// AddAuth authenticates the session (auth, scheme and credentials as go-zookeeper's AddAuth sends them, e.g.
// "digest" and "user:password"). Credentials the server accepts are sent again on every new connection. A
// scheme the server does not know fails with zk.ErrAuthFailed, and the server then closes the connection; the
// Conn reconnects with its session.
func (c *Conn) AddAuth(ctx context.Context, scheme string, auth []byte) error {
	auth = slices.Clone(auth)
	_, _, err := c.do(ctx, jute.Request{Header: jute.RequestHeader{Type: jute.OpAuth}, Scheme: scheme, Auth: auth}, func(code int32) {
		if code == 0 {
			c.creds = append(c.creds, cred{scheme: scheme, auth: auth})
		}
	})
	return err
}

// SASL sends one SASL token (a sasl request; nil is a null buffer) and returns the server's token and the
// reply's zxid. A failed login is zk.ErrAuthFailed, after which the server closes the connection (the Conn
// reconnects with its session, without the SASL identity).
func (c *Conn) SASL(ctx context.Context, token []byte) ([]byte, int64, error) {
	h, r, err := c.do(ctx, jute.Request{Header: jute.RequestHeader{Type: jute.OpSASL}, Token: slices.Clone(token)}, nil)
	return r.Token, h.Zxid, err
}

// LoginDigestMD5 logs the connection in by SASL DIGEST-MD5 as user with password, as ZooKeeper's clients do:
// an empty first token, the response to the server's challenge, and a check of its rspauth. A wrong password
// is zk.ErrAuthFailed. The login lasts as long as the connection (the Conn does not repeat it).
func (c *Conn) LoginDigestMD5(ctx context.Context, user, password string) error {
	return loginDigestMD5(user, password, func(token []byte) ([]byte, error) {
		out, _, err := c.SASL(ctx, token)
		return out, err
	})
}

// loginDigestMD5 is a SASL DIGEST-MD5 login as user, each token sent by sasl.
func loginDigestMD5(user, password string, sasl func(token []byte) ([]byte, error)) error {
	challenge, err := sasl([]byte{})
	if err != nil {
		return fmt.Errorf("rawzk: SASL login as %s: %w", user, err)
	}
	response, err := digestmd5.Response(challenge, user, password, "rawzk-cnonce")
	if err != nil {
		return fmt.Errorf("rawzk: SASL login as %s: %w", user, err)
	}
	rspauth, err := sasl(response)
	if err != nil {
		return fmt.Errorf("rawzk: SASL login as %s: %w", user, err)
	}
	if !strings.HasPrefix(string(rspauth), "rspauth=") {
		return fmt.Errorf("rawzk: SASL login as %s: the server answered %q, want rspauth=…", user, rspauth)
	}
	return nil
}

// ConnectDigestMD5 connects as Connect does, then logs the connection in by SASL DIGEST-MD5 as user
// (LoginDigestMD5); on a failed login it closes the Conn.
func ConnectDigestMD5(ctx context.Context, addrs []string, sessionTimeout time.Duration, dial DialFunc, user, password string) (*Conn, <-chan zk.Event, error) {
	c, events, err := Connect(ctx, addrs, sessionTimeout, dial)
	if err != nil {
		return nil, nil, err
	}
	if err := c.LoginDigestMD5(ctx, user, password); err != nil {
		_ = c.Close(ctx)
		return nil, nil, err
	}
	return c, events, nil
}

// WhoAmI returns the identities the server holds for the connection, as "scheme:user" in the server's order.
func (c *Conn) WhoAmI(ctx context.Context) ([]string, error) {
	_, r, err := c.do(ctx, jute.Request{Header: jute.RequestHeader{Type: jute.OpWhoAmI}}, nil)
	var ids []string
	for _, ci := range r.Clients {
		ids = append(ids, ci.AuthScheme+":"+ci.User)
	}
	return ids, err
}

// GetACL returns a node's ACL and stat, as go-zookeeper's GetACL.
func (c *Conn) GetACL(ctx context.Context, path string) ([]zk.ACL, *zk.Stat, error) {
	_, r, err := c.do(ctx, jute.Request{Header: jute.RequestHeader{Type: jute.OpGetACL}, Path: path}, nil)
	if errors.Is(err, zk.ErrConnectionClosed) {
		return nil, nil, err
	}
	return r.ACL, &r.Stat, err
}

// SetACL replaces a node's ACL if its ACL version matches (-1 matches any), as go-zookeeper's SetACL.
func (c *Conn) SetACL(ctx context.Context, path string, acl []zk.ACL, version int32) (*zk.Stat, error) {
	_, r, err := c.do(ctx, jute.Request{Header: jute.RequestHeader{Type: jute.OpSetACL}, Path: path, ACL: nonNil(acl), Version: version}, nil)
	if errors.Is(err, zk.ErrConnectionClosed) {
		return nil, err
	}
	return &r.Stat, err
}

// IncrementalReconfig asks the ensemble to add the joining servers ("server.N=…" lines) and remove the leaving
// ids, from configuration version fromConfig (-1: any), as go-zookeeper's IncrementalReconfig; the stat is
// /zookeeper/config's after the change.
func (c *Conn) IncrementalReconfig(ctx context.Context, joining, leaving []string, fromConfig int64) (*zk.Stat, error) {
	// As go-zookeeper sends them: lists joined by commas, an absent one as an empty string.
	return c.reconfig(ctx, jute.Request{Header: jute.RequestHeader{Type: jute.OpReconfig}, CurConfigID: fromConfig,
		Joining: []byte(strings.Join(joining, ",")), Leaving: []byte(strings.Join(leaving, ","))})
}

// Reconfig asks the ensemble to replace its membership with members ("server.N=…" lines), from configuration
// version fromConfig (-1: any), as go-zookeeper's Reconfig.
func (c *Conn) Reconfig(ctx context.Context, members []string, fromConfig int64) (*zk.Stat, error) {
	return c.reconfig(ctx, jute.Request{Header: jute.RequestHeader{Type: jute.OpReconfig}, CurConfigID: fromConfig,
		NewMembers: []byte(strings.Join(members, ","))})
}

func (c *Conn) reconfig(ctx context.Context, r jute.Request) (*zk.Stat, error) {
	_, resp, err := c.do(ctx, r, nil)
	if err != nil {
		return nil, err
	}
	return &resp.Stat, nil
}

// The ordinary requests below return what go-zookeeper v1.0.4's methods return, down to the stat beside an
// error, but make none of its client-side checks (paths, flags): the server answers what they send.

// Create creates a node, as go-zookeeper's Create.
func (c *Conn) Create(ctx context.Context, path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	_, r, err := c.do(ctx, jute.Request{Header: jute.RequestHeader{Type: jute.OpCreate}, Path: path, Data: data, Flags: flags, ACL: nonNil(acl)}, nil)
	return r.Path, err
}

// CreateContainer creates a container node (createContainer), as go-zookeeper's CreateContainer: flags must
// be zk.FlagContainer.
func (c *Conn) CreateContainer(ctx context.Context, path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	if err := checkFlags(flags, flags == zk.FlagContainer, "CreateContainer requires container flag"); err != nil {
		return "", err
	}
	_, r, err := c.do(ctx, jute.Request{Header: jute.RequestHeader{Type: jute.OpCreateContainer}, Path: path, Data: data, Flags: flags, ACL: nonNil(acl)}, nil)
	return r.Path, err
}

// CreateTTL creates a TTL node (createTTL), as go-zookeeper's CreateTTL: flags must be zk.FlagTTL or
// zk.FlagPersistentSequentialWithTTL.
func (c *Conn) CreateTTL(ctx context.Context, path string, data []byte, flags int32, acl []zk.ACL, ttl time.Duration) (string, error) {
	if err := checkFlags(flags, flags == zk.FlagTTL || flags == zk.FlagPersistentSequentialWithTTL, "CreateTTL requires TTL flag"); err != nil {
		return "", err
	}
	_, r, err := c.do(ctx, jute.Request{Header: jute.RequestHeader{Type: jute.OpCreateTTL}, Path: path, Data: data, Flags: flags, ACL: nonNil(acl), TTL: ttl.Milliseconds()}, nil)
	return r.Path, err
}

// checkFlags returns go-zookeeper's errors for a create mode it does not know, or one the call does not take.
func checkFlags(flags int32, ok bool, wrong string) error {
	switch {
	case flags < zk.FlagPersistent || flags > zk.FlagPersistentSequentialWithTTL:
		return fmt.Errorf("invalid flag value: [%v]", flags)
	case !ok:
		return fmt.Errorf("%s: %w", wrong, zk.ErrInvalidFlags)
	}
	return nil
}

// nonNil sends a nil ACL as go-zookeeper does: an empty vector, not a null one.
func nonNil(acl []zk.ACL) []zk.ACL {
	if acl == nil {
		return []zk.ACL{}
	}
	return acl
}

// Delete deletes a node.
func (c *Conn) Delete(ctx context.Context, path string, version int32) error {
	_, _, err := c.do(ctx, jute.Request{Header: jute.RequestHeader{Type: jute.OpDelete}, Path: path, Version: version}, nil)
	return err
}

// Exists reports whether path exists, with its stat.
func (c *Conn) Exists(ctx context.Context, path string) (bool, *zk.Stat, error) {
	ok, st, _, err := c.exists(ctx, path, false)
	return ok, st, err
}

// ExistsW is Exists that also sets a watch (on a missing node too), as go-zookeeper's ExistsW.
func (c *Conn) ExistsW(ctx context.Context, path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	return c.exists(ctx, path, true)
}

func (c *Conn) exists(ctx context.Context, path string, watch bool) (bool, *zk.Stat, <-chan zk.Event, error) {
	var q *evqueue.Queue
	var onReply func(int32)
	if watch {
		onReply = func(code int32) {
			switch code {
			case 0:
				c.watch(path, watches.Data, &q, 0)(0)
			case -101:
				c.watch(path, watches.Exist, &q, -101)(-101)
			}
		}
	}
	_, r, err := c.do(ctx, jute.Request{Header: jute.RequestHeader{Type: jute.OpExists}, Path: path, Watch: watch}, onReply)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return false, &r.Stat, q.C(), nil
	case err == nil:
		return true, &r.Stat, q.C(), nil
	case watch || errors.Is(err, zk.ErrConnectionClosed):
		return false, nil, nil, err
	}
	return true, &r.Stat, nil, err // go-zookeeper's Exists says true with any other error
}

// Get returns a node's data and stat.
func (c *Conn) Get(ctx context.Context, path string) ([]byte, *zk.Stat, error) {
	d, st, _, err := c.get(ctx, path, false)
	return d, st, err
}

// GetW is Get that also sets a data watch.
func (c *Conn) GetW(ctx context.Context, path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	return c.get(ctx, path, true)
}

func (c *Conn) get(ctx context.Context, path string, watch bool) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	var q *evqueue.Queue
	var onReply func(int32)
	if watch {
		onReply = c.watch(path, watches.Data, &q, 0)
	}
	_, r, err := c.do(ctx, jute.Request{Header: jute.RequestHeader{Type: jute.OpGetData}, Path: path, Watch: watch}, onReply)
	if err != nil && (watch || errors.Is(err, zk.ErrConnectionClosed)) {
		return nil, nil, nil, err
	}
	return r.Data, &r.Stat, q.C(), err
}

// Set sets a node's data.
func (c *Conn) Set(ctx context.Context, path string, data []byte, version int32) (*zk.Stat, error) {
	_, r, err := c.do(ctx, jute.Request{Header: jute.RequestHeader{Type: jute.OpSetData}, Path: path, Data: data, Version: version}, nil)
	if errors.Is(err, zk.ErrConnectionClosed) {
		return nil, err
	}
	return &r.Stat, err
}

// Children returns a node's children (getChildren2) and stat.
func (c *Conn) Children(ctx context.Context, path string) ([]string, *zk.Stat, error) {
	ch, st, _, err := c.children(ctx, path, false)
	return ch, st, err
}

// ChildrenW is Children that also sets a child watch.
func (c *Conn) ChildrenW(ctx context.Context, path string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	return c.children(ctx, path, true)
}

func (c *Conn) children(ctx context.Context, path string, watch bool) ([]string, *zk.Stat, <-chan zk.Event, error) {
	var q *evqueue.Queue
	var onReply func(int32)
	if watch {
		onReply = c.watch(path, watches.Child, &q, 0)
	}
	_, r, err := c.do(ctx, jute.Request{Header: jute.RequestHeader{Type: jute.OpGetChildren2}, Path: path, Watch: watch}, onReply)
	if err != nil && (watch || errors.Is(err, zk.ErrConnectionClosed)) {
		return nil, nil, nil, err
	}
	return r.Children, &r.Stat, q.C(), err
}

// Sync asks the server to catch up with the leader for path.
func (c *Conn) Sync(ctx context.Context, path string) (string, error) {
	_, r, err := c.do(ctx, jute.Request{Header: jute.RequestHeader{Type: jute.OpSync}, Path: path}, nil)
	return r.Path, err
}

// Multi runs ops (*zk.CreateRequest, *zk.DeleteRequest, *zk.SetDataRequest, *zk.CheckVersionRequest) as one
// transaction, with go-zookeeper's results: one per op, and the first failing op's error.
func (c *Conn) Multi(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	req := jute.Request{Header: jute.RequestHeader{Type: jute.OpMulti}}
	for _, op := range ops {
		switch o := op.(type) {
		case *zk.CreateRequest:
			req.Ops = append(req.Ops, jute.Request{Header: jute.RequestHeader{Type: jute.OpCreate}, Path: o.Path, Data: o.Data, ACL: nonNil(o.Acl), Flags: o.Flags})
		case *zk.DeleteRequest:
			req.Ops = append(req.Ops, jute.Request{Header: jute.RequestHeader{Type: jute.OpDelete}, Path: o.Path, Version: o.Version})
		case *zk.SetDataRequest:
			req.Ops = append(req.Ops, jute.Request{Header: jute.RequestHeader{Type: jute.OpSetData}, Path: o.Path, Data: o.Data, Version: o.Version})
		case *zk.CheckVersionRequest:
			req.Ops = append(req.Ops, jute.Request{Header: jute.RequestHeader{Type: jute.OpCheck}, Path: o.Path, Version: o.Version})
		default:
			return nil, fmt.Errorf("rawzk: multi op of type %T; use *zk.CreateRequest, *zk.DeleteRequest, *zk.SetDataRequest or *zk.CheckVersionRequest", op)
		}
	}
	hdr, r, err := c.do(ctx, req, nil)
	if errors.Is(err, zk.ErrConnectionClosed) || (err != nil && hdr.Err == 0) {
		return nil, err
	}
	// As go-zookeeper decodes it: a reply whose header has an error code has no results; otherwise each
	// result carries a create's path or a setData's stat, or an error code (0 for an op that did not fail in
	// a failed multi), the first non-zero code is the call's error, and a result of a type go-zookeeper
	// does not know (a create2's, a container's) ends the decoding with zk.ErrAPIError.
	out := []zk.MultiResponse{}
	if hdr.Err != 0 {
		return out, err
	}
	for _, res := range r.Results {
		var m zk.MultiResponse
		switch res.Type {
		case jute.OpCreate:
			m.String = res.Path
		case jute.OpSetData:
			m.Stat = &res.Stat
		case jute.OpError:
			if res.Err != 0 {
				m.Error = codeError(res.Err)
				if err == nil {
					err = m.Error
				}
			}
		case jute.OpCheck, jute.OpDelete:
		default:
			return out, zk.ErrAPIError
		}
		out = append(out, m)
	}
	return out, err
}

// SessionID returns the session's id.
func (c *Conn) SessionID() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionID
}

// State returns the last session state.
func (c *Conn) State() zk.State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// Sever drops the current connection from the client's side, as a network failure would; the Conn reconnects
// to the next server and resumes its session.
func (c *Conn) Sever() {
	c.mu.Lock()
	nc := c.nc
	c.mu.Unlock()
	if nc != nil {
		nc.Close()
	}
}

// Close ends the session (a closeSession request, bounded by ctx), ends every watch with EventNotWatching
// and zk.ErrClosing, and closes the event channel. It is idempotent.
func (c *Conn) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	live := c.nc != nil && !c.expired
	c.closing = true
	c.mu.Unlock()
	var err error
	if live {
		_, _, err = c.do(ctx, jute.Request{Header: jute.RequestHeader{Type: jute.OpCloseSession}}, nil)
		if errors.Is(err, zk.ErrConnectionClosed) {
			err = nil // the server closes the connection after its reply; either may come first
		}
	}
	c.mu.Lock()
	c.closed = true
	nc := c.nc
	c.mu.Unlock()
	close(c.stop)
	if nc != nil {
		nc.Close()
	}
	c.loops.Wait()
	c.emit(zk.Event{Type: zk.EventSession, State: zk.StateDisconnected}) // as go-zookeeper reports a close
	c.endWatches(zk.ErrClosing)
	c.events.Close()
	if err != nil {
		return fmt.Errorf("rawzk: close session %#x: %w", c.SessionID(), err)
	}
	return nil
}

// codeError turns a ZooKeeper error code into the error go-zookeeper v1.0.4 returns for it.
func codeError(code int32) error {
	if err, ok := named[code]; ok {
		return err
	}
	return fmt.Errorf("unknown error: %v", zk.ErrCode(code))
}

// named are the codes go-zookeeper v1.0.4 has error values for.
var named = map[int32]error{
	-100: zk.ErrAPIError, -101: zk.ErrNoNode, -102: zk.ErrNoAuth, -103: zk.ErrBadVersion,
	-108: zk.ErrNoChildrenForEphemerals, -110: zk.ErrNodeExists, -111: zk.ErrNotEmpty, -112: zk.ErrSessionExpired,
	-114: zk.ErrInvalidACL, -115: zk.ErrAuthFailed, -116: zk.ErrClosing, -117: zk.ErrNothing, -118: zk.ErrSessionMoved,
	-123: zk.ErrReconfigDisabled, -8: zk.ErrBadArguments,
}

// ZK gives a Conn go-zookeeper's method set, without contexts (each call is bounded by Timeout), for code
// and interfaces written against *zk.Conn (conformance.Conn, conformance.WatchConn); AddWatch takes
// go-zookeeper's development branch's shape, a path and whether the watch is recursive.
type ZK struct {
	C       *Conn
	Timeout time.Duration
}

func (z ZK) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), z.Timeout)
}

// AddWatch sets a persistent watch on path, recursive or not (see Conn.AddWatch).
func (z ZK) AddWatch(path string, recursive bool) (<-chan zk.Event, error) {
	ctx, cancel := z.ctx()
	defer cancel()
	mode := ModePersistent
	if recursive {
		mode = ModePersistentRecursive
	}
	return z.C.AddWatch(ctx, path, mode)
}

// AddWatchMode is AddWatch with addWatch's mode number as sent on the wire, any value.
func (z ZK) AddWatchMode(path string, mode int32) (<-chan zk.Event, error) {
	ctx, cancel := z.ctx()
	defer cancel()
	return z.C.AddWatch(ctx, path, mode)
}

// RemoveWatches is Conn.RemoveWatches.
func (z ZK) RemoveWatches(path string, watcherType int32) error {
	ctx, cancel := z.ctx()
	defer cancel()
	return z.C.RemoveWatches(ctx, path, watcherType)
}

// CheckWatches is Conn.CheckWatches.
func (z ZK) CheckWatches(path string, watcherType int32) error {
	ctx, cancel := z.ctx()
	defer cancel()
	return z.C.CheckWatches(ctx, path, watcherType)
}

// Create is Conn.Create.
func (z ZK) Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	ctx, cancel := z.ctx()
	defer cancel()
	return z.C.Create(ctx, path, data, flags, acl)
}

// CreateContainer is Conn.CreateContainer.
func (z ZK) CreateContainer(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	ctx, cancel := z.ctx()
	defer cancel()
	return z.C.CreateContainer(ctx, path, data, flags, acl)
}

// CreateTTL is Conn.CreateTTL.
func (z ZK) CreateTTL(path string, data []byte, flags int32, acl []zk.ACL, ttl time.Duration) (string, error) {
	ctx, cancel := z.ctx()
	defer cancel()
	return z.C.CreateTTL(ctx, path, data, flags, acl, ttl)
}

// AddAuth is Conn.AddAuth.
func (z ZK) AddAuth(scheme string, auth []byte) error {
	ctx, cancel := z.ctx()
	defer cancel()
	return z.C.AddAuth(ctx, scheme, auth)
}

// GetACL is Conn.GetACL.
func (z ZK) GetACL(path string) ([]zk.ACL, *zk.Stat, error) {
	ctx, cancel := z.ctx()
	defer cancel()
	return z.C.GetACL(ctx, path)
}

// SetACL is Conn.SetACL.
func (z ZK) SetACL(path string, acl []zk.ACL, version int32) (*zk.Stat, error) {
	ctx, cancel := z.ctx()
	defer cancel()
	return z.C.SetACL(ctx, path, acl, version)
}

// Delete is Conn.Delete.
func (z ZK) Delete(path string, version int32) error {
	ctx, cancel := z.ctx()
	defer cancel()
	return z.C.Delete(ctx, path, version)
}

// Exists is Conn.Exists.
func (z ZK) Exists(path string) (bool, *zk.Stat, error) {
	ctx, cancel := z.ctx()
	defer cancel()
	return z.C.Exists(ctx, path)
}

// ExistsW is Conn.ExistsW.
func (z ZK) ExistsW(path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	ctx, cancel := z.ctx()
	defer cancel()
	return z.C.ExistsW(ctx, path)
}

// Get is Conn.Get.
func (z ZK) Get(path string) ([]byte, *zk.Stat, error) {
	ctx, cancel := z.ctx()
	defer cancel()
	return z.C.Get(ctx, path)
}

// GetW is Conn.GetW.
func (z ZK) GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	ctx, cancel := z.ctx()
	defer cancel()
	return z.C.GetW(ctx, path)
}

// Set is Conn.Set.
func (z ZK) Set(path string, data []byte, version int32) (*zk.Stat, error) {
	ctx, cancel := z.ctx()
	defer cancel()
	return z.C.Set(ctx, path, data, version)
}

// Children is Conn.Children.
func (z ZK) Children(path string) ([]string, *zk.Stat, error) {
	ctx, cancel := z.ctx()
	defer cancel()
	return z.C.Children(ctx, path)
}

// ChildrenW is Conn.ChildrenW.
func (z ZK) ChildrenW(path string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	ctx, cancel := z.ctx()
	defer cancel()
	return z.C.ChildrenW(ctx, path)
}

// IncrementalReconfig is Conn.IncrementalReconfig.
func (z ZK) IncrementalReconfig(joining, leaving []string, fromConfig int64) (*zk.Stat, error) {
	ctx, cancel := z.ctx()
	defer cancel()
	return z.C.IncrementalReconfig(ctx, joining, leaving, fromConfig)
}

// Reconfig is Conn.Reconfig.
func (z ZK) Reconfig(members []string, fromConfig int64) (*zk.Stat, error) {
	ctx, cancel := z.ctx()
	defer cancel()
	return z.C.Reconfig(ctx, members, fromConfig)
}

// Multi is Conn.Multi.
func (z ZK) Multi(ops ...any) ([]zk.MultiResponse, error) {
	ctx, cancel := z.ctx()
	defer cancel()
	return z.C.Multi(ctx, ops...)
}

// Sync is Conn.Sync.
func (z ZK) Sync(path string) (string, error) {
	ctx, cancel := z.ctx()
	defer cancel()
	return z.C.Sync(ctx, path)
}

// SessionID is Conn.SessionID.
func (z ZK) SessionID() int64 { return z.C.SessionID() }

// State is Conn.State.
func (z ZK) State() zk.State { return z.C.State() }

// Close is Conn.Close, its error dropped as go-zookeeper's Close has none.
func (z ZK) Close() {
	ctx, cancel := z.ctx()
	defer cancel()
	_ = z.C.Close(ctx)
}
