package differential

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/zkmodel/zkmodel/jute"
	"github.com/zkmodel/zkmodel/model"
	"github.com/zkmodel/zkmodel/realzk"
)

// These tests speak ZooKeeper's wire protocol byte by byte, to a real server and to the model's listener, and
// check that both answer bad input alike: what each sends back, and whether it closes the connection.

// rawConn is a hand-driven client connection that records what the server sends.
type rawConn struct {
	t  *testing.T
	nc net.Conn
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc}
}

func (c *rawConn) write(b []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

func (c *rawConn) frame(body []byte) { c.write(jute.AppendFrame(nil, body)) }

func (c *rawConn) connect(req jute.ConnectRequest) {
	e := jute.NewEncoder(nil)
	req.Encode(e)
	c.frame(e.Bytes())
}

func (c *rawConn) request(r jute.Request) {
	c.t.Helper()
	e := jute.NewEncoder(nil)
	if err := jute.EncodeRequest(e, &r); err != nil {
		c.t.Fatal(err)
	}
	c.frame(e.Bytes())
}

// connectResponse reads the connect response, or fails.
func (c *rawConn) connectResponse() jute.ConnectResponse {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := jute.ReadFrame(c.nc, jute.MaxBuffer)
	if err != nil {
		c.t.Fatalf("no connect response: %v", err)
	}
	r, err := jute.DecodeConnectResponse(b)
	if err != nil {
		c.t.Fatal(err)
	}
	return r
}

// observe reads what the server sends and renders it, with zxids and session ids reduced to what both servers
// share. Whether the server keeps the connection open is decided by a ping, not by how long it stays quiet:
// once a session exists (first is false, or the connect response just read granted one), observe waits for a
// short spell in which a server that closes usually does so, then sends a ping and reads until its reply
// ("(open)": a server answers a session's requests in order, so every reply to what came before has arrived)
// or until the server closes the connection ("(closed)"). The spell only keeps the ping from racing a close
// (a close with the ping unread resets the connection); its length decides nothing. Before a session there is
// nothing to ping; observe reads until the server closes. A server that does neither within hangAfter is
// reported as silent, which fails the comparison with a clear line rather than hanging the test.
func (c *rawConn) observe(first bool) []string {
	var out []string
	pinged := false
	deadline := time.Now().Add(hangAfter)
	if !first {
		deadline = time.Now().Add(beforePing)
	}
	for {
		_ = c.nc.SetReadDeadline(deadline)
		b, err := jute.ReadFrame(c.nc, 4<<20)
		var ne net.Error
		switch {
		case errors.As(err, &ne) && ne.Timeout() && !first && !pinged:
			c.ping()
			pinged, deadline = true, time.Now().Add(hangAfter)
			continue
		case errors.As(err, &ne) && ne.Timeout():
			return append(out, fmt.Sprintf("(silent for %v: neither answered a ping nor closed)", hangAfter))
		case err != nil:
			// EOF or a reset: which of the two a client sees depends on whether the server had read all it
			// was sent when it closed, a matter of timing, not of the server's answer.
			return append(out, "(closed)")
		}
		if first {
			first = false
			r, err := jute.DecodeConnectResponse(b)
			if err != nil {
				out = append(out, fmt.Sprintf("undecodable connect response %x", b))
				continue
			}
			out = append(out, fmt.Sprintf("connect timeout=%d session=%t passwd=%d zero=%t readOnly=%t/%t",
				r.TimeOut, r.SessionID != 0, len(r.Passwd), slices.Equal(r.Passwd, make([]byte, 16)), r.HasReadOnly, r.ReadOnly))
			if r.SessionID != 0 {
				deadline = time.Now().Add(beforePing)
			}
			continue
		}
		d := jute.NewDecoder(b)
		h := jute.DecodeReplyHeader(d)
		if h.Xid == jute.XidPing {
			return append(out, "(open)")
		}
		zxid := "current"
		if h.Zxid <= 0 {
			zxid = fmt.Sprint(h.Zxid)
		}
		out = append(out, fmt.Sprintf("reply xid=%d zxid=%s err=%d body=%d bytes", h.Xid, zxid, h.Err, d.Remaining()))
	}
}

// ping sends the ping observe waits for. A failed write is not an error here: the server may have closed the
// connection already, which the read that follows reports.
func (c *rawConn) ping() {
	e := jute.NewEncoder(nil)
	if err := jute.EncodeRequest(e, &jute.Request{Header: jute.RequestHeader{Xid: jute.XidPing, Type: jute.OpPing}}); err != nil {
		c.t.Fatal(err)
	}
	_, _ = c.nc.Write(jute.AppendFrame(nil, e.Bytes()))
}

// hangAfter bounds how long observe waits for a ping's reply or the connection's end: far beyond any
// server's answer on a loaded machine, and only ever reached when a server really stays silent.
const hangAfter = 30 * time.Second

// beforePing is the spell observe waits before it pings (see observe).
const beforePing = 250 * time.Millisecond

func newSession(t *testing.T, addr string) (*rawConn, jute.ConnectResponse) {
	c := dialRaw(t, addr)
	c.connect(jute.ConnectRequest{TimeOut: 10000})
	return c, c.connectResponse()
}

// wireBadInput are the scenarios; each returns its observations.
var wireBadInput = []struct {
	name string
	run  func(t *testing.T, addr string) []string
}{
	{"garbage instead of a connect request", func(t *testing.T, addr string) []string {
		c := dialRaw(t, addr)
		c.frame([]byte{1, 2, 3})
		return c.observe(true)
	}},
	{"a request before the connect request", func(t *testing.T, addr string) []string {
		c := dialRaw(t, addr)
		c.request(jute.Request{Header: jute.RequestHeader{Xid: 1, Type: jute.OpGetData}, Path: "/"})
		return c.observe(true)
	}},
	{"a first frame over jute.maxbuffer", func(t *testing.T, addr string) []string {
		c := dialRaw(t, addr)
		c.write([]byte{0, 0x10, 0, 0})
		return c.observe(true)
	}},
	{"a connect request with the readOnly byte", func(t *testing.T, addr string) []string {
		c := dialRaw(t, addr)
		c.connect(jute.ConnectRequest{TimeOut: 10000, HasReadOnly: true})
		return c.observe(true)
	}},
	{"a connect request asking for read-only mode", func(t *testing.T, addr string) []string {
		c := dialRaw(t, addr)
		c.connect(jute.ConnectRequest{TimeOut: 10000, HasReadOnly: true, ReadOnly: true})
		return c.observe(true)
	}},
	{"a client that has seen a later zxid", func(t *testing.T, addr string) []string {
		c := dialRaw(t, addr)
		c.connect(jute.ConnectRequest{TimeOut: 10000, LastZxidSeen: 1 << 60})
		return c.observe(true)
	}},
	{"a wrong password, then the right one", func(t *testing.T, addr string) []string {
		_, sess := newSession(t, addr)
		bad := dialRaw(t, addr)
		bad.connect(jute.ConnectRequest{TimeOut: 10000, SessionID: sess.SessionID, Passwd: make([]byte, 16)})
		out := bad.observe(true)
		good := dialRaw(t, addr)
		good.connect(jute.ConnectRequest{TimeOut: 10000, SessionID: sess.SessionID, Passwd: sess.Passwd})
		r := good.connectResponse()
		return append(out, fmt.Sprintf("then resumed the same session: %t", r.SessionID == sess.SessionID))
	}},
	{"an unknown session", func(t *testing.T, addr string) []string {
		_, sess := newSession(t, addr)
		c := dialRaw(t, addr)
		c.connect(jute.ConnectRequest{TimeOut: 10000, SessionID: sess.SessionID ^ 0x5a5a, Passwd: sess.Passwd})
		return c.observe(true)
	}},
	{"an unknown session, from a client that sends the readOnly byte", func(t *testing.T, addr string) []string {
		_, sess := newSession(t, addr)
		c := dialRaw(t, addr)
		c.connect(jute.ConnectRequest{TimeOut: 10000, SessionID: sess.SessionID ^ 0x5a5a, Passwd: sess.Passwd, HasReadOnly: true})
		return c.observe(true)
	}},
	{"a frame over jute.maxbuffer after the connect", func(t *testing.T, addr string) []string {
		c, sess := newSession(t, addr)
		c.write([]byte{0, 0x10, 0, 0, 0, 0, 0, 1, 0, 0, 0, 5})
		out := c.observe(false)
		again := dialRaw(t, addr)
		again.connect(jute.ConnectRequest{TimeOut: 10000, SessionID: sess.SessionID, Passwd: sess.Passwd})
		r := again.connectResponse()
		return append(out, fmt.Sprintf("then resumed the same session: %t", r.SessionID == sess.SessionID))
	}},
	{"a frame of exactly jute.maxbuffer", func(t *testing.T, addr string) []string {
		c, _ := newSession(t, addr)
		data := make([]byte, jute.MaxBuffer-8-4-1-4-4)
		c.request(jute.Request{Header: jute.RequestHeader{Xid: 1, Type: jute.OpSetData}, Path: "/", Data: data, Version: -1})
		out := c.observe(false)
		c.request(jute.Request{Header: jute.RequestHeader{Xid: 2, Type: jute.OpSetData}, Path: "/", Data: []byte{}, Version: -1})
		return append(out, c.observe(false)...)
	}},
	{"a frame too short for a request header", func(t *testing.T, addr string) []string {
		c, _ := newSession(t, addr)
		c.frame([]byte{0, 0, 0})
		return c.observe(false)
	}},
	{"an unknown opcode", func(t *testing.T, addr string) []string {
		c, _ := newSession(t, addr)
		c.frame([]byte{0, 0, 0, 7, 0, 0, 0, 99})
		return c.observe(false)
	}},
	{"undecodable bodies", func(t *testing.T, addr string) []string {
		c, _ := newSession(t, addr)
		var out []string
		for _, op := range []int32{jute.OpGetData, jute.OpExists, jute.OpCreate, jute.OpSetData, jute.OpMulti, jute.OpSetWatches} {
			c.frame([]byte{0, 0, 0, 9, 0, 0, 0, byte(op)})
			out = append(out, c.observe(false)...)
		}
		return out
	}},
}

// TestWireBadInput runs every scenario on the real ensemble's first server and on the model's TCP listener;
// both must answer alike.
func TestWireBadInput(t *testing.T) {
	e := realzk.Shared(t)
	srv := model.NewServer()
	t.Cleanup(func() { _ = srv.Close() })
	fake, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range wireBadInput {
		t.Run(sc.name, func(t *testing.T) {
			want := sc.run(t, e.Addrs()[0])
			got := sc.run(t, fake)
			if !slices.Equal(got, want) {
				t.Fatalf("the model answers\n  %q\nZooKeeper answers\n  %q", got, want)
			}
			if testing.Verbose() {
				t.Logf("both: %q", got)
			}
		})
	}
}
