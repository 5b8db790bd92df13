package realzk

// The behaviours of a real ZooKeeper 3.8 that the model leaves out on purpose (docs/fidelity.md, "Known
// differences"): quotas and read-only mode. These tests pin what the real server does, so that
// docs/fidelity.md's description of it stays true when the Debian package moves on.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/jute"
)

// rawSession is a bare ZooKeeper connection made with package jute, for what go-zookeeper cannot ask for (a
// read-only session) or hides (the raw error code of a reply).
type rawSession struct {
	nc  net.Conn
	xid int32
}

// dialRaw connects to addr and asks for a new session; readOnly sets the connect request's readOnly byte, as
// Java clients do. It returns the server's answer, or io.EOF-like errors when the server refuses the session
// by closing the connection.
func dialRaw(ctx context.Context, addr string, readOnly bool) (*rawSession, jute.ConnectResponse, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, jute.ConnectResponse{}, fmt.Errorf("dial %s: %w", addr, err)
	}
	if deadline, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(deadline)
	}
	req := jute.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, 16), ReadOnly: readOnly, HasReadOnly: true}
	e := jute.NewEncoder(nil)
	req.Encode(e)
	if err := jute.WriteFrame(nc, e.Bytes()); err != nil {
		nc.Close()
		return nil, jute.ConnectResponse{}, fmt.Errorf("send connect request: %w", err)
	}
	frame, err := jute.ReadFrame(nc, 1<<20)
	if err != nil {
		nc.Close()
		return nil, jute.ConnectResponse{}, fmt.Errorf("read connect response: %w", err)
	}
	if len(frame) == 16 { // xid, zxid, err: a reply header where the connect response should be
		h := jute.DecodeReplyHeader(jute.NewDecoder(frame))
		if h.Xid == 0 && h.Err == -119 {
			nc.Close()
			return nil, jute.ConnectResponse{}, &notReadOnlyConnect{zxid: h.Zxid}
		}
	}
	resp, err := jute.DecodeConnectResponse(frame)
	if err != nil {
		nc.Close()
		return nil, jute.ConnectResponse{}, fmt.Errorf("%w (frame %x)", err, frame)
	}
	return &rawSession{nc: nc}, resp, nil
}

// do sends one request and returns its reply's error code (0 for success).
func (s *rawSession) do(r jute.Request) (int32, error) {
	s.xid++
	r.Header.Xid = s.xid
	e := jute.NewEncoder(nil)
	if err := jute.EncodeRequest(e, &r); err != nil {
		return 0, fmt.Errorf("encode request: %w", err)
	}
	if err := jute.WriteFrame(s.nc, e.Bytes()); err != nil {
		return 0, fmt.Errorf("send request: %w", err)
	}
	for {
		frame, err := jute.ReadFrame(s.nc, 1<<20)
		if err != nil {
			return 0, fmt.Errorf("read reply: %w", err)
		}
		h := jute.DecodeReplyHeader(jute.NewDecoder(frame))
		if h.Xid == s.xid {
			return h.Err, nil
		}
	}
}

func (s *rawSession) close() { s.nc.Close() }

// notReadOnlyConnect is a read-only server's answer to a connect request it cannot turn into a session: a
// reply header with NotReadOnly in place of a connect response.
type notReadOnlyConnect struct{ zxid int64 }

func (e *notReadOnlyConnect) Error() string {
	return fmt.Sprintf("connect answered with a NotReadOnly reply header (zxid %#x) instead of a connect response", e.zxid)
}

// TestRealQuotas pins ZooKeeper 3.8's quotas, which the model does not keep: the limits a client (zkCli's
// setquota) writes under /zookeeper/quota are soft unless the server runs with zookeeper.enforceQuota=true;
// then a create or setData past a hard limit fails with QuotaExceeded (code -125, which go-zookeeper v1.0.4
// has no error value for), and the count includes the quota's own node.
func TestRealQuotas(t *testing.T) {
	for _, enforce := range []bool{false, true} {
		t.Run(fmt.Sprintf("enforceQuota=%t", enforce), func(t *testing.T) {
			e := ForTestWith(t, Config{Servers: 1, SystemProperties: map[string]string{"zookeeper.enforceQuota": fmt.Sprint(enforce)}})
			ctx := testContext(t, time.Minute)
			c, _ := connect(t, e.Addrs(), 10*time.Second)
			for _, p := range []string{"/q", "/zookeeper/quota/q"} {
				if _, err := c.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
					t.Fatalf("create %s: %v", p, err)
				}
			}
			// As zkCli's "setquota -N 3 /q" writes them: at most 3 nodes under /q, /q included.
			if _, err := c.Create("/zookeeper/quota/q/zookeeper_limits", []byte("count=-1,bytes=-1;countHardLimit=3;byteHardLimit=-1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatalf("create limits: %v", err)
			}
			if _, err := c.Create("/zookeeper/quota/q/zookeeper_stats", []byte("count=1,bytes=0"), 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatalf("create stats: %v", err)
			}
			raw, _, err := dialRaw(ctx, e.Addrs()[0], false)
			if err != nil {
				t.Fatal(err)
			}
			defer raw.close()
			var codes []int32
			for _, name := range []string{"a", "b", "c"} {
				code, err := raw.do(jute.Request{Header: jute.RequestHeader{Type: jute.OpCreate}, Path: "/q/" + name, ACL: zk.WorldACL(zk.PermAll)})
				if err != nil {
					t.Fatal(err)
				}
				codes = append(codes, code)
			}
			want := []int32{0, 0, 0}
			if enforce {
				want = []int32{0, 0, -125} // /q, /q/a, /q/b make 3
			}
			if fmt.Sprint(codes) != fmt.Sprint(want) {
				t.Errorf("creating /q/a, /q/b, /q/c under a 3-node hard quota: codes %v, want %v", codes, want)
			}
			stats, _, err := c.Get("/zookeeper/quota/q/zookeeper_stats")
			if err != nil {
				t.Fatal(err)
			}
			wantStats := fmt.Sprintf("count=%d,bytes=0", 1+countOK(codes))
			if !bytes.Equal(stats, []byte(wantStats)) {
				t.Errorf("zookeeper_stats %q, want %q: the server counts what is under the quota", stats, wantStats)
			}
		})
	}
}

func countOK(codes []int32) int {
	n := 0
	for _, c := range codes {
		if c == 0 {
			n++
		}
	}
	return n
}

// TestRealReadOnlyMode pins ZooKeeper 3.8's read-only mode, which the model does not have. With
// readonlymode.enabled=true a server that loses its quorum starts a read-only server (the "srvr" four-letter
// word then says "read-only"). It refuses a session to a client that does not ask for read-only: it closes the
// connection before any answer, and go-zookeeper never asks. A client that does ask gets a new session only
// when the server runs with localSessionsEnabled=true; without local sessions (the default) the server answers
// the connect request with a bare reply header carrying NotReadOnly (code -119), which Java clients and
// kazoo 2.8 cannot decode (zkCli.sh -r and kazoo's read_only=True see the connection drop, over and over).
// On a read-only session reads are answered and every write fails with NotReadOnly.
func TestRealReadOnlyMode(t *testing.T) {
	for _, local := range []bool{false, true} {
		t.Run(fmt.Sprintf("localSessionsEnabled=%t", local), func(t *testing.T) {
			testReadOnlyMode(t, local)
		})
	}
}

func testReadOnlyMode(t *testing.T, localSessions bool) {
	cfg := Config{Servers: 3, SystemProperties: map[string]string{"readonlymode.enabled": "true"}}
	if localSessions {
		cfg.ExtraConfig = map[string]string{"localSessionsEnabled": "true"}
	}
	e := ForTestWith(t, cfg)
	ctx := testContext(t, 2*time.Minute)
	c, _ := connect(t, e.Addrs(), 10*time.Second)
	if _, err := c.Create("/ro", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create /ro: %v", err)
	}
	c.Close()
	leader, err := e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	keep := (leader + 1) % e.Servers()
	for i := range e.Servers() {
		if i != keep {
			if err := e.Kill(i); err != nil {
				t.Fatal(err)
			}
		}
	}
	for {
		mode, _ := e.Mode(ctx, keep)
		if mode == "read-only" {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("server %d never went read-only after losing its quorum (last mode %q)", keep, mode)
		case <-time.After(100 * time.Millisecond):
		}
	}
	addr := e.Addrs()[keep]

	if s, resp, err := dialRaw(ctx, addr, false); err == nil {
		s.close()
		t.Fatalf("a read-only server gave a session to a client that did not ask for read-only: %+v", resp)
	} else if !errors.Is(err, io.EOF) {
		t.Fatalf("connect without read-only: %v; want the server to close the connection", err)
	}

	s, resp, err := dialRaw(ctx, addr, true)
	if !localSessions {
		var refused *notReadOnlyConnect
		if !errors.As(err, &refused) {
			if err == nil {
				s.close()
			}
			t.Fatalf("connect asking for read-only without local sessions: %v (response %+v); want a NotReadOnly reply header", err, resp)
		}
		return
	}
	if err != nil {
		t.Fatalf("connect asking for read-only: %v", err)
	}
	defer s.close()
	if !resp.ReadOnly || resp.SessionID == 0 {
		t.Fatalf("connect response %+v; want a read-only session", resp)
	}
	read, err := s.do(jute.Request{Header: jute.RequestHeader{Type: jute.OpGetData}, Path: "/ro"})
	if err != nil {
		t.Fatal(err)
	}
	write, err := s.do(jute.Request{Header: jute.RequestHeader{Type: jute.OpSetData}, Path: "/ro", Data: []byte("y"), Version: -1})
	if err != nil {
		t.Fatal(err)
	}
	create, err := s.do(jute.Request{Header: jute.RequestHeader{Type: jute.OpCreate}, Path: "/ro2", ACL: zk.WorldACL(zk.PermAll)})
	if err != nil {
		t.Fatal(err)
	}
	if read != 0 || write != -119 || create != -119 {
		t.Errorf("on a read-only session: getData %d, setData %d, create %d; want 0, -119, -119", read, write, create)
	}
}
