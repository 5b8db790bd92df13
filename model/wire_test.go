package model_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/jute"
	"github.com/zkmodel/zkmodel/model"
)

var openACL = zk.WorldACL(zk.PermAll)

func connectZK(t *testing.T, srv *model.Server) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	conn, events, err := model.ConnectZK(srv, 10*time.Second)
	if err != nil {
		t.Fatalf("ConnectZK: %v", err)
	}
	t.Cleanup(conn.Close)
	return conn, events
}

// rawSession dials srv in-process (a Dialer) and opens a new session on the connection, which is closed when
// the test ends.
func rawSession(t *testing.T, srv *model.Server) (net.Conn, jute.ConnectResponse) {
	t.Helper()
	nc, err := srv.Dialer()("tcp", "127.0.0.1:2181", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	if err := jute.WriteFrame(nc, newSessionRequest()); err != nil {
		t.Fatalf("send the connect request: %v", err)
	}
	b, err := jute.ReadFrame(nc, jute.MaxBuffer)
	if err != nil {
		t.Fatalf("read the connect response: %v", err)
	}
	r, err := jute.DecodeConnectResponse(b)
	if err != nil {
		t.Fatal(err)
	}
	return nc, r
}

// newSessionRequest is the body of a raw connect request for a new session with a 10 s timeout.
func newSessionRequest() []byte {
	e := jute.NewEncoder(nil)
	(&jute.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, 16)}).Encode(e)
	return e.Bytes()
}

func waitEvent(t *testing.T, ch <-chan zk.Event, what string, match func(zk.Event) bool) zk.Event {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("waiting for %s: the channel closed", what)
			}
			if match(ev) {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %s after 10s", what)
		}
	}
}

// TestWireSharesTheServer: a *zk.Conn on the wire and a *model.Conn see each other's nodes, and watches fire
// across.
func TestWireSharesTheServer(t *testing.T) {
	srv := model.NewServer()
	defer srv.Close()
	real, _ := connectZK(t, srv)
	fake, _, err := srv.Connect(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	if _, err := real.Create("/a", []byte("wire"), 0, openACL); err != nil {
		t.Fatal(err)
	}
	data, _, watch, err := fake.GetW("/a")
	if err != nil || string(data) != "wire" {
		t.Fatalf("model client reads %q, %v; want the wire client's node", data, err)
	}
	_, _, wireWatch, err := real.ChildrenW("/")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := real.Set("/a", []byte("again"), -1); err != nil {
		t.Fatal(err)
	}
	if ev := <-watch; ev.Type != zk.EventNodeDataChanged || ev.Path != "/a" {
		t.Fatalf("model client's watch got %+v, want NodeDataChanged /a", ev)
	}
	if _, err := fake.Create("/b", nil, 0, openACL); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-wireWatch:
		if ev.Type != zk.EventNodeChildrenChanged || ev.Path != "/" {
			t.Fatalf("wire client's watch got %+v, want NodeChildrenChanged /", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the wire client's child watch did not fire after the model client's create")
	}
	if !strings.Contains(srv.Dump(), "node /b ") {
		t.Fatalf("Dump does not show /b:\n%s", srv.Dump())
	}
}

// TestWireSessionsFollowTheSeed: the same seed gives the same session ids and passwords, another seed others.
func TestWireSessionsFollowTheSeed(t *testing.T) {
	session := func(seed int64) (int64, []byte) {
		srv := model.NewServer(model.WithSeed(seed))
		defer srv.Close()
		_, r := rawSession(t, srv)
		return r.SessionID, r.Passwd
	}
	id1, pw1 := session(7)
	id2, pw2 := session(7)
	id3, pw3 := session(8)
	if id1 != id2 || !bytes.Equal(pw1, pw2) {
		t.Fatalf("seed 7 twice: sessions %#x/%x and %#x/%x, want equal", id1, pw1, id2, pw2)
	}
	if id1 == id3 || bytes.Equal(pw1, pw3) {
		t.Fatalf("seeds 7 and 8 give the same session %#x or password %x", id1, pw1)
	}
	if len(pw1) != 16 {
		t.Fatalf("password of %d bytes, want 16 as ZooKeeper's", len(pw1))
	}
}

// TestWireExpiry: Server.Expire closes the wire connection; go-zookeeper reconnects, learns of the expiry
// exactly as from a real server (StateExpired), and opens a new session. A dropped connection starts the
// session's timer on the virtual clock; a connected client's session survives the clock moving.
func TestWireExpiry(t *testing.T) {
	srv := model.NewServer()
	defer srv.Close()
	conn, events := connectZK(t, srv)
	old := conn.SessionID()
	if _, err := conn.Create("/e", nil, zk.FlagEphemeral, openACL); err != nil {
		t.Fatal(err)
	}
	srv.Advance(time.Hour) // connected: the session lives
	if ok, _, err := conn.Exists("/e"); err != nil || !ok {
		t.Fatalf("after an hour with the client connected: Exists(/e) = %t, %v; want the session alive", ok, err)
	}
	srv.Expire(old)
	waitEvent(t, events, "StateExpired", func(ev zk.Event) bool { return ev.Type == zk.EventSession && ev.State == zk.StateExpired })
	waitEvent(t, events, "a new session", func(ev zk.Event) bool { return ev.Type == zk.EventSession && ev.State == zk.StateHasSession })
	if conn.SessionID() == old || conn.SessionID() == 0 {
		t.Fatalf("session %#x after the expiry of %#x, want a new one", conn.SessionID(), old)
	}
	if ok, _, err := conn.Exists("/e"); err != nil || ok {
		t.Fatalf("Exists(/e) after expiry = %t, %v; want the ephemeral gone", ok, err)
	}

	// A connection the server drops starts the timer: with the clock past the timeout the session expires.
	sid := conn.SessionID()
	srv.Close() // no more connections: the client cannot come back
	srv.Advance(21 * time.Second)
	if strings.Contains(srv.Dump(), fmt.Sprintf("session %#x ", sid)) {
		t.Fatalf("session %#x still alive 21s after its connection dropped:\n%s", sid, srv.Dump())
	}
}

// TestWireClientThatStopsReading: a client that sends requests and never reads is dropped once the server has
// more than its bound queued for it; other clients are served meanwhile, and nothing is half-applied.
func TestWireClientThatStopsReading(t *testing.T) {
	srv := model.NewServer()
	defer srv.Close()
	addr, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	other, _ := connectZK(t, srv)
	big := bytes.Repeat([]byte("x"), 1<<20-100)
	if _, err := other.Create("/big", big, 0, openACL); err != nil {
		t.Fatal(err)
	}
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := jute.WriteFrame(nc, newSessionRequest()); err != nil {
		t.Fatal(err)
	}
	// 64 reads of a 1 MiB node: 64 MiB of replies, far over any socket buffer and the server's bound.
	var wg sync.WaitGroup
	wg.Add(1)
	var writeErr error
	go func() {
		defer wg.Done()
		for i := int32(1); i <= 64 && writeErr == nil; i++ {
			e := jute.NewEncoder(nil)
			_ = jute.EncodeRequest(e, &jute.Request{Header: jute.RequestHeader{Xid: i, Type: jute.OpGetData}, Path: "/big"})
			writeErr = jute.WriteFrame(nc, e.Bytes())
		}
	}()
	for i := range 20 { // the other client is served all along
		if _, err := other.Set("/big", big, -1); err != nil {
			t.Fatalf("other client's write %d while one client stops reading: %v", i, err)
		}
	}
	wg.Wait()
	// The server dropped the connection: reading now ends in an error after what was written before the drop.
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var readErr error
	for readErr == nil {
		_, readErr = jute.ReadFrame(nc, 4<<20)
	}
	var ne net.Error
	if errors.As(readErr, &ne) && ne.Timeout() {
		t.Fatalf("the server kept the connection of a client that stopped reading")
	}
	if _, st, err := other.Get("/big"); err != nil || st.Version != 20 {
		t.Fatalf("after the drop: Get(/big) version %d, %v; want 20", st.Version, err)
	}
}

// TestWireRepliesOverTheOutLimit: a reply larger than what the server queues for a client that stops
// reading (8 MiB) is sent whole, as ZooKeeper 3.8 sends a 20 MB getChildren reply (measured), and so are two
// of them pipelined with small replies around them; a client that stops reading while such replies pile up
// is dropped all the same.
func TestWireRepliesOverTheOutLimit(t *testing.T) {
	srv := model.NewServer()
	defer srv.Close()
	admin, _, err := srv.Connect(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	// Nine children with names of a million bytes: each create is under jute.maxbuffer, the list is 9 MB.
	if _, err := admin.Create("/wide", nil, 0, openACL); err != nil {
		t.Fatal(err)
	}
	const children, nameLen = 9, 1_000_000
	for i := range children {
		name := fmt.Sprintf("%d-%s", i, strings.Repeat("n", nameLen-2))
		if _, err := admin.Create("/wide/"+name, nil, 0, openACL); err != nil {
			t.Fatalf("create child %d: %v", i, err)
		}
	}
	request := func(xid, op int32, path string) []byte {
		e := jute.NewEncoder(nil)
		if err := jute.EncodeRequest(e, &jute.Request{Header: jute.RequestHeader{Xid: xid, Type: op}, Path: path}); err != nil {
			t.Fatal(err)
		}
		return e.Bytes()
	}

	t.Run("a client that reads", func(t *testing.T) {
		nc, _ := rawSession(t, srv)
		ops := []int32{jute.OpExists, jute.OpGetChildren, jute.OpGetData, jute.OpGetChildren2, jute.OpExists}
		go func() { // the requests all at once: the replies are queued together, whatever the writer's pace
			for i, op := range ops {
				if jute.WriteFrame(nc, request(int32(i+1), op, "/wide")) != nil {
					return // the reads below report what went wrong
				}
			}
		}()
		_ = nc.SetReadDeadline(time.Now().Add(30 * time.Second))
		for i, op := range ops {
			body, err := jute.ReadFrame(nc, 16<<20)
			if err != nil {
				t.Fatalf("reply %d (opcode %d): %v", i+1, op, err)
			}
			d := jute.NewDecoder(body)
			if h := jute.DecodeReplyHeader(d); h.Xid != int32(i+1) || h.Err != 0 {
				t.Fatalf("reply %d (opcode %d): header %+v, want xid %d and no error", i+1, op, h, i+1)
			}
			if op != jute.OpGetChildren && op != jute.OpGetChildren2 {
				continue
			}
			if names := d.Strings(); d.Err() != nil || len(names) != children || len(body) < children*nameLen {
				t.Fatalf("reply %d (opcode %d): %d bytes, %d names (%v); want all %d children", i+1, op, len(body), len(names), d.Err(), children)
			}
		}
	})

	t.Run("a client that stops reading", func(t *testing.T) {
		nc, _ := rawSession(t, srv)
		// The server reads a request, applies it and queues its reply before it reads the next one; the
		// client never reads: the replies pile up (the first is being written, in vain) until the server
		// drops the connection, and the client's next request fails to be written.
		var written int
		for written < 64 {
			if jute.WriteFrame(nc, request(int32(written+1), jute.OpGetChildren, "/wide")) != nil {
				break
			}
			written++
		}
		if written == 64 {
			t.Fatalf("the server read 64 getChildren requests, 9 MB of reply each, from a client that reads nothing, and kept the connection")
		}
		if _, _, err := admin.Exists("/wide"); err != nil {
			t.Fatalf("another client after the drop: Exists(/wide) = %v", err)
		}
	})
}

// TestWireCloseAndListen: several listeners serve the same state; Close stops them all, closes every wire
// connection, makes Dialers fail, and is idempotent.
func TestWireCloseAndListen(t *testing.T) {
	srv := model.NewServer()
	a1, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a2, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c1, _ := dialTCP(t, []string{a1}, 10*time.Second)
	defer c1.Close()
	c2, ev2 := dialTCP(t, []string{a2}, 10*time.Second)
	defer c2.Close()
	if _, err := c1.Create("/x", nil, 0, openACL); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := c2.Exists("/x"); err != nil || !ok {
		t.Fatalf("second listener: Exists(/x) = %t, %v; want the first listener's node", ok, err)
	}
	dial := srv.Dialer()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	waitEvent(t, ev2, "StateDisconnected", func(ev zk.Event) bool { return ev.State == zk.StateDisconnected })
	if _, err := dial("tcp", "127.0.0.1:2181", time.Second); err == nil {
		t.Fatal("a Dialer dialled after Close")
	}
	if _, err := net.DialTimeout("tcp", a1, time.Second); err == nil {
		t.Fatal("the listener accepts connections after Close")
	}
	if _, err := srv.Listen("127.0.0.1:0"); err == nil {
		t.Fatal("Listen after Close succeeded")
	}
	if _, _, err := model.ConnectZK(srv, 4*time.Second); err == nil {
		t.Fatal("ConnectZK after Close succeeded")
	}
}

// TestWireObserver: wire steps are recorded in the same readable form as the model client's.
func TestWireObserver(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	srv := model.NewServer(model.WithObserver(func(r model.Record) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, r.Kind+" "+r.Detail)
	}))
	defer srv.Close()
	conn, _ := connectZK(t, srv)
	if _, err := conn.Create("/lock", nil, 0, openACL); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create("/lock/n-", nil, zk.FlagEphemeralSequential, openACL); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	text := strings.Join(lines, "\n")
	mu.Unlock()
	for _, want := range []string{
		"connect session ",
		`send create /lock/n- flags=3 data=""`,
		`apply create /lock/n- flags=3 data="" -> /lock/n-0000000000 zxid=3`,
		`reply create /lock/n- flags=3 data=""`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no record %q in:\n%s", want, text)
		}
	}
}
