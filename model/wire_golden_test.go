package model_test

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/jute"
	"github.com/zkmodel/zkmodel/model"
)

// recording is what went over one or more connections between clients and a real ZooKeeper 3.8 server
// (testdata/wire/*.rec), frame by frame in the order a recording proxy saw them: each client frame, then the
// server frames that came before the next client frame.
type recording struct {
	steps []recordedStep
}

type recordedStep struct {
	conn    int // 1, 2, …
	frame   []byte
	replies []recordedFrame
}

type recordedFrame struct {
	conn  int
	frame []byte
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

func loadRecording(t *testing.T, path string) recording {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open recording: %v", err)
	}
	defer f.Close()
	var rec recording
	sc := bufio.NewScanner(f)
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
			t.Fatalf("%s:%d: want `C<n> <hex>` or `S<n> <hex>`, got %.40q", path, line, text)
		}
		switch {
		case client:
			rec.steps = append(rec.steps, recordedStep{conn: conn, frame: frame})
		case len(rec.steps) == 0:
			t.Fatalf("%s:%d: a server frame before the first client frame", path, line)
		default:
			last := &rec.steps[len(rec.steps)-1]
			last.replies = append(last.replies, recordedFrame{conn, frame})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read recording: %v", err)
	}
	return rec
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

// goldenConn is one replayed connection: the model's end, and the normalisers of both sides' frames.
type goldenConn struct {
	nc         net.Conn
	real, fake *normaliser
	connected  [2]bool // the connect responses (real, model) have been read
}

// TestWireGolden replays each recording's client frames, byte for byte and connection by connection, to the
// model and checks that the model answers every one with the frames the real server sent, on the same
// connections, in the same order, after normalisation; and that it closes the connections the real server
// closed at the end.
func TestWireGolden(t *testing.T) {
	paths, err := filepath.Glob("testdata/wire/*.rec")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no recordings in testdata/wire (%v)", err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			rec := loadRecording(t, path)
			srv := model.NewServer()
			defer srv.Close()
			dial := srv.Dialer()
			conns := map[int]*goldenConn{}
			get := func(n int) *goldenConn {
				if gc, ok := conns[n]; ok {
					return gc
				}
				nc, err := dial("tcp", "127.0.0.1:2181", time.Second)
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
			for i, st := range rec.steps {
				gc := get(st.conn)
				if gc.connected[0] {
					if r, err := jute.DecodeRequest(st.frame); err == nil || len(st.frame) >= 8 {
						gc.real.types[r.Header.Xid] = r.Header.Type
					}
				}
				if err := jute.WriteFrame(gc.nc, st.frame); err != nil {
					t.Fatalf("client frame %d (connection %d): write: %v", i, st.conn, err)
				}
				for j, want := range st.replies {
					rc := get(want.conn)
					w := rc.real.render(!rc.connected[0], want.frame)
					rc.connected[0] = true
					_ = rc.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
					got, err := jute.ReadFrame(rc.nc, 4<<20)
					if err != nil {
						t.Fatalf("after client frame %d (connection %d: %x): server frame %d on connection %d: the model sent nothing (%v); the real server sent %s", i, st.conn, st.frame, j, want.conn, err, w)
					}
					g := rc.fake.render(!rc.connected[1], got)
					rc.connected[1] = true
					if w != g {
						t.Fatalf("after client frame %d (connection %d: %x): server frame %d on connection %d differs\nreal:  %s\nmodel: %s", i, st.conn, st.frame, j, want.conn, w, g)
					}
				}
			}
			// Every recording ends with the real server closing each connection (close session, unknown
			// opcode): the model must have sent nothing more, and closed them too.
			for n, gc := range conns {
				_ = gc.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
				if got, err := jute.ReadFrame(gc.nc, 4<<20); err == nil {
					t.Fatalf("connection %d: the model sent a frame after the recording ended: %s", n, gc.fake.render(false, got))
				} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
					t.Fatalf("connection %d: the model kept the connection open where the real server closed it", n)
				}
			}
		})
	}
}
