package model

import (
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/jute"
)

func mode(t *testing.T, srv *Server, i int) string {
	t.Helper()
	m, err := srv.Mode(i)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func modes(t *testing.T, srv *Server) string {
	t.Helper()
	var out []string
	for i := range srv.Members() {
		out = append(out, mode(t, srv, i))
	}
	return strings.Join(out, ",")
}

// TestEnsembleStopFollowerAndLeader: the model's own clients spread over the servers; stopping a follower
// drops only its clients, which reconnect to the next server with their sessions; stopping the leader drops
// every client (the election) and restarts the sessions' expiry deadlines.
func TestEnsembleStopFollowerAndLeader(t *testing.T) {
	srv := NewServer(WithManualTransport(), WithEnsemble(3))
	a, _ := connect(t, srv)
	b, _ := connect(t, srv)
	c, _ := connect(t, srv)
	if got := modes(t, srv); got != "follower,follower,leader" {
		t.Fatalf("modes %s, want follower,follower,leader", got)
	}
	if a.member != 0 || b.member != 1 || c.member != 2 {
		t.Fatalf("clients on servers %d %d %d, want 0 1 2", a.member, b.member, c.member)
	}
	sa := a.SessionID()
	if err := srv.StopServer(0); err != nil {
		t.Fatal(err)
	}
	// The server is gone at once; the client learns of it in a step of its own.
	checkSteps(t, "Pending", srv.Pending(), "[deliver c1, start s0]")
	checkSteps(t, "Faults", srv.Faults(), "[expire c1, disconnect c2, expire c2, disconnect c3, expire c3, stop s1, stop s2]")
	do(t, srv, Deliver, a)
	if a.State() != zk.StateDisconnected || b.State() != zk.StateHasSession || c.State() != zk.StateHasSession {
		t.Fatalf("after stopping s0: states %s %s %s, want only a disconnected", a.State(), b.State(), c.State())
	}
	checkSteps(t, "Pending", srv.Pending(), "[reconnect c1, start s0]")
	checkSteps(t, "Faults", srv.Faults(), "[expire c1, disconnect c2, expire c2, disconnect c3, expire c3, stop s1, stop s2]")
	do(t, srv, Reconnect, a)
	if a.SessionID() != sa || a.member != 1 || a.State() != zk.StateHasSession {
		t.Fatalf("a reconnected on s%d session %#x state %s, want s1, %#x, StateHasSession", a.member, a.SessionID(), a.State(), sa)
	}
	// The leader stops: s1 is left with a majority (s1 and, after the restart, s0) only once s0 is back.
	if err := srv.StartServer(0); err != nil {
		t.Fatal(err)
	}
	srv.Advance(8 * time.Second) // connected clients keep their sessions alive
	if err := srv.StopServer(2); err != nil {
		t.Fatal(err)
	}
	if got := modes(t, srv); got != "follower,leader,stopped" {
		t.Fatalf("modes %s, want follower,leader,stopped", got)
	}
	for _, x := range []*Conn{a, b, c} {
		do(t, srv, Deliver, x)
		if x.State() != zk.StateDisconnected {
			t.Fatalf("client %d after the leader stopped: %s, want disconnected (the election closes every connection)", x.ClientID(), x.State())
		}
	}
	// Deadlines restarted at the election: 10 s sessions survive 10 s more disconnected, not 12.
	srv.Advance(10 * time.Second)
	if !sessionAlive(srv, sa) {
		t.Fatal("a's session expired 10s after the election, want it alive until its deadline (next tick after 10s)")
	}
	srv.Advance(2 * time.Second)
	if sessionAlive(srv, sa) {
		t.Fatal("a's session alive 12s after the election, want it expired")
	}
}

// TestEnsembleQuorumLoss: with a majority stopped no server serves: its clients are disconnected, cannot
// reconnect, no session expires however long it lasts; when a majority is back, every session has a full
// timeout again from then.
func TestEnsembleQuorumLoss(t *testing.T) {
	srv := NewServer(WithManualTransport(), WithEnsemble(3))
	a, _ := connect(t, srv)
	b, _ := connect(t, srv)
	mustCreateManual := func() {
		done := background(t, srv, a, bgCreate(a, "/e", zk.FlagEphemeral))
		runClient(t, srv, a)
		if o := await(t, done); o.err != nil {
			t.Fatal(o.err)
		}
	}
	mustCreateManual()
	for _, i := range []int{2, 1} {
		if err := srv.StopServer(i); err != nil {
			t.Fatal(err)
		}
	}
	if got := modes(t, srv); got != "not serving,stopped,stopped" {
		t.Fatalf("modes %s", got)
	}
	checkSteps(t, "Pending", srv.Pending(), "[deliver c1, deliver c2, start s1, start s2]")
	do(t, srv, Deliver, a)
	do(t, srv, Deliver, b)
	if a.State() != zk.StateDisconnected || b.State() != zk.StateDisconnected {
		t.Fatalf("states %s %s, want both disconnected", a.State(), b.State())
	}
	checkSteps(t, "Pending", srv.Pending(), "[start s1, start s2]")
	checkSteps(t, "Faults", srv.Faults(), "[stop s0]")
	if _, _, err := srv.Connect(10 * time.Second); err == nil || !strings.Contains(err.Error(), "no server is serving") {
		t.Fatalf("Connect without a quorum: %v, want an error saying no server serves", err)
	}
	srv.Advance(time.Hour)
	if !hasNode(srv, "/e") {
		t.Fatal("/e gone during the outage: no session expires without a leader")
	}
	srv.Advance(time.Hour)
	if err := srv.StartServer(1); err != nil {
		t.Fatal(err)
	}
	if got := modes(t, srv); got != "follower,leader,stopped" {
		t.Fatalf("modes %s", got)
	}
	srv.Advance(10 * time.Second)
	if !hasNode(srv, "/e") {
		t.Fatal("/e gone 10s after the quorum came back: the new leader gives every session its full timeout")
	}
	srv.Advance(2 * time.Second)
	if hasNode(srv, "/e") {
		t.Fatal("/e still there 12s after the quorum came back with its owner away, want its session expired")
	}
	if err := srv.StartServer(1); err == nil || !strings.Contains(err.Error(), "is running") {
		t.Fatalf("starting a running server: %v, want an error", err)
	}
	if err := srv.StopServer(7); err == nil || !strings.Contains(err.Error(), "servers 0 to 2") {
		t.Fatalf("stopping server 7: %v, want an error naming the servers", err)
	}
}

// TestEnsembleWire: go-zookeeper with the ensemble's in-process hosts fails over to another server with its
// session when its server stops, and without a quorum sees each server close its connection.
func TestEnsembleWire(t *testing.T) {
	srv := NewServer(WithEnsemble(3))
	defer srv.Close()
	conn, events, err := zk.Connect(srv.Hosts(), 10*time.Second, zk.WithDialer(srv.Dialer()), zk.WithLogger(discardLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	waitState := func(want zk.State) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case ev := <-events:
				if ev.Type == zk.EventSession && ev.State == want {
					return
				}
			case <-deadline:
				t.Fatalf("no %s within 10s (state %s)", want, conn.State())
			}
		}
	}
	waitState(zk.StateHasSession)
	sid := conn.SessionID()
	if _, err := conn.Create("/e", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	first := srv.memberOf(t, sid)
	if err := srv.StopServer(first); err != nil {
		t.Fatal(err)
	}
	waitState(zk.StateDisconnected)
	waitState(zk.StateHasSession)
	if conn.SessionID() != sid || srv.memberOf(t, sid) == first {
		t.Fatalf("after s%d stopped: session %#x on s%d, want %#x elsewhere", first, conn.SessionID(), srv.memberOf(t, sid), sid)
	}
	now := srv.memberOf(t, sid)
	for i := range 3 {
		if i != now && i != first {
			if err := srv.StopServer(i); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitState(zk.StateDisconnected)
	if _, _, err := conn.Exists("/e"); !errors.Is(err, zk.ErrNoServer) && !errors.Is(err, zk.ErrConnectionClosed) {
		t.Fatalf("Exists without a quorum: %v, want no server / connection closed", err)
	}
	if err := srv.StartServer(first); err != nil {
		t.Fatal(err)
	}
	waitState(zk.StateHasSession)
	if ok, _, err := conn.Exists("/e"); err != nil || !ok || conn.SessionID() != sid {
		t.Fatalf("after the quorum came back: exists=%v %v session %#x, want the session %#x and its node", ok, err, conn.SessionID(), sid)
	}
}

// memberOf returns the server a wire session is connected to.
func (s *Server) memberOf(t *testing.T, sid int64) int {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.owner(sid)
	if c == nil || c.link == nil {
		t.Fatalf("session %#x has no connection", sid)
	}
	return c.link.member
}

// TestEnsembleTCP: ListenEnsemble serves each server on its own port; a stopped server's port refuses
// connections and its open ones close; a server without a quorum reads a connect request and closes the
// connection without answering; a restarted server listens on its old port.
func TestEnsembleTCP(t *testing.T) {
	srv := NewServer()
	defer srv.Close()
	addrs, err := srv.ListenEnsemble(3)
	if err != nil {
		t.Fatal(err)
	}
	if srv.Members() != 3 || len(addrs) != 3 {
		t.Fatalf("ListenEnsemble(3): %d members, addresses %v", srv.Members(), addrs)
	}
	nc, err := net.Dial("tcp", addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Write(rawConnectRequest()); err != nil {
		t.Fatal(err)
	}
	if _, err := jute.ReadFrame(nc, jute.MaxBuffer); err != nil {
		t.Fatalf("connect response: %v", err)
	}
	if err := srv.StopServer(0); err != nil {
		t.Fatal(err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := jute.ReadFrame(nc, jute.MaxBuffer); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read on a stopped server's connection: %v, want EOF", err)
	}
	if _, err := net.Dial("tcp", addrs[0]); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial a stopped server: %v, want connection refused", err)
	}
	if err := srv.StopServer(1); err != nil {
		t.Fatal(err)
	}
	nc2, err := net.Dial("tcp", addrs[2])
	if err != nil {
		t.Fatalf("dial the server without a quorum: %v, want accepted", err)
	}
	defer nc2.Close()
	if _, err := nc2.Write(rawConnectRequest()); err != nil {
		t.Fatal(err)
	}
	_ = nc2.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := jute.ReadFrame(nc2, jute.MaxBuffer); !errors.Is(err, io.EOF) {
		t.Fatalf("connect to a server without a quorum: %v, want the connection closed without an answer (EOF)", err)
	}
	if err := srv.StartServer(0); err != nil {
		t.Fatal(err)
	}
	if got := modes(t, srv); got != "follower,stopped,leader" {
		t.Fatalf("modes after restarting s0: %s, want follower,stopped,leader", got)
	}
	nc3, err := net.Dial("tcp", addrs[0])
	if err != nil {
		t.Fatalf("dial the restarted server on its old address: %v", err)
	}
	nc3.Close()
	if _, err := srv.ListenEnsemble(2); err == nil {
		t.Fatal("ListenEnsemble(2) on an ensemble of 3: want an error")
	}
}

func rawConnectRequest() []byte {
	e := jute.NewEncoder(nil)
	(&jute.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, 16)}).Encode(e)
	return jute.AppendFrame(nil, e.Bytes())
}
