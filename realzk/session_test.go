package realzk

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// eventLog drains a go-zookeeper event channel and keeps every event with
// the time it arrived.
type eventLog struct {
	mu     sync.Mutex
	start  time.Time
	events []timedEvent
	added  chan struct{} // signalled on every event
}

type timedEvent struct {
	at time.Duration // since the log started
	zk.Event
}

func (e timedEvent) String() string {
	if e.Type == zk.EventSession {
		return fmt.Sprintf("%6dms %v", e.at.Milliseconds(), e.State)
	}
	return fmt.Sprintf("%6dms %v %s state=%v err=%v", e.at.Milliseconds(), e.Type, e.Path, e.State, e.Err)
}

func recordEvents(events <-chan zk.Event) *eventLog {
	l := &eventLog{start: time.Now(), added: make(chan struct{}, 1)}
	go func() {
		for ev := range events {
			l.mu.Lock()
			l.events = append(l.events, timedEvent{time.Since(l.start), ev})
			l.mu.Unlock()
			select {
			case l.added <- struct{}{}:
			default:
			}
		}
	}()
	return l
}

// mark returns the number of events so far, to look only at later ones.
func (l *eventLog) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.events)
}

// since returns the events after mark.
func (l *eventLog) since(mark int) []timedEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]timedEvent(nil), l.events[mark:]...)
}

// waitFor waits until an event after mark satisfies match, and returns the
// events after mark up to and including it.
func (l *eventLog) waitFor(t testing.TB, mark int, what string, limit time.Duration, match func(zk.Event) bool) []timedEvent {
	t.Helper()
	deadline := time.After(limit)
	for {
		events := l.since(mark)
		for i, ev := range events {
			if match(ev.Event) {
				return events[:i+1]
			}
		}
		select {
		case <-l.added:
		case <-deadline:
			t.Fatalf("no %s within %v; events since mark:\n%s", what, limit, formatEvents(events))
		}
	}
}

func isState(s zk.State) func(zk.Event) bool {
	return func(ev zk.Event) bool { return ev.Type == zk.EventSession && ev.State == s }
}

func formatEvents(events []timedEvent) string {
	var b strings.Builder
	for _, ev := range events {
		b.WriteString("  " + ev.String() + "\n")
	}
	return b.String()
}

// sessionStates returns the states of the session events among events.
func sessionStates(events []timedEvent) []zk.State {
	var states []zk.State
	for _, ev := range events {
		if ev.Type == zk.EventSession {
			states = append(states, ev.State)
		}
	}
	return states
}

// proxiedClient connects a go-zookeeper client to e's server 0 through a new
// proxy and waits for its session.
func proxiedClient(t *testing.T, e *Ensemble, sessionTimeout time.Duration) (*Proxy, *zk.Conn, *eventLog) {
	t.Helper()
	p, err := NewProxy(t.Context(), e.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	conn, events, err := zk.Connect([]string{p.Addr()}, sessionTimeout, zk.WithLogInfo(false), zk.WithLogger(testLogger{t}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	log := recordEvents(events)
	log.waitFor(t, 0, "session", 20*time.Second, isState(zk.StateHasSession))
	return p, conn, log
}

// TestSeverKeepsSession pins down what go-zookeeper v1.0.4 does on
// connection loss: a request in flight fails with ErrConnectionClosed, the
// client goes Disconnected, Connecting, Connected, HasSession (a client with
// one address waits 1 s before redialling), resumes the same session, keeps
// its ephemeral nodes and re-registers its watches.
func TestSeverKeepsSession(t *testing.T) {
	e := Shared(t)
	observer, _ := connect(t, e.Addrs(), 4*time.Second)
	base := testPath(t, observer)
	p, conn, log := proxiedClient(t, e, 4*time.Second)
	sid := conn.SessionID()
	if _, err := conn.Create(base+"/eph", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	_, _, watch, err := conn.ExistsW(base + "/later")
	if err != nil {
		t.Fatal(err)
	}

	// Hold a request in the frozen proxy so it is in flight at Sever.
	p.Freeze()
	before := p.Stats().ClientBytes
	inflight := make(chan error, 1)
	go func() { _, _, err := conn.Get(base + "/eph"); inflight <- err }()
	waitBytes(t, p, before)
	mark := log.mark()
	severed := time.Now()
	if n := p.Sever(); n != 1 {
		t.Fatalf("Sever closed %d connections, want 1", n)
	}
	if err := <-inflight; err != zk.ErrConnectionClosed {
		t.Errorf("request in flight at Sever returned %v, want zk.ErrConnectionClosed", err)
	}
	got := log.waitFor(t, mark, "resumed session", 20*time.Second, isState(zk.StateHasSession))
	t.Logf("reconnected %v after Sever; events:\n%s", time.Since(severed).Round(time.Millisecond), formatEvents(got))
	want := []zk.State{zk.StateDisconnected, zk.StateConnecting, zk.StateConnected, zk.StateHasSession}
	if states := sessionStates(got); !slices.Equal(states, want) {
		t.Errorf("session events after Sever: %v, want %v", states, want)
	}
	if conn.SessionID() != sid {
		t.Errorf("session id changed from %x to %x; want the same session", sid, conn.SessionID())
	}
	if ok, _, err := observer.Exists(base + "/eph"); err != nil || !ok {
		t.Errorf("ephemeral node after Sever: exists=%v, %v; want it kept", ok, err)
	}
	if _, err := observer.Create(base+"/later", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-watch:
		if ev.Type != zk.EventNodeCreated || ev.Path != base+"/later" {
			t.Errorf("ExistsW set before Sever fired %+v, want EventNodeCreated on %s/later", ev, base)
		}
	case <-time.After(20 * time.Second):
		t.Errorf("ExistsW set before Sever never fired (watch lost on reconnect)")
	}
}

// TestFreezeExpiresSession pins down what go-zookeeper v1.0.4 does when the
// server expires its session during a partition (the proxy frozen past the
// session timeout), for both ways the partition can end.
func TestFreezeExpiresSession(t *testing.T) {
	e := Shared(t)
	observer, _ := connect(t, e.Addrs(), 4*time.Second)
	for _, end := range []string{"unfreeze", "sever"} {
		t.Run(end, func(t *testing.T) {
			base := testPath(t, observer)
			p, conn, log := proxiedClient(t, e, time.Second)
			sid := conn.SessionID()
			if _, err := conn.Create(base+"/eph", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			_, _, existsW, err := conn.ExistsW(base + "/eph")
			if err != nil {
				t.Fatal(err)
			}
			_, _, getW, err := conn.GetW(base + "/eph")
			if err != nil {
				t.Fatal(err)
			}
			_, _, childrenW, err := conn.ChildrenW(base)
			if err != nil {
				t.Fatal(err)
			}

			mark := log.mark()
			frozen := time.Now()
			p.Freeze()
			inflight := make(chan error, 1)
			go func() { _, _, err := conn.Get(base + "/eph"); inflight <- err }()
			log.waitFor(t, mark, "disconnect", 20*time.Second, isState(zk.StateDisconnected))
			if err := <-inflight; err != zk.ErrConnectionClosed {
				t.Errorf("request in flight when the client gave up on the connection returned %v, want zk.ErrConnectionClosed", err)
			}
			t.Logf("client gave up on the connection %v after Freeze", time.Since(frozen).Round(time.Millisecond))
			// A request made while disconnected waits in go-zookeeper's queue.
			queued := make(chan error, 1)
			go func() {
				_, err := conn.Create(base+"/queued", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
				queued <- err
			}()
			waitExpired(t, observer, base+"/eph")
			t.Logf("server expired the session %v after Freeze", time.Since(frozen).Round(time.Millisecond))
			// End the partition only once the client has redialled through
			// the frozen proxy (it waits 1 s first) and is waiting for the
			// server's answer to its session request.
			log.waitFor(t, mark, "redial", 20*time.Second, isState(zk.StateConnected))
			waitAccepted(t, p, 2)
			if end == "unfreeze" {
				p.Unfreeze()
			} else {
				p.Sever()
			}
			got := log.waitFor(t, mark, "new session", 20*time.Second, isState(zk.StateHasSession))
			t.Logf("events after Freeze:\n%s", formatEvents(got))

			wantStates := []zk.State{zk.StateDisconnected, zk.StateConnecting, zk.StateConnected}
			if end == "sever" {
				// The connection the client opened during the partition is
				// severed before the server answers its session request:
				// one more round, then the server says expired.
				wantStates = append(wantStates, zk.StateDisconnected, zk.StateConnecting, zk.StateConnected)
			}
			wantStates = append(wantStates, zk.StateExpired, zk.StateDisconnected, zk.StateConnecting, zk.StateConnected, zk.StateHasSession)
			if states := sessionStates(got); !slices.Equal(states, wantStates) {
				t.Errorf("session events: %v, want %v", states, wantStates)
			}
			// Between StateExpired and the next StateDisconnected: one
			// EventNotWatching per watched path (ExistsW and GetW on one
			// existing node share an entry).
			notWatching := map[string]bool{}
			afterExpired := false
			for _, ev := range got {
				switch {
				case ev.Type == zk.EventSession:
					afterExpired = ev.State == zk.StateExpired || (afterExpired && ev.State != zk.StateDisconnected)
				case ev.Type == zk.EventNotWatching && afterExpired && ev.Err == zk.ErrSessionExpired && ev.State == zk.StateDisconnected:
					notWatching[ev.Path] = true
				default:
					t.Errorf("unexpected event %v", ev)
				}
			}
			if want := map[string]bool{base + "/eph": true, base: true}; !maps.Equal(notWatching, want) {
				t.Errorf("EventNotWatching(ErrSessionExpired) right after StateExpired for %v, want %v", notWatching, want)
			}
			for name, ch := range map[string]<-chan zk.Event{"ExistsW": existsW, "GetW": getW, "ChildrenW": childrenW} {
				ev, ok := <-ch
				if !ok || ev.Type != zk.EventNotWatching || ev.Err != zk.ErrSessionExpired || ev.State != zk.StateDisconnected {
					t.Errorf("%s channel got %+v (open=%v), want EventNotWatching with ErrSessionExpired", name, ev, ok)
				}
				if _, open := <-ch; open {
					t.Errorf("%s channel not closed after EventNotWatching", name)
				}
			}
			if err := <-queued; err != zk.ErrNoServer {
				t.Errorf("request queued while disconnected returned %v, want zk.ErrNoServer", err)
			}
			if ok, _, err := observer.Exists(base + "/queued"); err != nil || ok {
				t.Errorf("queued create: exists=%v, %v; want it never applied", ok, err)
			}
			if newSID := conn.SessionID(); newSID == sid || newSID == 0 {
				t.Errorf("session id after expiry %x (old %x); want a new session", newSID, sid)
			}
			if _, err := conn.Create(base+"/eph2", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
				t.Errorf("create on the new session: %v", err)
			}
		})
	}
}

// waitExpired waits until the ephemeral node path, owned by a partitioned
// client, is gone: the server has expired that client's session.
func waitExpired(t testing.TB, observer *zk.Conn, path string) {
	t.Helper()
	for {
		ok, _, watch, err := observer.ExistsW(path)
		if err != nil {
			t.Fatalf("watch %s: %v", path, err)
		}
		if !ok {
			return
		}
		select {
		case <-watch:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s still there 30s into the partition: the session did not expire", path)
		}
	}
}

// waitBytes waits until the proxy has read a request's worth of bytes from
// its client since before.
func waitBytes(t testing.TB, p *Proxy, before int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for p.Stats().ClientBytes < before+20 {
		if time.Now().After(deadline) {
			t.Fatalf("the client sent nothing through the proxy")
		}
		time.Sleep(time.Millisecond)
	}
}

// waitAccepted waits until the proxy has accepted n connections in all.
func waitAccepted(t testing.TB, p *Proxy, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for p.Stats().Accepted < n {
		if time.Now().After(deadline) {
			t.Fatalf("proxy accepted %d connections, want %d", p.Stats().Accepted, n)
		}
		time.Sleep(time.Millisecond)
	}
}
