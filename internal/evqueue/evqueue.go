// Package evqueue hands events to a buffered channel without ever blocking the sender or dropping one: the
// channels of persistent watches, which get any number of events, in the model's client and in the raw wire
// client (internal/rawzk).
package evqueue

import (
	"sync"

	"github.com/go-zookeeper/zk"
)

// Queue is a channel with an ordered backlog. An event goes straight into the channel when it fits and
// nothing waits before it, so that a reader who looks right after the sender returns finds it, as with
// go-zookeeper's watch channels; what does not fit waits, in order, for a goroutine that hands it over as the
// reader takes events. Its methods are safe for concurrent use.
type Queue struct {
	out     chan zk.Event
	mu      sync.Mutex
	backlog []zk.Event
	pumping bool // a goroutine is handing the backlog over
	closed  bool
}

// New returns a queue whose channel holds size events.
func New(size int) *Queue { return &Queue{out: make(chan zk.Event, size)} }

// C returns the queue's channel; nil for a nil queue.
func (q *Queue) C() <-chan zk.Event {
	if q == nil {
		return nil
	}
	return q.out
}

// Push queues ev; after Close it does nothing.
func (q *Queue) Push(ev zk.Event) { q.put(ev, false) }

// Close closes the channel once everything pushed before has been handed over.
func (q *Queue) Close() { q.put(zk.Event{}, true) }

func (q *Queue) put(ev zk.Event, last bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	q.closed = last
	if !q.pumping {
		if last {
			close(q.out)
			return
		}
		select {
		case q.out <- ev:
			return
		default:
		}
	}
	if !last {
		q.backlog = append(q.backlog, ev)
	}
	if !q.pumping {
		q.pumping = true
		go q.pump()
	}
}

func (q *Queue) pump() {
	for {
		q.mu.Lock()
		if len(q.backlog) == 0 {
			q.pumping = false
			if q.closed {
				close(q.out)
			}
			q.mu.Unlock()
			return
		}
		ev := q.backlog[0]
		q.backlog = q.backlog[1:]
		q.mu.Unlock()
		q.out <- ev
	}
}

// Session makes a go-zookeeper client's session events lossless. zk.Connect's channel holds 6 events and
// drops any that arrive while it is full: a reconnection after expiry emits 9 in a burst (Disconnected,
// Connecting, Connected, Expired, a NotWatching per watch, Disconnected, Connecting, Connected,
// HasSession), and on a loaded machine the reader may not run in between, so that the last ones —
// HasSession among them — are lost. Pass Option to zk.Connect (or model.ConnectZK): its callback sees every
// event, in order, before go-zookeeper tries its channel; then read the channel Follow returns instead of
// zk.Connect's.
type Session struct{ q *Queue }

// NewSession returns a Session for one client.
func NewSession() *Session { return &Session{q: New(64)} }

// Option is the zk.Connect option (zk.WithEventCallback) that records every event.
func (s *Session) Option() func(*zk.Conn) { return zk.WithEventCallback(s.Callback()) }

// Callback is the recording callback itself, for a client that has an event callback of its own to call it
// from (go-zookeeper keeps only the last zk.WithEventCallback).
func (s *Session) Callback() zk.EventCallback { return s.q.Push }

// Follow drains go-zookeeper's own channel ch, whose events the callback has already recorded, and returns
// the channel of the recorded events, which is closed once ch is (the client was closed).
func (s *Session) Follow(ch <-chan zk.Event) <-chan zk.Event {
	go func() {
		for range ch {
		}
		s.q.Close()
	}()
	return s.q.C()
}
