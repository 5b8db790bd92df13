package realzk

import (
	"fmt"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkmodel/zkmodel/jute"
)

// classifyByTypeAndPath names a notification's class by its event type and
// path, so that a count shows which notifications were read and how; a path
// it could not read ("") is in no class.
func classifyByTypeAndPath(eventType int32, path string) string {
	if path == "" {
		return ""
	}
	return fmt.Sprintf("%d %s", eventType, path)
}

// TestFrameScannerCounts feeds a client's and a server's streams to a
// wireCounter however they are cut, byte by byte included, and checks every
// kind of frame is told apart: connect, ping, auth and other requests; the
// connect response, replies and notifications, with their paths (a path
// longer than the scanner keeps is not read: its notification counts, in no
// class).
func TestFrameScannerCounts(t *testing.T) {
	frame := func(encode func(e *jute.Encoder)) []byte {
		e := jute.NewEncoder(nil)
		encode(e)
		return jute.AppendFrame(nil, e.Bytes())
	}
	request := func(r jute.Request) []byte {
		return frame(func(e *jute.Encoder) {
			if err := jute.EncodeRequest(e, &r); err != nil {
				t.Fatal(err)
			}
		})
	}
	reply := func(h jute.ReplyHeader, body func(e *jute.Encoder)) []byte {
		return frame(func(e *jute.Encoder) { h.Encode(e); body(e) })
	}
	notification := func(eventType zk.EventType, path string) []byte {
		return reply(jute.ReplyHeader{Xid: jute.XidNotification, Zxid: -1},
			jute.WatcherEvent{Type: int32(eventType), State: int32(zk.StateSyncConnected), Path: path}.Encode)
	}
	var client, server []byte
	client = append(client, frame((&jute.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)}).Encode)...)
	client = append(client, request(jute.Request{Header: jute.RequestHeader{Xid: 1, Type: jute.OpCreate}, Path: "/a"})...)
	client = append(client, request(jute.Request{Header: jute.RequestHeader{Xid: jute.XidPing, Type: jute.OpPing}})...)
	client = append(client, request(jute.Request{Header: jute.RequestHeader{Xid: jute.XidAuth, Type: jute.OpAuth}, Scheme: "digest", Auth: []byte("u:p")})...)
	client = append(client, request(jute.Request{Header: jute.RequestHeader{Xid: 2, Type: jute.OpGetChildren2}, Path: "/a", Watch: true})...)
	server = append(server, frame((&jute.ConnectResponse{TimeOut: 30000, SessionID: 7, Passwd: make([]byte, 16)}).Encode)...)
	server = append(server, reply(jute.ReplyHeader{Xid: 1, Zxid: 5}, func(e *jute.Encoder) { e.String("/a") })...)
	server = append(server, notification(zk.EventNodeDeleted, "/l/_c_ab-__READ__0000000001")...)
	server = append(server, notification(zk.EventNodeDeleted, "/l/aa__lock__0000000002")...)
	server = append(server, notification(zk.EventNodeChildrenChanged, "/s/leases")...)
	server = append(server, notification(zk.EventNodeDataChanged, "/b/b0")...)
	// A path longer than the scanner keeps is not read: the notification counts, in no class.
	server = append(server, notification(zk.EventNodeDeleted, "/x/"+strings.Repeat("y", 2000)+"-__READ__0000000001")...)
	want := WireCounts{Connects: 1, Pings: 1, Auths: 1, Requests: 2, Notifications: 5,
		Classes: map[string]int64{"2 /l/_c_ab-__READ__0000000001": 1, "2 /l/aa__lock__0000000002": 1, "4 /s/leases": 1, "3 /b/b0": 1}}
	for _, cut := range []int{1, 3, 7, 64, 1 << 20} {
		w := &wireCounter{classify: classifyByTypeAndPath}
		fromClient := frameScanner{keep: requestHeadLen, frame: w.clientFrame}
		fromServer := frameScanner{keep: notificationHeadLen, frame: w.serverFrame}
		for _, s := range []struct {
			scanner *frameScanner
			bytes   []byte
		}{{&fromClient, client}, {&fromServer, server}} {
			for b := s.bytes; len(b) > 0; {
				k := min(cut, len(b))
				s.scanner.feed(b[:k])
				b = b[k:]
			}
		}
		if got := w.counts(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("cut in pieces of %d: counted %+v, want %+v", cut, got, want)
		}
	}
}
