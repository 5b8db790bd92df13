package differential

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"
)

// eventLog drains a session event channel from one goroutine, so that the channel never fills, and
// hands out what arrived on request. A flush is served by that same goroutine after it has emptied
// the channel's buffer, so it returns every event the sender had put in the channel before the flush.
type eventLog struct {
	flushes chan chan []zk.Event
	closed  chan struct{} // closed once the channel is closed
	quit    chan struct{}
	done    chan struct{}
}

func newEventLog(ch <-chan zk.Event) *eventLog {
	l := &eventLog{
		flushes: make(chan chan []zk.Event),
		closed:  make(chan struct{}),
		quit:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	go l.loop(ch)
	return l
}

func (l *eventLog) loop(ch <-chan zk.Event) {
	defer close(l.done)
	var buf []zk.Event
	take := func(ev zk.Event, ok bool) {
		if !ok {
			ch = nil
			close(l.closed)
			return
		}
		buf = append(buf, ev)
	}
	for {
		select {
		case ev, ok := <-ch:
			take(ev, ok)
		case reply := <-l.flushes:
		drain:
			for ch != nil {
				select {
				case ev, ok := <-ch:
					take(ev, ok)
				default:
					break drain
				}
			}
			reply <- buf
			buf = nil
		case <-l.quit:
			return
		}
	}
}

// flush returns the events received since the last flush.
func (l *eventLog) flush() []zk.Event {
	reply := make(chan []zk.Event, 1)
	select {
	case l.flushes <- reply:
		return <-reply
	case <-l.done:
		return nil
	}
}

// waitFor flushes until an event satisfying match has arrived and returns everything flushed (what came
// after the match too).
func (l *eventLog) waitFor(ctx context.Context, match func(zk.Event) bool) ([]zk.Event, error) {
	ctx, cancel := context.WithTimeout(ctx, collectTimeout)
	defer cancel()
	var got []zk.Event
	for {
		batch := l.flush()
		got = append(got, batch...)
		if slices.ContainsFunc(batch, match) {
			return append(got, l.flush()...), nil // the events after the match in its batch included
		}
		select {
		case <-ctx.Done():
			return got, fmt.Errorf("waiting for a session event (got %v): %w", got, ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
}

// waitClosed waits until the channel is closed and returns the events flushed meanwhile.
func (l *eventLog) waitClosed(ctx context.Context) ([]zk.Event, error) {
	ctx, cancel := context.WithTimeout(ctx, collectTimeout)
	defer cancel()
	select {
	case <-l.closed:
		return l.flush(), nil
	case <-ctx.Done():
		return l.flush(), fmt.Errorf("waiting for the session channel to close: %w", ctx.Err())
	}
}

func (l *eventLog) stop() {
	close(l.quit)
	<-l.done
}
