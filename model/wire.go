package model

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/internal/digestmd5"
	"github.com/zkmodel/zkmodel/jute"
	"github.com/zkmodel/zkmodel/model/internal/core"
)

// This file is the wire front end: the server side of ZooKeeper's client protocol, so that real clients
// (go-zookeeper's *zk.Conn, Curator, kazoo, zkCli) talk to the model in-process (Dialer, ConnectZK) or over
// loopback TCP (Listen). A wire client is one of the server's clients like a *Conn: it has a client number,
// its requests wait in its queue (sent) until applied, its replies and watch events in its outbox until
// delivered, so that the step machinery (Pending, Faults, Do) and the observer treat both alike. The client's
// own logic (reconnecting, resending watches, pinging) is the real client's; the server only answers.
//
// This file has the connections: dialing and listening, each connection's goroutines and back-pressure, the
// handshake, and the request flow (receive, applyWire, deliverWire). The translation between jute and the
// core's requests and results is in wire_translate.go; the requests the front end answers itself (addAuth,
// whoAmI, setWatches, multiRead; sasl in sasl.go) are in wire_frontend.go.

// wireOutLimit bounds what the server queues for one connection: a client that stops reading while more than
// this is waiting is dropped, so that it cannot hold the server (or its memory) hostage. It bounds a backlog,
// not a frame: a reply of any size is sent, as ZooKeeper 3.8 sends a getChildren reply of 20 MB (measured).
// Each waiting frame counts for its length but at most wireFrameWeight (the frame being written counts for
// nothing), so that a reply over the limit is queued, and the client that reads it kept, whatever small
// frames (pings' replies, events) are ahead of it or come in behind it, and so are up to three such replies
// at once; a client that stops reading is dropped all the same, once its backlog so counted passes the limit.
const (
	wireOutLimit    = 8 << 20
	wireFrameWeight = wireOutLimit / 4
)

// wireState is the server's wire front end: its listeners and live connections.
type wireState struct {
	closed    bool
	listeners []net.Listener
	links     map[*wireLink]struct{}
	buckets   map[int]map[int64]bool // each member's connection expiry buckets (cnxnexpiry.go)
}

// wireLink is one connection of a wire client: a net.Conn with a reader goroutine that decodes requests and a
// writer goroutine that sends what the server queued, in order.
type wireLink struct {
	srv      *Server
	nc       net.Conn
	slot     *Conn             // the client it belongs to, once known (a Dialer knows it up front)
	member   int               // the ensemble's server it is a connection to
	readOnly bool              // the connect request carried the readOnly byte: the response carries one too
	lingers  bool              // answered NotReadOnly in place of a session: open until the client sends more (readonly.go); guarded by Server.mu
	expiry   int64             // its connection expiry bucket (cnxnexpiry.go); guarded by Server.mu
	sasl     *digestmd5.Server // the connection's SASL exchange, once its first sasl request came; guarded by Server.mu
	x509     string            // the client certificate's subject (WriteTLSPeer), its x509 identity; set before the connect request is read
	hasCert  bool              // a client certificate came (WriteTLSPeer); set before the connect request is read
	mu       sync.Mutex        // guards the fields below
	queue    [][]byte          // frames waiting to be written
	queued   int               // their bytes, each frame's counted up to wireFrameWeight
	closing  bool              // close the connection once the queue is written
	dead     bool              // closed: nothing more is written
	kick     chan struct{}     // wakes the writer; capacity 1
}

// wireConnect is a connect request waiting for a Reconnect step (manual transport).
type wireConnect struct {
	link *wireLink
	req  jute.ConnectRequest
	done chan bool // receives whether the connection got a session
	seen bool      // recorded as sent
}

// flushWire moves what a wire client's reader decoded since the scheduler last looked into its queue and
// records it as sent (manual transport). Requests that arrived together were sent together — by different
// goroutines of the client, whose race decided the stream's order — so, as for the model's own clients,
// they are put in an order fixed by their text; those the client sends on its own behalf (negative xids:
// setWatches, auth and pings after a reconnection) keep their place in front. Caller holds s.mu.
func (s *Server) flushWire(c *Conn) {
	if wc := c.connecting; wc != nil && !wc.seen {
		wc.seen = true
		s.record(c, "send", "connect session %#x", wc.req.SessionID)
	}
	slices.SortStableFunc(c.outgoing, func(a, b *call) int {
		if ac, bc := a.wire.xid < 0, b.wire.xid < 0; ac != bc {
			if ac {
				return -1
			}
			return 1
		}
		if a.wire.xid < 0 {
			return 0 // the client's own, in the stream's order
		}
		return strings.Compare(a.wire.text, b.wire.text)
	})
	for _, cl := range c.outgoing {
		c.sent = append(c.sent, cl)
		if s.cfg.observer != nil {
			s.record(c, "send", "%s", cl.wire.text)
		}
	}
	c.outgoing = c.outgoing[:0]
}

// acceptConnect answers a wire client's waiting connect request: the Reconnect step. Caller holds s.mu.
func (s *Server) acceptConnect(c *Conn) {
	wc := c.connecting
	c.connecting = nil
	wc.done <- s.handshake(wc.link, wc.req)
}

// wireCall is a request that came over the wire: its xid and opcode, and (once applied) the frame the server
// answers with, if any.
type wireCall struct {
	xid         int32
	op          int32
	req         jute.Request
	fail        int32 // answer with this code without applying: -5 (marshalling), -6 (unimplemented, then close)
	undecodable bool  // a sasl request whose token cannot be read: the server closes the connection unanswered
	text        string
	frame       []byte
}

// Dialer returns a zk.Dialer (for zk.WithDialer) that connects go-zookeeper to this server in-process, over
// net.Pipe: no sockets. The Dialer is one client of the server, with one ClientID for all the connections it
// makes one after the other (go-zookeeper dials again after every disconnection); a connection it makes while
// another of its connections has a session is a client of its own. Any address works, for server 0 of an
// ensemble; Hosts gives one address per server (dialing a stopped one is refused, as a TCP dial is).
// go-zookeeper resolves host names, so give it an IP literal such as "127.0.0.1:2181".
func (s *Server) Dialer() zk.Dialer {
	s.mu.Lock()
	slot := s.newWireClient()
	s.mu.Unlock()
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.wire.closed {
			return nil, fmt.Errorf("model: dial %s: the server is closed", address)
		}
		member := s.memberOfAddress(address)
		if s.ens.down[member] {
			return nil, fmt.Errorf("model: dial %s (server %d, stopped): %w", address, member, dialRefused(address))
		}
		client, server := net.Pipe()
		s.startLink(server, slot, member)
		return pipeConn{client}, nil
	}
}

// pipeConn is the client's end of an in-process connection. It reports a connection the server closed the way
// a TCP socket does, as a *net.OpError (connection reset), rather than net.Pipe's io.ErrClosedPipe, so that
// client code sees the errors it would see on a real network.
type pipeConn struct{ net.Conn }

func (p pipeConn) Read(b []byte) (int, error) {
	n, err := p.Conn.Read(b)
	return n, p.wrap("read", err)
}

func (p pipeConn) Write(b []byte) (int, error) {
	n, err := p.Conn.Write(b)
	return n, p.wrap("write", err)
}

func (p pipeConn) wrap(op string, err error) error {
	if errors.Is(err, io.ErrClosedPipe) {
		return &net.OpError{Op: op, Net: "pipe", Source: p.LocalAddr(), Addr: p.RemoteAddr(), Err: syscall.ECONNRESET}
	}
	return err
}

// ConnectZK connects a real go-zookeeper client to srv in-process (Dialer, with every server of an ensemble
// in its list: Hosts) and returns once its session is
// established (StateHasSession), or with an error after max(sessionTimeout, 10s). The event channel is
// go-zookeeper's own, untouched: it starts with StateConnecting, StateConnected, StateHasSession. opts are
// passed to zk.Connect after ConnectZK's own (the dialer, and a logger that discards go-zookeeper's log lines),
// so they can override the logger.
//
// opts are zk.Connect's options (zk.WithLogger, zk.WithEventCallback, …): go-zookeeper does not export their
// type, so they are taken as the func(*zk.Conn) it is.
func ConnectZK(srv *Server, sessionTimeout time.Duration, opts ...func(*zk.Conn)) (*zk.Conn, <-chan zk.Event, error) {
	srv.mu.Lock()
	closed := srv.wire.closed
	srv.mu.Unlock()
	if closed {
		return nil, nil, fmt.Errorf("model: ConnectZK: the server is closed (Server.Close)")
	}
	conn, events, err := zk.Connect(srv.Hosts(), sessionTimeout, connOptions(zk.WithDialer(srv.Dialer()), append([]func(*zk.Conn){zk.WithLogger(discardLogger{})}, opts...))...)
	if err != nil {
		return nil, nil, fmt.Errorf("model: ConnectZK: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(sessionTimeout, 10*time.Second))
	defer cancel()
	for conn.State() != zk.StateHasSession {
		select {
		case <-ctx.Done():
			conn.Close()
			return nil, nil, fmt.Errorf("model: ConnectZK: no session after %s (state %s): %w", max(sessionTimeout, 10*time.Second), conn.State(), ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
	return conn, events, nil
}

// connOptions returns first and rest as a slice of go-zookeeper's unexported option type, which T is inferred as.
func connOptions[T ~func(*zk.Conn)](first T, rest []func(*zk.Conn)) []T {
	out := []T{first}
	for _, o := range rest {
		out = append(out, T(o))
	}
	return out
}

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}

// Listen serves real ZooKeeper clients on a TCP address (use a loopback one, such as "127.0.0.1:0") until
// Close, and returns the address it listens on. Several Listen calls may be made; they are all server 0 of
// an ensemble (ListenEnsemble serves every server). Every connection that opens a new session is a new
// client of the server; one that resumes a session belongs to the session's client.
func (s *Server) Listen(address string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wire.closed {
		return "", fmt.Errorf("model: listen on %s: the server is closed", address)
	}
	if s.ens.down[0] {
		return "", fmt.Errorf("model: listen on %s: server 0 is stopped (StartServer(0) first)", address)
	}
	return s.listenMember(0, address)
}

// Close stops the wire front end: listeners stop accepting, every wire connection is closed (its client sees
// the connection drop and cannot reconnect), and Dialers fail. Sessions stay on the server, to expire as
// usual; *model.Conn clients are not affected. Close is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.wire.closed {
		s.mu.Unlock()
		return nil
	}
	s.wire.closed = true
	listeners := s.wire.listeners
	s.wire.listeners = nil
	for i, lns := range s.ens.listeners {
		listeners = append(listeners, lns...)
		s.ens.listeners[i] = nil
	}
	for _, c := range s.clients {
		if c.wireClient && c.link != nil {
			s.record(c, "disconnect", "server closed")
			s.sever(c)
		}
		if c.connecting != nil {
			c.connecting.link.abort()
			c.connecting.done <- false
			c.connecting = nil
		}
	}
	links := make([]*wireLink, 0, len(s.wire.links))
	for l := range s.wire.links {
		links = append(links, l)
	}
	s.mu.Unlock()
	var errs []error
	for _, ln := range listeners {
		if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, fmt.Errorf("model: close listener %s: %w", ln.Addr(), err))
		}
	}
	for _, l := range links {
		l.abort()
	}
	return errors.Join(errs...)
}

func (s *Server) newWireClient() *Conn {
	c := &Conn{srv: s, id: len(s.clients) + 1, wireClient: true, state: zk.StateDisconnected}
	s.clients = append(s.clients, c)
	return c
}

// startLink starts serving nc. Caller holds s.mu.
func (s *Server) startLink(nc net.Conn, slot *Conn, member int) {
	l := &wireLink{srv: s, nc: nc, slot: slot, member: member, kick: make(chan struct{}, 1)}
	if s.wire.links == nil {
		s.wire.links = map[*wireLink]struct{}{}
	}
	s.wire.links[l] = struct{}{}
	s.touchLink(l)
	go l.writeLoop()
	go l.readLoop()
}

// password derives a session's password from the seed and the session id, as ZooKeeper derives it from its
// secret and the id: the same seed gives the same passwords.
func (s *Server) password(sid int64) []byte {
	out := make([]byte, 16)
	binary.BigEndian.PutUint64(out, core.Mix64(uint64(s.cfg.seed)^uint64(sid)))
	binary.BigEndian.PutUint64(out[8:], core.Mix64(uint64(sid)^0x9a55_3030))
	return out
}

// --- the connection's goroutines ---------------------------------------------------------------------------

func (l *wireLink) readLoop() {
	s := l.srv
	first, answered := l.fourLetterWord() // flw.go: a four-letter word instead of a connect request
	if answered {
		s.forget(l)
		return
	}
	body, err := jute.ReadFrame(first, jute.MaxBuffer)
	if err != nil {
		l.abort() // nothing a server can parse as a connect request: it closes the connection, as ZooKeeper does
		s.forget(l)
		return
	}
	creq, err := jute.DecodeConnectRequest(body)
	s.mu.Lock()
	var ok bool
	if c := l.slot; err == nil && s.cfg.manual && c != nil && c.session != 0 && !s.wire.closed && s.ens.serving(l.member) {
		// With the manual transport a Dialer's reconnection is a Reconnect step: the connect request waits
		// until the scheduler lets the server answer it (its first connection, like Server.Connect's, is
		// answered at once).
		if old := c.connecting; old != nil { // a connection the client has given up on
			old.link.abort()
			old.done <- false
		}
		wc := &wireConnect{link: l, req: creq, done: make(chan bool, 1)}
		c.connecting = wc // recorded as sent by flushWire
		s.mu.Unlock()
		ok = <-wc.done
	} else {
		ok = err == nil && s.handshake(l, creq)
		s.mu.Unlock()
	}
	if !ok {
		if err != nil {
			l.abort()
		}
		l.linger()
		s.forget(l)
		return
	}
	for {
		frame, err := jute.ReadFrame(l.nc, jute.MaxBuffer)
		if errors.Is(err, jute.ErrFrameTooLarge) {
			// ZooKeeper has already read what the client sent with the frame's length when it refuses it, and
			// closes the connection cleanly; closing with unread input would reset it instead.
			_ = l.nc.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			_, _ = io.Copy(io.Discard, io.LimitReader(l.nc, 64<<10))
		}
		s.mu.Lock()
		if err != nil {
			s.linkLost(l, err)
			s.mu.Unlock()
			s.forget(l)
			return
		}
		s.receive(l, frame)
		s.mu.Unlock()
	}
}

func (s *Server) forget(l *wireLink) {
	s.mu.Lock()
	delete(s.wire.links, l)
	s.mu.Unlock()
}

func (l *wireLink) writeLoop() {
	for {
		l.mu.Lock()
		for len(l.queue) == 0 && !l.closing && !l.dead {
			l.mu.Unlock()
			<-l.kick
			l.mu.Lock()
		}
		if l.dead || len(l.queue) == 0 { // dead, or closing with everything written
			l.dead = true
			l.mu.Unlock()
			l.nc.Close()
			return
		}
		frame := l.queue[0]
		l.queue = popFront(l.queue)
		l.queued -= min(len(frame), wireFrameWeight)
		l.mu.Unlock()
		if _, err := l.nc.Write(frame); err != nil {
			l.abort()
			return
		}
	}
}

func (l *wireLink) wake() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// send queues a frame; it reports false, queueing nothing, when the client is too far behind (wireOutLimit).
func (l *wireLink) send(frame []byte) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dead || l.closing {
		return true
	}
	weight := min(len(frame), wireFrameWeight)
	if l.queued+weight > wireOutLimit {
		return false
	}
	l.queue = append(l.queue, frame)
	l.queued += weight
	l.wake()
	return true
}

// closeAfterFlush closes the connection once what is queued has been written.
func (l *wireLink) closeAfterFlush() {
	l.mu.Lock()
	l.closing = true
	l.mu.Unlock()
	l.wake()
}

// abort closes the connection now, dropping what is queued.
func (l *wireLink) abort() {
	l.mu.Lock()
	l.dead, l.queue, l.queued = true, nil, 0
	l.mu.Unlock()
	l.wake()
	l.nc.Close()
}

// --- sessions ------------------------------------------------------------------------------------------------

// handshake answers a connect request, as ZooKeeper 3.8 does (measured): a new session; a resumed one (right
// id and password, session alive); or a refusal (expired or unknown session, wrong password), which is a
// response with timeout 0, session 0 and a zero password, after which the server closes the connection. A
// client that has seen a later zxid than the server's is closed without an answer. Caller holds s.mu.
func (s *Server) handshake(l *wireLink, req jute.ConnectRequest) bool {
	if s.wire.closed {
		l.abort()
		return false
	}
	readOnly := !s.ens.serving(l.member)
	if readOnly && !s.readOnlyConnect(l, req) {
		return false
	}
	if req.LastZxidSeen > s.core.Zxid() {
		s.record(l.slot, "connect", "refused: the client has seen zxid %#x, the server is at %#x", req.LastZxidSeen, s.core.Zxid())
		l.closeAfterFlush()
		return false
	}
	l.readOnly = req.HasReadOnly
	timeout := s.negotiate(time.Duration(req.TimeOut) * time.Millisecond)
	var slot *Conn
	if req.SessionID == 0 {
		// A Dialer's connections belong to its client, unless that client is connected already: two *zk.Conn
		// sharing one Dialer are two clients.
		slot = l.slot
		if slot == nil || slot.link != nil {
			slot = s.newWireClient()
		}
		local := !readOnly && s.localSessionsOn()
		if readOnly || local {
			slot.session = s.core.CreateLocalSession(timeout) // a local session is no transaction
		} else {
			slot.session = s.core.CreateSession(timeout)
		}
		s.record(slot, "connect", "session %#x timeout=%s", slot.session, timeout)
		switch {
		case readOnly:
			s.openedReadOnly(slot, l.member)
		case local:
			s.openedLocal(slot, l.member)
		}
	} else {
		sess, alive := s.core.Session(req.SessionID)
		owner := s.owner(req.SessionID)
		if !alive || !bytes.Equal(req.Passwd, s.password(req.SessionID)) || owner == nil || !owner.wireClient || s.localElsewhere(req.SessionID, l.member) {
			why := "expired or unknown"
			switch {
			case s.localElsewhere(req.SessionID, l.member):
				why = "a local session of another server"
			case alive:
				why = "wrong password"
			}
			s.record(l.slot, "reconnect", "session %#x refused (%s)", req.SessionID, why)
			l.sendConnectResponse(jute.ConnectResponse{Passwd: make([]byte, 16)})
			l.closeAfterFlush()
			return false
		}
		slot = owner
		if slot.link != nil {
			s.record(slot, "disconnect", "the session moved to a new connection")
			s.sever(slot)
		}
		s.heardWithTimeout(sess, timeout)
		s.record(slot, "reconnect", "session %#x resumed timeout=%s", slot.session, timeout)
	}
	l.slot, slot.link = slot, l
	slot.connected, slot.closing = true, false
	s.touchLink(l)                                 // the connection now expires with its session's timeout
	s.core.ResetAuth(slot.session, remoteIP(l.nc)) // a new connection: the client sends its credentials again
	if l.hasCert && s.cfg.x509 {
		s.core.AddX509(slot.session, l.x509) // X509AuthenticationProvider, as the TLS handshake completes
	}
	l.sendConnectResponse(jute.ConnectResponse{TimeOut: int32(timeout.Milliseconds()), SessionID: slot.session, Passwd: s.password(slot.session), ReadOnly: readOnly})
	return true
}

func (l *wireLink) sendConnectResponse(r jute.ConnectResponse) {
	r.HasReadOnly = l.readOnly
	e := jute.NewEncoder(nil)
	r.Encode(e)
	l.send(jute.AppendFrame(nil, e.Bytes()))
}

// linkLost handles a connection that failed on the client's side (closed, or a frame the server refuses).
// Caller holds s.mu.
func (s *Server) linkLost(l *wireLink, err error) {
	c := l.slot
	if c == nil || c.link != l {
		l.abort()
		return
	}
	switch {
	case errors.Is(err, jute.ErrFrameTooLarge):
		s.record(c, "disconnect", "server dropped the connection: %v (jute.maxbuffer is %d)", err, jute.MaxBuffer)
	default:
		s.record(c, "disconnect", "client closed the connection")
	}
	s.sever(c)
	l.abort()
	s.settle()
}

// unlink detaches a severed wire client from its connection, which closes once what was queued is written.
// Caller holds s.mu (from sever).
func (s *Server) unlink(c *Conn) {
	c.outgoing = nil // decoded from the dropped connection, not yet seen by the scheduler: lost with it
	if c.link != nil {
		c.link.closeAfterFlush()
		c.link = nil
	}
}

// --- requests ------------------------------------------------------------------------------------------------

// receive decodes one request frame and queues it for the server. Caller holds s.mu.
func (s *Server) receive(l *wireLink, frame []byte) {
	c := l.slot
	if c.link != l || c.closing {
		return // the server is closing this connection: it reads no more of it
	}
	s.touchLink(l)
	jr, err := jute.DecodeRequest(frame)
	if err != nil && len(frame) < 8 {
		s.record(c, "disconnect", "server dropped the connection: a %d-byte frame has no request header", len(frame))
		s.sever(c)
		s.settle()
		return
	}
	if jr.Header.Type == jute.OpSetWatches || jr.Header.Type == jute.OpSetWatches2 {
		// Clients send these lists in their hash maps' order; any order is one a client could send, and a
		// sorted one keeps the events setWatches fires, and the traces, the same from run to run.
		for _, paths := range [][]string{jr.DataWatches, jr.ExistWatches, jr.ChildWatches, jr.PersistentWatches, jr.RecursiveWatches} {
			slices.Sort(paths)
		}
	}
	w := &wireCall{xid: jr.Header.Xid, op: jr.Header.Type, req: jr}
	cl := &call{wire: w}
	switch {
	case err != nil && jr.Header.Type == jute.OpSASL:
		w.text, w.undecodable = fmt.Sprintf("sasl (undecodable: %v)", err), true
	case errors.Is(err, jute.ErrUnknownOpcode) && !isMultiType(jr.Header.Type):
		w.fail, w.text = -6, fmt.Sprintf("opcode %d (unknown)", jr.Header.Type)
	case err != nil:
		w.fail, w.text = -5, fmt.Sprintf("opcode %d (undecodable: %v)", jr.Header.Type, err)
	default:
		cl.req = coreRequest(&jr)
		w.text = wireText(&jr, cl.req)
	}
	if s.cfg.manual && w.op == jute.OpPing && cl.req != nil && len(c.outgoing)+len(c.sent)+len(c.outbox) == 0 && !c.closing &&
		!s.refusesUnauthenticated(c, w.op) {
		// Nothing is ahead of the ping on its connection, either way: the server answers it at once, as
		// ZooKeeper does, rather than as a step. Pings keep sessions alive while the scheduler lets time pass,
		// and are nobody's decision; a ping behind other traffic waits its turn as any request does.
		s.heard(c.session)
		if !c.link.send(replyFrame(w.xid, s.core.Zxid(), 0, nil)) {
			c.link.abort()
			s.sever(c)
		}
		return
	}
	if s.cfg.manual {
		c.outgoing = append(c.outgoing, cl) // joins the queue when the scheduler next looks (flushWire)
		return
	}
	c.sent = append(c.sent, cl)
	if s.cfg.observer != nil {
		s.record(c, "send", "%s", w.text)
	}
	s.settle()
}

// applyWire executes a wire request and queues its reply. Caller holds s.mu (from apply).
func (s *Server) applyWire(c *Conn, cl *call) {
	w := cl.wire
	hangUp := false
	detail := ""
	switch {
	case s.refusesUnauthenticated(c, w.op):
		w.frame = replyFrame(w.xid, 0, errSessionClosedRequireSASLAuth, nil)
		hangUp, detail = true, "error session closed, requires authentication; closing"
	case w.fail == -6:
		// An opcode the server does not know: UNIMPLEMENTED with zxid -1, then the server closes the connection.
		w.frame = replyFrame(w.xid, -1, -6, nil)
		hangUp, detail = true, "error unimplemented; closing"
	case w.fail == -5:
		if isWriteType(w.op) {
			s.core.SpendZxid() // a write the server cannot decode is still a (failed) transaction
		}
		w.frame = replyFrame(w.xid, s.core.Zxid(), -5, nil)
		detail = "error marshalling"
	case s.readOnlyHandles(c, w.op):
		detail, hangUp = s.applyReadOnly(c, cl)
	case s.localAnswers(c, cl):
		detail, hangUp = s.applyLocal(c, cl)
	case cl.req != nil:
		s.upgradeForEphemeral(c, cl)
		detail = s.applyCore(c, cl)
		hangUp = cl.req.Op == core.OpCloseSession
	default:
		detail, hangUp = s.applyFrontEnd(c, cl)
	}
	if s.cfg.observer != nil {
		s.recordText(c, "apply", w.text+" -> "+detail)
	}
	if w.frame != nil {
		c.outbox = append(c.outbox, outItem{call: cl})
	}
	if cl.req != nil && cl.req.Op == core.OpReconfig {
		s.reconfigured() // after the reply is queued: the client gets it before an election drops its connection
	}
	if hangUp {
		c.closing = true
		c.outbox = append(c.outbox, outItem{hangUp: true})
	}
}

func remoteIP(nc net.Conn) string {
	if a, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	return "127.0.0.1" // in-process: the client is on this machine
}

// deliverWire writes the oldest item of a wire client's outbox to its connection. Caller holds s.mu.
func (s *Server) deliverWire(c *Conn, it outItem) {
	var frame []byte
	switch {
	case it.hangUp:
		s.record(c, "disconnect", "server closed the connection")
		s.sever(c)
		return
	case it.drop:
		l := c.link
		s.record(c, "disconnect", "the connection dropped: its server s%d stopped or stopped serving", l.member)
		s.sever(c)
		l.abort() // what was queued for it is lost, as with a killed server
		return
	case it.call != nil:
		frame = it.call.wire.frame
		if s.cfg.observer != nil {
			s.record(c, "reply", "%s", it.call.wire.text)
		}
	default:
		// A 3.8 server sends notifications with xid -1 and zxid -1 (measured).
		ev := jute.WatcherEvent{Type: int32(it.event.Type), State: int32(zk.StateSyncConnected), Path: it.event.Path}
		frame = replyFrame(jute.XidNotification, -1, 0, ev.Encode)
		if s.cfg.observer != nil {
			s.record(c, "event", "%s %s", it.event.Type, it.event.Path)
		}
	}
	if !c.link.send(frame) {
		s.record(c, "disconnect", "server dropped the connection: the client is not reading (over %d bytes queued)", wireOutLimit)
		c.link.abort()
		s.sever(c)
	}
}

// ClientOf returns the ClientID of the client whose current session is sessionID (a *Conn or a wire client),
// or 0 if there is none. Steps name wire clients by it, e.g. Do(Step{Kind: Disconnect, Client: srv.ClientOf(conn.SessionID())}).
func (s *Server) ClientOf(sessionID int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.owner(sessionID); c != nil {
		return c.id
	}
	return 0
}
