package conformance

// This file is the wire rule: a server answers the frames real clients sent to Debian's ZooKeeper 3.8 with the
// frames that server sent back, frame for frame, after normalising what legitimately differs (wire/*.rec,
// recorded by a proxy between the clients and a real 3.8 server).

import (
	"bufio"
	"bytes"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/jute"
)

// wireRecordingFiles holds the sessions recorded between clients and a real ZooKeeper 3.8 server.
//
//go:embed wire/*.rec
var wireRecordingFiles embed.FS

// WireRecording is what went over one or more connections between clients and a real ZooKeeper 3.8 server
// (conformance/wire/<Name>), frame by frame in the order a recording proxy saw them: each client frame, then the
// server frames that came before the next client frame.
type WireRecording struct {
	// Name is the recording's file name, e.g. "gozk-session.rec".
	Name  string
	Steps []WireStep
}

// WireStep is one client frame of a recording and the server frames that followed it.
type WireStep struct {
	// Conn numbers the client's connection: 1, 2, …
	Conn int
	// Frame is the frame without its length prefix.
	Frame   []byte
	Replies []WireFrame
}

// WireFrame is a server frame of a recording, on connection Conn.
type WireFrame struct {
	Conn  int
	Frame []byte
}

// parseDirection reads "C", "S" (connection 1), "C2", "S3", ….
func parseDirection(dir string) (client bool, conn int, ok bool) {
	if dir == "" || (dir[0] != 'C' && dir[0] != 'S') {
		return false, 0, false
	}
	conn = 1
	if len(dir) > 1 {
		if _, err := fmt.Sscanf(dir[1:], "%d", &conn); err != nil || conn < 1 {
			return false, 0, false
		}
	}
	return dir[0] == 'C', conn, true
}

// WireRecordings returns the recorded sessions, in name order. An unreadable recording is an error naming its
// line.
func WireRecordings() ([]WireRecording, error) {
	names, err := fs.Glob(wireRecordingFiles, "wire/*.rec")
	if err != nil {
		return nil, fmt.Errorf("list the wire recordings: %w", err)
	}
	var recs []WireRecording
	for _, name := range names {
		data, err := fs.ReadFile(wireRecordingFiles, name)
		if err != nil {
			return nil, fmt.Errorf("read the wire recording %s: %w", name, err)
		}
		rec, err := parseWireRecording(path.Base(name), data)
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	return recs, nil
}

// parseWireRecording reads a recording: lines `C<n> <hex>` (a client frame on connection n, 1 when n is
// left out) and `S<n> <hex>` (a server frame), blank lines and # comments.
func parseWireRecording(name string, data []byte) (WireRecording, error) {
	rec := WireRecording{Name: name}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 4<<20)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		dir, hexFrame, ok := strings.Cut(text, " ")
		frame, err := hex.DecodeString(hexFrame)
		client, conn, dirOK := parseDirection(dir)
		if !ok || err != nil || !dirOK {
			return rec, fmt.Errorf("wire recording %s:%d: want `C<n> <hex>` or `S<n> <hex>`, got %.40q", name, line, text)
		}
		switch {
		case client:
			rec.Steps = append(rec.Steps, WireStep{Conn: conn, Frame: frame})
		case len(rec.Steps) == 0:
			return rec, fmt.Errorf("wire recording %s:%d: a server frame before the first client frame", name, line)
		default:
			last := &rec.Steps[len(rec.Steps)-1]
			last.Replies = append(last.Replies, WireFrame{conn, frame})
		}
	}
	if err := sc.Err(); err != nil {
		return rec, fmt.Errorf("read wire recording %s: %w", name, err)
	}
	if len(rec.Steps) == 0 {
		return rec, fmt.Errorf("wire recording %s: no client frame", name)
	}
	return rec, nil
}

// normaliser renders server frames as text with what legitimately differs between two servers replaced:
// zxids become offsets from the session's first reply's zxid, times and session ids and passwords
// placeholders, and children are sorted (a real server lists them in hash order).
type normaliser struct {
	types   map[int32]int32 // xid → request type, from the client's frames
	session int64
	base    int64
}

func (n *normaliser) zxid(z int64) string {
	if z <= 0 || n.base == 0 {
		return fmt.Sprint(z)
	}
	return fmt.Sprintf("z%+d", z-n.base)
}

func (n *normaliser) stat(s zk.Stat) string {
	owner := fmt.Sprint(s.EphemeralOwner)
	if s.EphemeralOwner == n.session && n.session != 0 {
		owner = "session"
	}
	return fmt.Sprintf("{czxid=%s mzxid=%s pzxid=%s version=%d cversion=%d aversion=%d owner=%s len=%d children=%d}",
		n.zxid(s.Czxid), n.zxid(s.Mzxid), n.zxid(s.Pzxid), s.Version, s.Cversion, s.Aversion, owner, s.DataLength, s.NumChildren)
}

func (n *normaliser) render(first bool, frame []byte) string {
	if first {
		r, err := jute.DecodeConnectResponse(frame)
		if err != nil {
			return fmt.Sprintf("undecodable connect response %x: %v", frame, err)
		}
		n.session = r.SessionID
		return fmt.Sprintf("connect protocol=%d timeout=%d session=%t passwd=%d bytes, zero=%t readOnly=%t/%t", r.ProtocolVersion, r.TimeOut, r.SessionID != 0, len(r.Passwd), slices.Equal(r.Passwd, make([]byte, 16)), r.HasReadOnly, r.ReadOnly)
	}
	d := jute.NewDecoder(frame)
	h := jute.DecodeReplyHeader(d)
	if n.base == 0 && h.Zxid > 0 {
		n.base = h.Zxid
	}
	head := fmt.Sprintf("xid=%d zxid=%s err=%d", h.Xid, n.zxid(h.Zxid), h.Err)
	if h.Xid == jute.XidNotification {
		ev := jute.DecodeWatcherEvent(d)
		return fmt.Sprintf("%s event type=%d state=%d path=%s", head, ev.Type, ev.State, ev.Path)
	}
	op, known := n.types[h.Xid]
	if !known || (h.Err != 0 && op != jute.OpMulti) || d.Remaining() == 0 {
		return fmt.Sprintf("%s body=%x", head, d.Rest())
	}
	r, err := jute.DecodeResponse(d, op)
	if err != nil {
		return fmt.Sprintf("%s undecodable body: %v", head, err)
	}
	var b strings.Builder
	b.WriteString(head)
	fmt.Fprintf(&b, " path=%q data=%q stat=%s acl=%v number=%d clients=%v", r.Path, r.Data, n.stat(r.Stat), r.ACL, r.Number, r.Clients)
	slices.Sort(r.Children)
	fmt.Fprintf(&b, " children=%q", r.Children)
	for _, res := range r.Results {
		slices.Sort(res.Children)
		fmt.Fprintf(&b, " [type=%d err=%d path=%q data=%q stat=%s children=%q]", res.Type, res.Err, res.Path, res.Data, n.stat(res.Stat), res.Children)
	}
	if rest := d.Rest(); len(rest) > 0 {
		fmt.Fprintf(&b, " trailing=%x", rest)
	}
	return b.String()
}

// goldenConn is one replayed connection: the end of the server under test, and the normalisers of both sides' frames.
type goldenConn struct {
	nc         net.Conn
	real, fake *normaliser
	connected  [2]bool // the connect responses (real, under test) have been read
}

// RunWireRecordings replays each recording's client frames, byte for byte and connection by connection, to a
// fresh server (newServer starts one for the subtest and returns how to open a connection to it) and checks
// that it answers every one with the frames the real server sent, on the same connections, in the same order,
// after normalisation; and that it closes the connections the real server closed at the end. Each recording is
// a subtest named after its file.
func RunWireRecordings(t *testing.T, newServer func(t *testing.T) (dial func() (net.Conn, error))) {
	t.Helper()
	recs, err := WireRecordings()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 {
		t.Fatal("conformance.RunWireRecordings: no recordings in conformance/wire")
	}
	for _, rec := range recs {
		t.Run(rec.Name, func(t *testing.T) {
			dial := newServer(t)
			conns := map[int]*goldenConn{}
			get := func(n int) *goldenConn {
				if gc, ok := conns[n]; ok {
					return gc
				}
				nc, err := dial()
				if err != nil {
					t.Fatal(err)
				}
				types := map[int32]int32{}
				gc := &goldenConn{nc: nc, real: &normaliser{types: types}, fake: &normaliser{types: types}}
				conns[n] = gc
				return gc
			}
			defer func() {
				for _, gc := range conns {
					gc.nc.Close()
				}
			}()
			for i, st := range rec.Steps {
				gc := get(st.Conn)
				if gc.connected[0] {
					if r, err := jute.DecodeRequest(st.Frame); err == nil || len(st.Frame) >= 8 {
						gc.real.types[r.Header.Xid] = r.Header.Type
					}
				}
				if err := jute.WriteFrame(gc.nc, st.Frame); err != nil {
					t.Fatalf("client frame %d (connection %d): write: %v", i, st.Conn, err)
				}
				for j, want := range st.Replies {
					rc := get(want.Conn)
					w := rc.real.render(!rc.connected[0], want.Frame)
					rc.connected[0] = true
					_ = rc.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
					got, err := jute.ReadFrame(rc.nc, 4<<20)
					if err != nil {
						t.Fatalf("after client frame %d (connection %d: %x): server frame %d on connection %d: the server under test sent nothing (%v); the real server sent %s", i, st.Conn, st.Frame, j, want.Conn, err, w)
					}
					g := rc.fake.render(!rc.connected[1], got)
					rc.connected[1] = true
					if w != g {
						t.Fatalf("after client frame %d (connection %d: %x): server frame %d on connection %d differs\nreal:  %s\nunder test: %s", i, st.Conn, st.Frame, j, want.Conn, w, g)
					}
				}
			}
			// Every recording ends with the real server closing each connection (close session, unknown
			// opcode): the server under test must have sent nothing more, and closed them too.
			for n, gc := range conns {
				_ = gc.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
				if got, err := jute.ReadFrame(gc.nc, 4<<20); err == nil {
					t.Fatalf("connection %d: the server under test sent a frame after the recording ended: %s", n, gc.fake.render(false, got))
				} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
					t.Fatalf("connection %d: the server under test kept the connection open where the real server closed it", n)
				}
			}
		})
	}
}
