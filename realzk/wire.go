package realzk

import (
	"encoding/binary"
	"maps"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkmodel/zkmodel/jute"
)

// ZooKeeper's framing, as far as counting needs it: every frame is a 4-byte big-endian
// length and that many bytes. A connection's first frame each way is the connect request
// and its response; after it a request starts with its header and a reply with its header,
// and a reply whose xid is jute.XidNotification is a watch notification, a WatcherEvent
// after the header. The records are package jute's.
const (
	// notificationHeadLen is what a notification needs kept to read its path: the reply
	// header (16 bytes), the event's type and state and the path's length (12), and up to
	// 1 KiB of path.
	notificationHeadLen = 16 + 12 + 1024
	// requestHeadLen is what a request needs kept: its header, xid and opcode.
	requestHeadLen = 8
)

// frameScanner follows one direction of a ZooKeeper connection however its reads or
// writes cut it, and calls frame at the end of every frame with the frame's index on the
// connection (0: the connect request or response) and its first bytes, up to keep.
type frameScanner struct {
	keep  int
	frame func(index int, head []byte)

	prefix  []byte // the current frame's length prefix, as far as read
	head    []byte // the current frame's first bytes, as far as kept
	left    int    // bytes of the current frame still to come
	inFrame bool
	index   int
}

func (s *frameScanner) feed(p []byte) {
	for len(p) > 0 {
		if !s.inFrame {
			n := min(4-len(s.prefix), len(p))
			s.prefix, p = append(s.prefix, p[:n]...), p[n:]
			if len(s.prefix) < 4 {
				return
			}
			s.left, s.inFrame = int(binary.BigEndian.Uint32(s.prefix)), true
			s.prefix, s.head = s.prefix[:0], s.head[:0]
			if s.left == 0 {
				s.finish()
			}
			continue
		}
		n := min(s.left, len(p))
		if k := min(n, s.keep-len(s.head)); k > 0 {
			s.head = append(s.head, p[:k]...)
		}
		s.left, p = s.left-n, p[n:]
		if s.left == 0 {
			s.finish()
		}
	}
}

func (s *frameScanner) finish() {
	s.frame(s.index, s.head)
	s.index, s.inFrame = s.index+1, false
}

// requestKind is what a client's frame is.
type requestKind int

const (
	frameConnect requestKind = iota // the connect request opening a connection
	framePing
	frameAuth
	frameRequest // any other request: what the herd counts
)

// classifyRequest says what the index-th frame a client sent on a connection is, from its
// first bytes.
func classifyRequest(index int, head []byte) requestKind {
	d := jute.NewDecoder(head)
	h := jute.RequestHeader{Xid: d.Int(), Type: d.Int()}
	switch {
	case index == 0 || d.Err() != nil:
		return frameConnect
	case h.Type == jute.OpPing:
		return framePing
	case h.Type == jute.OpAuth:
		return frameAuth
	}
	return frameRequest
}

// parseNotification returns the event type and path of a server's frame when it is a watch
// notification (the path empty when it is longer than head holds).
func parseNotification(index int, head []byte) (eventType int32, path string, ok bool) {
	d := jute.NewDecoder(head)
	if h := jute.DecodeReplyHeader(d); index == 0 || d.Err() != nil || h.Xid != jute.XidNotification {
		return 0, "", false
	}
	ev := jute.DecodeWatcherEvent(d)
	return ev.Type, ev.Path, true
}

// WireCounts are what a counting Proxy saw of ZooKeeper's protocol on its connections.
type WireCounts struct {
	// Connects are connect requests: one per connection a client opened.
	Connects int64
	// Pings and Auths are the pings and addAuth requests the clients sent.
	Pings, Auths int64
	// Requests are the clients' other requests: every frame but connects, pings and auth.
	Requests int64
	// Notifications are the watch notifications the servers sent (replies with xid -1).
	Notifications int64
	// Classes counts the notifications by the class the proxy's classifier named for
	// them (those it named "" are not in it); nil when none were named.
	Classes map[string]int64
}

// Sub returns w less earlier counts o: what happened in between.
func (w WireCounts) Sub(o WireCounts) WireCounts {
	d := WireCounts{Connects: w.Connects - o.Connects, Pings: w.Pings - o.Pings, Auths: w.Auths - o.Auths,
		Requests: w.Requests - o.Requests, Notifications: w.Notifications - o.Notifications}
	for k, v := range w.Classes {
		if v -= o.Classes[k]; v != 0 {
			if d.Classes == nil {
				d.Classes = map[string]int64{}
			}
			d.Classes[k] = v
		}
	}
	return d
}

// Add returns the sum of w and o.
func (w WireCounts) Add(o WireCounts) WireCounts {
	s := WireCounts{Connects: w.Connects + o.Connects, Pings: w.Pings + o.Pings, Auths: w.Auths + o.Auths,
		Requests: w.Requests + o.Requests, Notifications: w.Notifications + o.Notifications}
	for _, m := range []map[string]int64{w.Classes, o.Classes} {
		for k, v := range m {
			if s.Classes == nil {
				s.Classes = map[string]int64{}
			}
			s.Classes[k] += v
		}
	}
	return s
}

// NotificationClassifier names a class for a watch notification by its event type (a
// zk.EventType's value) and path; "" leaves it unclassified.
type NotificationClassifier func(eventType int32, path string) string

// wireCounter accumulates WireCounts; safe for concurrent use.
type wireCounter struct {
	classify NotificationClassifier

	connects, pings, auths, requests, notifications atomic.Int64

	mu      sync.Mutex
	classes map[string]int64
}

// clientFrame counts a frame a client sent.
func (w *wireCounter) clientFrame(index int, head []byte) {
	switch classifyRequest(index, head) {
	case frameConnect:
		w.connects.Add(1)
	case framePing:
		w.pings.Add(1)
	case frameAuth:
		w.auths.Add(1)
	default:
		w.requests.Add(1)
	}
}

// serverFrame counts a frame a server sent, if it is a notification.
func (w *wireCounter) serverFrame(index int, head []byte) {
	eventType, path, ok := parseNotification(index, head)
	if !ok {
		return
	}
	w.notifications.Add(1)
	if w.classify == nil {
		return
	}
	if class := w.classify(eventType, path); class != "" {
		w.mu.Lock()
		if w.classes == nil {
			w.classes = map[string]int64{}
		}
		w.classes[class]++
		w.mu.Unlock()
	}
}

func (w *wireCounter) counts() WireCounts {
	w.mu.Lock()
	classes := maps.Clone(w.classes)
	w.mu.Unlock()
	return WireCounts{Connects: w.connects.Load(), Pings: w.pings.Load(), Auths: w.auths.Load(),
		Requests: w.requests.Load(), Notifications: w.notifications.Load(), Classes: classes}
}

// CountingDialer returns a go-zookeeper dialer (for zk.WithDialer) whose connections count the
// requests written on them into the sink *sink points to (none while it is
// nil): every frame but the connect request opening a connection, pings and
// auth — what a counting Proxy counts as Requests.
func CountingDialer(sink *atomic.Pointer[atomic.Int64]) func(network, address string, timeout time.Duration) (net.Conn, error) {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		conn, err := net.DialTimeout(network, address, timeout)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: conn, frames: frameScanner{keep: requestHeadLen, frame: func(index int, head []byte) {
			if s := sink.Load(); s != nil && classifyRequest(index, head) == frameRequest {
				s.Add(1)
			}
		}}}, nil
	}
}

// countingConn counts the request frames written on a connection.
type countingConn struct {
	net.Conn
	mu     sync.Mutex
	frames frameScanner
}

// Write counts the frames in p and passes it on.
func (c *countingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.frames.feed(p)
	c.mu.Unlock()
	return c.Conn.Write(p)
}
