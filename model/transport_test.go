package model

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// Calls in the background, for the manual transport.

func bgCreate(c *Conn, path string, flags int32) func() outcome {
	return func() outcome { p, err := c.Create(path, nil, flags, worldACL); return outcome{path: p, err: err} }
}

func bgSet(c *Conn, path string) func() outcome {
	return func() outcome { st, err := c.Set(path, []byte("v"), -1); return outcome{stat: st, err: err} }
}

func bgGet(c *Conn, path string) func() outcome {
	return func() outcome { d, st, err := c.Get(path); return outcome{data: d, stat: st, err: err} }
}

func bgWatch(c *Conn, w watchCall, path string) func() outcome {
	return func() outcome {
		var o outcome
		switch w {
		case callExistsW:
			o.ok, o.stat, o.watch, o.err = c.ExistsW(path)
		case callGetW:
			o.data, o.stat, o.watch, o.err = c.GetW(path)
		case callChildrenW:
			o.kids, o.stat, o.watch, o.err = c.ChildrenW(path)
		}
		return o
	}
}

// run makes a call with the manual transport and takes c's progress steps until it has returned (the events
// it fires for other clients stay queued).
func run(t *testing.T, srv *Server, c *Conn, call func() outcome) outcome {
	t.Helper()
	done := background(t, srv, c, call)
	runClient(t, srv, c)
	return await(t, done)
}

func stepsString(steps []Step) string {
	parts := make([]string, len(steps))
	for i, s := range steps {
		parts[i] = s.String()
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func checkSteps(t *testing.T, what string, got []Step, want string) {
	t.Helper()
	if s := stepsString(got); s != want {
		t.Fatalf("%s = %s, want %s", what, s, want)
	}
}

func hasNode(srv *Server, path string) bool {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	_, ok := srv.core.Stat(path)
	return ok
}

// sessionTimeout returns the negotiated timeout of session id (0 when it is gone).
func sessionTimeout(srv *Server, id int64) time.Duration {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	sess, _ := srv.core.Session(id)
	return sess.Timeout
}

// nodeStat returns the stat of the node at path (zero when it does not exist).
func nodeStat(srv *Server, path string) zk.Stat {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	st, _ := srv.core.Stat(path)
	return st
}

func sessionAlive(srv *Server, id int64) bool {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	_, ok := srv.core.Session(id)
	return ok
}

func states(evs []zk.Event) []zk.State {
	var out []zk.State
	for _, ev := range evs {
		if ev.Type == zk.EventSession {
			out = append(out, ev.State)
		}
	}
	return out
}

var reconnected = []zk.State{zk.StateConnecting, zk.StateConnected, zk.StateHasSession}

func TestManualTransport(t *testing.T) {
	t.Run("a_call_waits_for_Apply_then_Deliver", func(t *testing.T) {
		srv := NewServer(WithManualTransport())
		a, _ := connect(t, srv)
		done := background(t, srv, a, bgCreate(a, "/n", 0))
		checkSteps(t, "Pending", srv.Pending(), "[apply c1]")
		checkSteps(t, "Faults", srv.Faults(), "[lose-request c1, disconnect c1, expire c1]")
		if returned(done) || hasNode(srv, "/n") {
			t.Fatal("the call ran before any step")
		}
		do(t, srv, Apply, a)
		if !hasNode(srv, "/n") {
			t.Fatal("Apply did not execute the create")
		}
		checkSteps(t, "Pending", srv.Pending(), "[deliver c1]")
		checkSteps(t, "Faults", srv.Faults(), "[lose-reply c1, disconnect c1, expire c1]")
		if returned(done) {
			t.Fatal("the call returned before its reply was delivered")
		}
		do(t, srv, Deliver, a)
		if o := await(t, done); o.path != "/n" || o.err != nil {
			t.Fatalf("Create = %q, %v", o.path, o.err)
		}
		checkSteps(t, "Pending", srv.Pending(), "[]")
	})
	t.Run("LoseRequest_applies_nothing_fails_every_waiting_call_and_the_client_reconnects_with_the_same_session", func(t *testing.T) {
		srv := NewServer(WithManualTransport())
		a, events := connect(t, srv)
		sid, before := a.SessionID(), lastZxid(srv)
		first := background(t, srv, a, bgCreate(a, "/a", 0))
		second := background(t, srv, a, bgCreate(a, "/b", 0))
		do(t, srv, LoseRequest, a)
		for _, done := range []<-chan outcome{first, second} {
			if o := await(t, done); o.err != zk.ErrConnectionClosed {
				t.Fatalf("Create = %v, want zk.ErrConnectionClosed", o.err)
			}
		}
		if hasNode(srv, "/a") || hasNode(srv, "/b") || lastZxid(srv) != before {
			t.Fatal("a lost request was applied")
		}
		if got := states(drain(events)); !slices.Equal(got, []zk.State{zk.StateDisconnected}) || a.State() != zk.StateDisconnected {
			t.Fatalf("states %v (now %v), want [StateDisconnected]", got, a.State())
		}
		checkSteps(t, "Pending", srv.Pending(), "[reconnect c1]")
		do(t, srv, Reconnect, a)
		if got := states(drain(events)); !slices.Equal(got, reconnected) || a.SessionID() != sid {
			t.Fatalf("reconnect: states %v session %#x, want %v and %#x", got, a.SessionID(), reconnected, sid)
		}
	})
	t.Run("LoseReply_applies_the_request_but_the_caller_gets_ErrConnectionClosed", func(t *testing.T) {
		srv := NewServer(WithManualTransport())
		a, events := connect(t, srv)
		sid := a.SessionID()
		done := background(t, srv, a, bgCreate(a, "/n", 0))
		do(t, srv, Apply, a)
		do(t, srv, LoseReply, a)
		if o := await(t, done); o.err != zk.ErrConnectionClosed || o.path != "" {
			t.Fatalf("Create = %q, %v; want zk.ErrConnectionClosed", o.path, o.err)
		}
		if !hasNode(srv, "/n") {
			t.Fatal("the request whose reply was lost was not applied")
		}
		do(t, srv, Reconnect, a)
		if got := states(drain(events)); !slices.Equal(got, append([]zk.State{zk.StateDisconnected}, reconnected...)) || a.SessionID() != sid {
			t.Fatalf("states %v session %#x", got, a.SessionID())
		}
	})
	t.Run("calls_made_while_disconnected_wait_and_run_after_Reconnect", func(t *testing.T) {
		srv := NewServer(WithManualTransport())
		a, _ := connect(t, srv)
		do(t, srv, Disconnect, a)
		done := background(t, srv, a, bgCreate(a, "/n", 0))
		checkSteps(t, "Pending", srv.Pending(), "[reconnect c1]")
		if returned(done) || hasNode(srv, "/n") {
			t.Fatal("a call made while disconnected ran")
		}
		do(t, srv, Reconnect, a)
		checkSteps(t, "Pending", srv.Pending(), "[apply c1]")
		runPending(t, srv)
		if o := await(t, done); o.err != nil || o.path != "/n" {
			t.Fatalf("Create = %q, %v", o.path, o.err)
		}
	})
	t.Run("an_event_is_delivered_before_the_writers_own_reply", func(t *testing.T) {
		srv := NewServer(WithManualTransport())
		a, _ := connect(t, srv)
		run(t, srv, a, bgCreate(a, "/x", 0))
		ch := run(t, srv, a, bgWatch(a, callGetW, "/x")).watch
		done := background(t, srv, a, bgSet(a, "/x"))
		do(t, srv, Apply, a)
		do(t, srv, Deliver, a)
		if returned(done) {
			t.Fatal("the Set returned before its own watch event was delivered")
		}
		receiveOne(t, ch, wantWatchEvent(zk.EventNodeDataChanged, "/x"))
		do(t, srv, Deliver, a)
		if o := await(t, done); o.err != nil {
			t.Fatal(o.err)
		}
	})
	t.Run("an_event_is_delivered_before_the_reply_to_a_later_request", func(t *testing.T) {
		srv := NewServer(WithManualTransport())
		a, _ := connect(t, srv)
		b, _ := connect(t, srv)
		run(t, srv, a, bgCreate(a, "/x", 0))
		ch := run(t, srv, a, bgWatch(a, callGetW, "/x")).watch
		setDone := background(t, srv, b, bgSet(b, "/x"))
		do(t, srv, Apply, b)
		getDone := background(t, srv, a, bgGet(a, "/y"))
		do(t, srv, Apply, a)
		checkSteps(t, "Pending", srv.Pending(), "[deliver c1, deliver c2]")
		do(t, srv, Deliver, a)
		if returned(getDone) {
			t.Fatal("A's Get returned before the event committed earlier")
		}
		receiveOne(t, ch, wantWatchEvent(zk.EventNodeDataChanged, "/x"))
		runPending(t, srv)
		await(t, getDone)
		await(t, setDone)
	})
}

// TestReconnectResetsWatches: on reconnection the client's watches are set again like ZooKeeper's SetWatches
// does: a watch whose node changed while the client was away fires at once, the others stay armed.
func TestReconnectResetsWatches(t *testing.T) {
	srv := NewServer(WithManualTransport())
	a, aEvents := connect(t, srv)
	b, _ := connect(t, srv)
	for _, p := range []string{"/x", "/z", "/w", "/u", "/d"} {
		run(t, srv, b, bgCreate(b, p, 0))
	}
	type watch struct {
		call    watchCall
		path    string
		change  func() outcome // what b does while a is away; nil: nothing
		fires   zk.EventType   // on reconnect; 0: stays armed
		later   func() outcome // for an armed watch: what fires it afterwards
		laterEv zk.EventType
	}
	watches := []watch{
		{call: callGetW, path: "/x", change: bgSet(b, "/x"), fires: zk.EventNodeDataChanged},
		{call: callExistsW, path: "/y", change: bgCreate(b, "/y", 0), fires: zk.EventNodeCreated},
		{call: callChildrenW, path: "/z", change: bgCreate(b, "/z/k", 0), fires: zk.EventNodeChildrenChanged},
		{call: callGetW, path: "/d", change: func() outcome { return outcome{err: b.Delete("/d", -1)} }, fires: zk.EventNodeDeleted},
		{call: callGetW, path: "/w", later: bgSet(b, "/w"), laterEv: zk.EventNodeDataChanged},
		{call: callExistsW, path: "/v", later: bgCreate(b, "/v", 0), laterEv: zk.EventNodeCreated},
		{call: callChildrenW, path: "/u", later: bgCreate(b, "/u/k", 0), laterEv: zk.EventNodeChildrenChanged},
	}
	chans := make([]<-chan zk.Event, len(watches))
	for i, w := range watches {
		if chans[i] = run(t, srv, a, bgWatch(a, w.call, w.path)).watch; chans[i] == nil {
			t.Fatalf("%s(%s) left no watch", w.call, w.path)
		}
	}
	do(t, srv, Disconnect, a)
	drain(aEvents)
	for _, w := range watches {
		if w.change != nil {
			if o := run(t, srv, b, w.change); o.err != nil {
				t.Fatalf("change of %s: %v", w.path, o.err)
			}
		}
	}
	if got := drain(aEvents); len(got) != 0 {
		t.Fatalf("a disconnected client received %+v", got)
	}
	do(t, srv, Reconnect, a)
	runPending(t, srv)
	for i, w := range watches {
		if w.fires == 0 {
			receiveNothing(t, chans[i])
			continue
		}
		receiveOne(t, chans[i], wantWatchEvent(w.fires, w.path))
	}
	for i, w := range watches {
		if w.later != nil {
			run(t, srv, b, w.later)
			runClient(t, srv, a)
			receiveOne(t, chans[i], wantWatchEvent(w.laterEv, w.path))
		}
	}
}

// TestLostWatchReply: a watch whose reply was lost is not known to the client, and ZooKeeper drops a
// connection's watches when it closes, so nothing may reach the client for it after it reconnects.
func TestLostWatchReply(t *testing.T) {
	srv := NewServer(WithManualTransport())
	a, aEvents := connect(t, srv)
	b, _ := connect(t, srv)
	run(t, srv, b, bgCreate(b, "/x", 0))
	done := background(t, srv, a, bgWatch(a, callGetW, "/x"))
	do(t, srv, Apply, a)
	do(t, srv, LoseReply, a)
	if o := await(t, done); o.err != zk.ErrConnectionClosed || o.watch != nil {
		t.Fatalf("GetW = %v, %v; want zk.ErrConnectionClosed and no channel", o.watch, o.err)
	}
	do(t, srv, Reconnect, a)
	drain(aEvents)
	run(t, srv, b, bgSet(b, "/x"))
	runPending(t, srv)
	if got := drain(aEvents); len(got) != 0 {
		t.Fatalf("the client received %+v for a watch it never had", got)
	}
}

// TestSessionTimeouts: the server clamps the requested timeout to [2, 20] ticks, and only a disconnected
// session expires, once its timeout has passed, rounded up to the next tick (ZooKeeper's expiry queue).
func TestSessionTimeouts(t *testing.T) {
	const tick = 200 * time.Millisecond
	for _, tc := range []struct{ ask, want time.Duration }{
		{time.Millisecond, 400 * time.Millisecond}, {time.Second, time.Second}, {time.Hour, 4 * time.Second},
	} {
		t.Run(fmt.Sprintf("asking_%s_is_granted_%s", tc.ask, tc.want), func(t *testing.T) {
			srv := NewServer(WithTickTime(tick))
			c, _, _ := srv.Connect(tc.ask)
			if got := sessionTimeout(srv, c.SessionID()); got != tc.want {
				t.Fatalf("negotiated %s, want %s", got, tc.want)
			}
		})
	}
	// WithSessionTimeouts moves either bound, as minSessionTimeout and maxSessionTimeout do; 0 keeps a default.
	for _, tc := range []struct {
		min, max, ask, want time.Duration
	}{
		{0, 20 * time.Second, 10 * time.Second, 10 * time.Second},
		{0, 20 * time.Second, time.Hour, 20 * time.Second},
		{0, 20 * time.Second, time.Millisecond, 400 * time.Millisecond},
		{time.Second, 0, time.Millisecond, time.Second},
		{time.Second, 0, time.Hour, 4 * time.Second},
	} {
		srv := NewServer(WithTickTime(tick), WithSessionTimeouts(tc.min, tc.max))
		c, _, _ := srv.Connect(tc.ask)
		if got := sessionTimeout(srv, c.SessionID()); got != tc.want {
			t.Errorf("bounds [%v, %v]: asking %v negotiated %v, want %v", tc.min, tc.max, tc.ask, got, tc.want)
		}
		lo, hi := cmp.Or(tc.min, 2*tick), cmp.Or(tc.max, 20*tick)
		if conf := srv.conf(0); !strings.Contains(conf, fmt.Sprintf("minSessionTimeout=%d\nmaxSessionTimeout=%d\n", lo.Milliseconds(), hi.Milliseconds())) {
			t.Errorf("bounds [%v, %v]: conf does not show them:\n%s", tc.min, tc.max, conf)
		}
	}
	for _, tc := range []struct {
		name               string
		connectedFor       time.Duration // before the connection drops
		survivesUpToAfter  time.Duration // disconnected, still alive
		expiresWhenReached time.Duration
	}{
		{"dropped_on_a_tick_boundary_expires_one_tick_after_the_timeout", 0, 1199 * time.Millisecond, 1200 * time.Millisecond},
		{"dropped_mid_tick_expires_at_the_tick_after_the_timeout", 150 * time.Millisecond, 1049 * time.Millisecond, 1050 * time.Millisecond},
		{"dropped_just_before_a_tick_expires_at_the_tick_after_the_timeout", 399 * time.Millisecond, 1000 * time.Millisecond, 1001 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := NewServer(WithManualTransport(), WithTickTime(tick))
			a, _, _ := srv.Connect(time.Second)
			b, _, _ := srv.Connect(time.Second)
			srv.Advance(tc.connectedFor)
			do(t, srv, Disconnect, a)
			srv.Advance(tc.survivesUpToAfter)
			if !sessionAlive(srv, a.SessionID()) {
				t.Fatalf("session expired %s after the connection dropped, too early", tc.survivesUpToAfter)
			}
			srv.Advance(tc.expiresWhenReached - tc.survivesUpToAfter)
			if sessionAlive(srv, a.SessionID()) {
				t.Fatalf("session alive %s after the connection dropped", tc.expiresWhenReached)
			}
			if !sessionAlive(srv, b.SessionID()) {
				t.Fatal("a connected session expired")
			}
		})
	}
	t.Run("a_connected_session_never_expires", func(t *testing.T) {
		srv := NewServer(WithManualTransport(), WithTickTime(tick))
		a, _, _ := srv.Connect(time.Second)
		for range 10 {
			srv.Advance(time.Hour)
		}
		if !sessionAlive(srv, a.SessionID()) {
			t.Fatal("a connected session expired")
		}
	})
	t.Run("reconnecting_in_time_keeps_the_session_and_resets_its_timer", func(t *testing.T) {
		srv := NewServer(WithManualTransport(), WithTickTime(tick))
		a, _, _ := srv.Connect(time.Second)
		do(t, srv, Disconnect, a)
		srv.Advance(time.Second)
		do(t, srv, Reconnect, a)
		do(t, srv, Disconnect, a)
		srv.Advance(time.Second)
		if !sessionAlive(srv, a.SessionID()) {
			t.Fatal("the timer was not reset by the reconnection")
		}
	})
}

// TestExpiry: what a client sees of its session's expiry, as go-zookeeper shows it.
func TestExpiry(t *testing.T) {
	t.Run("expiry_seen_on_reconnect_ends_every_watch_and_gives_a_new_session_on_the_same_Conn", func(t *testing.T) {
		srv := NewServer(WithManualTransport(), WithTickTime(200*time.Millisecond))
		a, aEvents := connect(t, srv)
		b, _ := connect(t, srv)
		run(t, srv, a, bgCreate(a, "/e", zk.FlagEphemeral))
		run(t, srv, a, bgCreate(a, "/x", 0))
		data := run(t, srv, a, bgWatch(a, callGetW, "/x")).watch
		kids := run(t, srv, a, bgWatch(a, callChildrenW, "/")).watch
		gone := run(t, srv, b, bgWatch(b, callExistsW, "/e")).watch
		old := a.SessionID()
		do(t, srv, Disconnect, a)
		drain(aEvents)
		srv.Advance(time.Hour)
		if sessionAlive(srv, old) {
			t.Fatal("the disconnected session did not expire")
		}
		runPending(t, srv) // b's event, and a's reconnection
		receiveOne(t, gone, wantWatchEvent(zk.EventNodeDeleted, "/e"))
		for path, ch := range map[string]<-chan zk.Event{"/x": data, "/": kids} {
			receiveOne(t, ch, zk.Event{Type: zk.EventNotWatching, State: zk.StateDisconnected, Path: path, Err: zk.ErrSessionExpired})
		}
		// go-zookeeper's sequence, all of it (see eventBuffer).
		want := []zk.Event{
			{Type: zk.EventSession, State: zk.StateConnecting, Server: "model"},
			{Type: zk.EventSession, State: zk.StateConnected, Server: "model"},
			{Type: zk.EventSession, State: zk.StateExpired, Server: "model"},
			{Type: zk.EventNotWatching, State: zk.StateDisconnected, Path: "/", Err: zk.ErrSessionExpired},
			{Type: zk.EventNotWatching, State: zk.StateDisconnected, Path: "/x", Err: zk.ErrSessionExpired},
			{Type: zk.EventSession, State: zk.StateDisconnected, Server: "model"},
			{Type: zk.EventSession, State: zk.StateConnecting, Server: "model"},
			{Type: zk.EventSession, State: zk.StateConnected, Server: "model"},
			{Type: zk.EventSession, State: zk.StateHasSession, Server: "model"},
		}
		if got := drain(aEvents); !slices.Equal(got, want) {
			t.Fatalf("session channel got\n%+v\nwant\n%+v", got, want)
		}
		if a.State() != zk.StateHasSession || a.SessionID() == old || !sessionAlive(srv, a.SessionID()) {
			t.Fatalf("after expiry: state %v session %#x (old %#x)", a.State(), a.SessionID(), old)
		}
		if o := run(t, srv, a, bgCreate(a, "/e", zk.FlagEphemeral)); o.err != nil {
			t.Fatal(o.err)
		}
		if owner := nodeStat(srv, "/e").EphemeralOwner; owner != a.SessionID() {
			t.Fatalf("new ephemeral owned by %#x, want the new session %#x", owner, a.SessionID())
		}
	})
	t.Run("expiring_a_connected_client_hangs_up_after_what_the_server_had_sent", func(t *testing.T) {
		srv := NewServer(WithManualTransport())
		a, aEvents := connect(t, srv)
		b, _ := connect(t, srv)
		run(t, srv, a, bgCreate(a, "/e", zk.FlagEphemeral))
		gone := run(t, srv, b, bgWatch(b, callExistsW, "/e")).watch
		old := a.SessionID()
		answered := background(t, srv, a, bgGet(a, "/e"))
		do(t, srv, Apply, a)
		do(t, srv, ExpireSession, a)
		if hasNode(srv, "/e") || sessionAlive(srv, old) {
			t.Fatal("expiry left the session or its ephemeral")
		}
		late := background(t, srv, a, bgCreate(a, "/late", 0))
		checkSteps(t, "Pending", srv.Pending(), "[deliver c1, deliver c2]")
		do(t, srv, Deliver, a)
		if o := await(t, answered); o.err != nil {
			t.Fatalf("the reply sent before the expiry was lost: %v", o.err)
		}
		do(t, srv, Deliver, a) // the hang-up
		if o := await(t, late); o.err != zk.ErrConnectionClosed || hasNode(srv, "/late") {
			t.Fatalf("a call made after the expiry = %v (applied: %t), want zk.ErrConnectionClosed and not applied", o.err, hasNode(srv, "/late"))
		}
		if got := states(drain(aEvents)); !slices.Equal(got, []zk.State{zk.StateDisconnected}) {
			t.Fatalf("states %v, want [StateDisconnected]", got)
		}
		runPending(t, srv)
		receiveOne(t, gone, wantWatchEvent(zk.EventNodeDeleted, "/e"))
		if a.SessionID() == old || a.State() != zk.StateHasSession {
			t.Fatal("the client did not get a new session")
		}
	})
	t.Run("expiring_an_unknown_session_does_nothing", func(t *testing.T) {
		srv := NewServer()
		connect(t, srv)
		before := srv.Dump()
		srv.Expire(12345)
		if srv.Dump() != before {
			t.Fatal("Expire of an unknown session changed the server")
		}
	})
}

// TestClose checks go-zookeeper's Close with the manual transport.
func TestClose(t *testing.T) {
	t.Run("Close_removes_ephemerals_ends_watches_with_ErrClosing_and_closes_the_channel", func(t *testing.T) {
		srv := NewServer(WithManualTransport())
		a, aEvents := connect(t, srv)
		b, _ := connect(t, srv)
		run(t, srv, a, bgCreate(a, "/e", zk.FlagEphemeral))
		run(t, srv, a, bgCreate(a, "/x", 0))
		data := run(t, srv, a, bgWatch(a, callGetW, "/x")).watch
		gone := run(t, srv, b, bgWatch(b, callExistsW, "/e")).watch
		waiting := background(t, srv, a, bgGet(a, "/x"))
		a.Close()
		if o := await(t, waiting); o.err != zk.ErrConnectionClosed {
			t.Fatalf("a call waiting at Close = %v, want zk.ErrConnectionClosed", o.err)
		}
		checkSteps(t, "Pending", srv.Pending(), "[apply c1]")
		runPending(t, srv)
		if hasNode(srv, "/e") {
			t.Fatal("the ephemeral outlived Close")
		}
		receiveOne(t, gone, wantWatchEvent(zk.EventNodeDeleted, "/e"))
		notWatching := zk.Event{Type: zk.EventNotWatching, State: zk.StateDisconnected, Path: "/x", Err: zk.ErrClosing}
		receiveOne(t, data, notWatching)
		want := []zk.Event{{Type: zk.EventSession, State: zk.StateDisconnected, Server: "model"}, notWatching}
		if got := drain(aEvents); !slices.Equal(got, want) {
			t.Fatalf("session channel got %+v, want %+v", got, want)
		}
		if _, ok := <-aEvents; ok {
			t.Fatal("session channel not closed")
		}
		before := srv.Dump()
		a.Close()
		if srv.Dump() != before || len(srv.Pending()) != 0 {
			t.Fatal("a second Close did something")
		}
	})
	t.Run("closing_a_disconnected_client_leaves_its_session_to_expire", func(t *testing.T) {
		srv := NewServer(WithManualTransport())
		a, aEvents := connect(t, srv)
		run(t, srv, a, bgCreate(a, "/e", zk.FlagEphemeral))
		do(t, srv, Disconnect, a)
		a.Close()
		if _, ok := <-drainThenWait(aEvents); ok {
			t.Fatal("session channel not closed")
		}
		if !hasNode(srv, "/e") || !sessionAlive(srv, a.SessionID()) {
			t.Fatal("closing a disconnected client reached the server")
		}
		checkSteps(t, "Pending", srv.Pending(), "[]")
		srv.Advance(time.Minute)
		if hasNode(srv, "/e") {
			t.Fatal("the session of a closed disconnected client did not expire")
		}
	})
}

// drainThenWait discards buffered events and returns the channel, for a receive that checks it is closed.
func drainThenWait(ch <-chan zk.Event) <-chan zk.Event {
	drain(ch)
	return ch
}

// TestImpossibleSteps: Do refuses a step that cannot be taken, says why, and changes nothing.
func TestImpossibleSteps(t *testing.T) {
	srv := NewServer(WithManualTransport())
	a, _ := connect(t, srv)
	b, _ := connect(t, srv)
	run(t, srv, a, bgCreate(a, "/n", 0))
	do(t, srv, Disconnect, b)
	a.Close()
	runClient(t, srv, a)
	c, _ := connect(t, srv)
	background(t, srv, c, bgGet(c, "/n"))
	for _, st := range []Step{
		{Kind: Apply, Client: 0}, {Kind: Apply, Client: 9}, {Kind: StepKind(0), Client: 3}, {Kind: StepKind(42), Client: 3},
		{Kind: Deliver, Client: 3}, {Kind: LoseReply, Client: 3}, {Kind: Reconnect, Client: 3}, // c: a request waits, nothing to deliver, connected
		{Kind: Apply, Client: 2}, {Kind: Disconnect, Client: 2}, {Kind: LoseRequest, Client: 2}, // b: disconnected
		{Kind: Apply, Client: 1}, {Kind: Reconnect, Client: 1}, {Kind: ExpireSession, Client: 1}, {Kind: Disconnect, Client: 1}, // a: closed
	} {
		before, pending, faults := srv.Dump(), stepsString(srv.Pending()), stepsString(srv.Faults())
		err := srv.Do(st)
		if err == nil {
			t.Errorf("Do(%s) succeeded, want an error", st)
			continue
		}
		if !strings.Contains(err.Error(), "model: step") {
			t.Errorf("Do(%s) error %q does not say which step", st, err)
		}
		if srv.Dump() != before || stepsString(srv.Pending()) != pending || stepsString(srv.Faults()) != faults {
			t.Errorf("the refused Do(%s) changed the server", st)
		}
	}
	runPending(t, srv)
}

func TestStepKindNames(t *testing.T) {
	for k := Apply; k <= StartServer; k++ {
		got, err := ParseStepKind(k.String())
		if err != nil || got != k {
			t.Errorf("ParseStepKind(%q) = %v, %v", k.String(), got, err)
		}
	}
	if _, err := ParseStepKind("teleport"); err == nil || !strings.Contains(err.Error(), "apply, deliver") {
		t.Errorf("ParseStepKind(teleport) = %v, want an error listing the kinds", err)
	}
	if got := StepKind(42).String(); got != "StepKind(42)" {
		t.Errorf("StepKind(42).String() = %q", got)
	}
	if got := (Step{Kind: LoseReply, Client: 3}).String(); got != "lose-reply c3" {
		t.Errorf("Step.String() = %q", got)
	}
}

// TestObserver: WithObserver sees every step, numbered, with the client and session.
func TestObserver(t *testing.T) {
	var recs []Record
	srv := NewServer(WithManualTransport(), WithObserver(func(r Record) { recs = append(recs, r) }))
	a, _ := connect(t, srv)
	run(t, srv, a, bgCreate(a, "/n", zk.FlagEphemeral))
	srv.Advance(1500 * time.Millisecond)
	do(t, srv, Disconnect, a)
	a.Close()
	srv.mu.Lock()
	defer srv.mu.Unlock()
	var kinds []string
	for i, r := range recs {
		if r.Seq != i+1 {
			t.Fatalf("record %d has Seq %d", i, r.Seq)
		}
		kinds = append(kinds, r.Kind)
	}
	want := []string{"state", "state", "state", "connect", "send", "apply", "reply", "advance", "disconnect", "state", "close"}
	if !slices.Equal(kinds, want) {
		t.Fatalf("record kinds %v, want %v", kinds, want)
	}
	apply := recs[5]
	if apply.Client != 1 || apply.Session != a.session || apply.Detail != `create /n flags=1 data="" -> /n zxid=2` {
		t.Fatalf("apply record %+v", apply)
	}
	if recs[7].Client != 0 || recs[7].Elapsed != 1500*time.Millisecond || recs[8].Elapsed != 1500*time.Millisecond {
		t.Fatalf("advance record %+v, next %+v", recs[7], recs[8])
	}
	if s := apply.String(); !strings.Contains(s, "c1") || !strings.Contains(s, "apply") || !strings.Contains(s, "-> /n") {
		t.Fatalf("Record.String() = %q", s)
	}
}
