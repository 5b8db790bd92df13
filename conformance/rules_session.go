package conformance

import (
	"context"
	"testing"

	"github.com/go-zookeeper/zk"
)

// sessionRules: the session events go-zookeeper delivers for Connect and Close.
var sessionRules = []rule{
	{"session/Connect delivers Connecting, Connected, HasSession", func(t *testing.T, h *harness) {
		c := h.connect()
		if c.State() != zk.StateHasSession || c.SessionID() == 0 {
			t.Fatalf("after Connect: State %v SessionID %#x, want %v and a non-zero id", c.State(), c.SessionID(), zk.StateHasSession)
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		if _, _, err := c.log.waitFor(ctx, 2, func(zk.Event) bool { return true }); err != nil {
			t.Fatalf("fewer than 3 session events after Connect: %v", err)
		}
		events, _ := c.log.snapshot()
		want := []zk.State{zk.StateConnecting, zk.StateConnected, zk.StateHasSession}
		for i, state := range want {
			ev := events[i]
			if ev.Type != zk.EventSession || ev.State != state || ev.Path != "" || ev.Err != nil || ev.Server == "" || ev.Server != events[0].Server {
				t.Fatalf("session events %s, want EventSession with states %v, no path or error, and one server address", formatEvents(events), want)
			}
		}
	}},
	{"session/Close delivers Disconnected and then closes the channel", func(t *testing.T, h *harness) {
		c := h.connect()
		c.quiesce()
		mark, _ := c.log.snapshot()
		c.close()
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		if err := c.log.waitClosed(ctx); err != nil {
			t.Fatalf("session event channel not closed after Close: %v", err)
		}
		events, _ := c.log.snapshot()
		got := events[len(mark):]
		if len(got) != 1 || got[0].Type != zk.EventSession || got[0].State != zk.StateDisconnected || got[0].Err != nil || got[0].Server == "" {
			t.Fatalf("events after Close %s, want exactly one {EventSession StateDisconnected} with the server address", formatEvents(got))
		}
		if c.State() != zk.StateDisconnected {
			t.Fatalf("State after Close %v, want %v", c.State(), zk.StateDisconnected)
		}
	}},
	{"session/Close ends pending watches with EventNotWatching and ErrClosing", func(t *testing.T, h *harness) {
		c := h.connect()
		mustCreate(t, c, h.path("x"), nil, zk.FlagPersistent)
		ch := setWatch(t, c, getWatch, h.path("x"))
		c.close()
		got := waitEvent(t, ch, "GetW pending at Close")
		want := zk.Event{Type: zk.EventNotWatching, State: zk.StateDisconnected, Path: h.path("x"), Err: zk.ErrClosing}
		if !sameEvent(got, want) {
			t.Fatalf("pending watch at Close got %s, want %s", formatEvent(got), formatEvent(want))
		}
		expectClosedAfterEvent(t, ch, "GetW pending at Close")
	}},
}
