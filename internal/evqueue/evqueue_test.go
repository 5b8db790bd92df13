package evqueue

import (
	"fmt"
	"testing"

	"github.com/go-zookeeper/zk"
)

// TestOrderPastTheBuffer: events beyond the buffer wait and come in order; the channel closes after the last,
// and a push after Close is dropped.
func TestOrderPastTheBuffer(t *testing.T) {
	q := New(2)
	const n = 50
	for i := range n {
		q.Push(zk.Event{Path: fmt.Sprint(i)})
	}
	q.Close()
	q.Push(zk.Event{Path: "after close"})
	for i := range n {
		ev, ok := <-q.C()
		if !ok || ev.Path != fmt.Sprint(i) {
			t.Fatalf("event %d: %q (open %t), want %q", i, ev.Path, ok, fmt.Sprint(i))
		}
	}
	if ev, ok := <-q.C(); ok {
		t.Fatalf("got %q after the last event, want the channel closed", ev.Path)
	}
}

// TestAtOnce: an event that fits is in the channel when Push returns.
func TestAtOnce(t *testing.T) {
	q := New(1)
	q.Push(zk.Event{Path: "/a"})
	select {
	case ev := <-q.C():
		if ev.Path != "/a" {
			t.Fatalf("got %q, want /a", ev.Path)
		}
	default:
		t.Fatal("the event is not in the channel when Push returns")
	}
	if (*Queue)(nil).C() != nil {
		t.Fatal("a nil queue's channel is not nil")
	}
}

// TestSessionKeepsABurst: while the reader does not run, a burst of events overflows zk.Connect's 6-event
// channel, which drops the rest, and loses nothing through Session; the followed channel closes when the
// client's own channel does.
func TestSessionKeepsABurst(t *testing.T) {
	s := NewSession()
	original := make(chan zk.Event, 6) // zk.Connect's channel: what does not fit is dropped
	record := s.Callback()
	const burst = 40
	for i := range burst {
		ev := zk.Event{Type: zk.EventSession, State: zk.StateConnecting, Path: fmt.Sprint(i)}
		record(ev)
		select {
		case original <- ev:
		default:
		}
	}
	close(original) // the client was closed
	out := s.Follow(original)
	for i := range burst {
		ev, ok := <-out
		if !ok || ev.Path != fmt.Sprint(i) {
			t.Fatalf("event %d: got %+v (open %v), want path %d", i, ev, ok, i)
		}
	}
	if ev, ok := <-out; ok {
		t.Fatalf("after the burst and the client's close: got %+v, want the channel closed", ev)
	}
}
