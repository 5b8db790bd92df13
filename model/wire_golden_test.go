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
	"github.com/zkmodel/zkmodel/model"
	"github.com/zkmodel/zkmodel/model/jute"
)

// recording is a session recorded between a client and a real ZooKeeper 3.8 server (testdata/wire/*.rec):
// the client's frames, and after each the server's frames that came before the client's next one.
type recording struct {
	client  [][]byte
	replies [][][]byte // replies[i]: what the server sent after client[i] (and before client[i+1])
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
		if !ok || err != nil || (dir != "C" && dir != "S") {
			t.Fatalf("%s:%d: want `C <hex>` or `S <hex>`, got %.40q", path, line, text)
		}
		if dir == "C" {
			rec.client = append(rec.client, frame)
			rec.replies = append(rec.replies, nil)
		} else if len(rec.client) == 0 {
			t.Fatalf("%s:%d: a server frame before the client's first", path, line)
		} else {
			rec.replies[len(rec.replies)-1] = append(rec.replies[len(rec.replies)-1], frame)
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

// TestWireGolden replays each recorded session's client frames, byte for byte, to the model and checks that
// the model answers every one with the frames the real server sent, in the same order, after normalisation;
// and that it closes the connection where the real server did.
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
			nc, err := srv.Dialer()("tcp", "127.0.0.1:2181", time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			real := &normaliser{types: map[int32]int32{}}
			fake := &normaliser{types: real.types}
			for i, frame := range rec.client {
				if i > 0 {
					if r, err := jute.DecodeRequest(frame); err == nil || len(frame) >= 8 {
						real.types[r.Header.Xid] = r.Header.Type
					}
				}
				if err := jute.WriteFrame(nc, frame); err != nil {
					t.Fatalf("client frame %d: write: %v", i, err)
				}
				for j, want := range rec.replies[i] {
					_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
					got, err := jute.ReadFrame(nc, 4<<20)
					if err != nil {
						t.Fatalf("after client frame %d (%x): server frame %d: the model sent nothing (%v); the real server sent %s", i, frame, j, err, real.render(i == 0, want))
					}
					w, g := real.render(i == 0, want), fake.render(i == 0, got)
					if w != g {
						t.Fatalf("after client frame %d (%x): server frame %d differs\nreal:  %s\nmodel: %s", i, frame, j, w, g)
					}
				}
			}
			// The real server's last frame was its last: it closed the connection (close session, unknown
			// opcode), and so must the model.
			_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			if got, err := jute.ReadFrame(nc, 4<<20); err == nil {
				t.Fatalf("the model sent a frame after the recording ended: %s", fake.render(false, got))
			} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("the model kept the connection open where the real server closed it")
			}
		})
	}
}
