package model

import (
	"errors"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// worldACL is the ACL every test create uses (the model only checks that an ACL is present).
var worldACL = zk.WorldACL(zk.PermAll)

// connect opens a client with a 10 s session and consumes the three connection events.
func connect(t testing.TB, srv *Server) (*Conn, <-chan zk.Event) {
	t.Helper()
	c, events, err := srv.Connect(10 * time.Second)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	got := drain(events)
	want := []zk.State{zk.StateConnecting, zk.StateConnected, zk.StateHasSession}
	if len(got) != len(want) {
		t.Fatalf("Connect: session channel got %v, want the states %v", got, want)
	}
	for i, ev := range got {
		if ev.Type != zk.EventSession || ev.State != want[i] {
			t.Fatalf("Connect: session event %d is %+v, want EventSession %v", i, ev, want[i])
		}
	}
	return c, events
}

// drain returns every event that can be received from ch without blocking.
func drain(ch <-chan zk.Event) []zk.Event {
	var out []zk.Event
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return out
			}
			out = append(out, ev)
		default:
			return out
		}
	}
}

// mustCreate creates a node and fails the test if that fails.
func mustCreate(t testing.TB, c *Conn, path string, data []byte, flags int32) string {
	t.Helper()
	got, err := c.Create(path, data, flags, worldACL)
	if err != nil {
		t.Fatalf("Create(%q, flags=%d): %v", path, flags, err)
	}
	return got
}

// mustStat returns a node's stat and fails the test if the node cannot be read.
func mustStat(t testing.TB, c *Conn, path string) zk.Stat {
	t.Helper()
	_, st, err := c.Get(path)
	if err != nil {
		t.Fatalf("Get(%q): %v", path, err)
	}
	return *st
}

// lastZxid returns the last zxid the server committed.
func lastZxid(srv *Server) int64 {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return srv.core.Zxid()
}

// watchEvent is a watch event exactly as go-zookeeper v1.0.4 delivers it.
func wantWatchEvent(typ zk.EventType, path string) zk.Event {
	return zk.Event{Type: typ, State: zk.StateSyncConnected, Path: path}
}

// receiveOne checks that ch holds exactly want and is then closed (a watch fires once).
func receiveOne(t testing.TB, ch <-chan zk.Event, want zk.Event) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatalf("watch channel closed without an event, want %+v", want)
		}
		if ev != want {
			t.Fatalf("watch event %+v, want %+v", ev, want)
		}
	default:
		t.Fatalf("no watch event yet, want %+v", want)
	}
	select {
	case ev, ok := <-ch:
		if ok {
			t.Fatalf("watch channel delivered a second event %+v", ev)
		}
	default:
		t.Fatalf("watch channel still open after its event; a watch is one-shot and go-zookeeper closes it")
	}
}

// receiveNothing checks that ch has neither an event nor been closed: the watch is still armed.
func receiveNothing(t testing.TB, ch <-chan zk.Event) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if ok {
			t.Fatalf("unexpected watch event %+v", ev)
		}
		t.Fatalf("watch channel closed; want it still armed")
	default:
	}
}

// sortedChildren returns the children of path sorted (the model's order is seeded, as ZooKeeper's is hashed).
func sortedChildren(t testing.TB, c *Conn, path string) []string {
	t.Helper()
	kids, _, err := c.Children(path)
	if err != nil {
		t.Fatalf("Children(%q): %v", path, err)
	}
	kids = slices.Clone(kids)
	slices.Sort(kids)
	return kids
}

// isErr reports whether err is target, either as the very value (go-zookeeper's way) or wrapped.
func isErr(err, target error) bool {
	return err == target || errors.Is(err, target)
}

// --- the manual transport ----------------------------------------------------------------------------------

// outcome is what a call made in the background returned.
type outcome struct {
	path  string
	data  []byte
	stat  *zk.Stat
	ok    bool
	kids  []string
	multi []zk.MultiResponse
	watch <-chan zk.Event
	err   error
}

// background runs call in a goroutine (with the manual transport it blocks until the scheduler has delivered
// its reply) and waits until the call has either reached the client's queues or returned.
func background(t testing.TB, srv *Server, c *Conn, call func() outcome) <-chan outcome {
	t.Helper()
	srv.mu.Lock()
	before := len(c.outgoing) + len(c.sent) + len(c.queued)
	srv.mu.Unlock()
	done := make(chan outcome, 1)
	go func() { done <- call() }()
	waitUntil(t, "the call to reach the client's queue or return", func() bool {
		if len(done) > 0 {
			return true
		}
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return len(c.outgoing)+len(c.sent)+len(c.queued) > before
	})
	return done
}

// waitUntil yields until cond holds; it fails the test if that takes absurdly long (a deadlock).
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		runtime.Gosched()
	}
}

// await waits for a background call's outcome.
func await(t testing.TB, done <-chan outcome) outcome {
	t.Helper()
	select {
	case o := <-done:
		return o
	case <-time.After(10 * time.Second):
		t.Fatalf("background call did not return")
		return outcome{}
	}
}

// returned reports whether a background call has returned, without waiting more than it takes the call's
// goroutine to run once its reply is there.
func returned(done <-chan outcome) bool {
	for range 1000 {
		if len(done) > 0 {
			return true
		}
		runtime.Gosched()
	}
	return false
}

// do takes a step and fails the test if it cannot be taken.
func do(t testing.TB, srv *Server, kind StepKind, c *Conn) {
	t.Helper()
	if err := srv.Do(Step{Kind: kind, Client: c.ClientID()}); err != nil {
		t.Fatalf("Do(%s c%d): %v", kind, c.ClientID(), err)
	}
}

// runClient takes c's progress steps until it has none left, leaving other clients alone.
func runClient(t testing.TB, srv *Server, c *Conn) {
	t.Helper()
	for range 10000 {
		var next *Step
		for _, st := range srv.Pending() {
			if st.Client == c.ClientID() {
				next = &st
				break
			}
		}
		if next == nil {
			return
		}
		if err := srv.Do(*next); err != nil {
			t.Fatalf("Do(%s): %v", next, err)
		}
	}
	t.Fatalf("progress steps of client %d never ran out", c.ClientID())
}

// runPending takes progress steps until none is left.
func runPending(t testing.TB, srv *Server) {
	t.Helper()
	for range 10000 {
		p := srv.Pending()
		if len(p) == 0 {
			return
		}
		if err := srv.Do(p[0]); err != nil {
			t.Fatalf("Do(%s): %v", p[0], err)
		}
	}
	t.Fatalf("progress steps never ran out")
}
