package conformance

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// Ensemble is a Target's control of its servers, for the ensemble rules. Measured on a real 3.8
// ensemble (realzk): a killed server's clients reconnect to another server with their sessions;
// without a majority no server serves (each closes its client connections and answers a connect
// request by closing the connection), and no session expires until a majority is back.
type Ensemble struct {
	// Servers is how many servers the target has (at least 3 for the rules).
	Servers int
	// ServerOf returns the server (0 to Servers-1) c is connected to now.
	ServerOf func(t *testing.T, c Conn) int
	// Stop stops server i as a kill does.
	Stop func(t *testing.T, i int)
	// Start starts the stopped server i and returns once it runs and, if a majority now runs,
	// the ensemble serves again.
	Start func(t *testing.T, i int)
	// Wait lets d pass on the target's clock: real time on a real server, the virtual clock
	// (Server.Advance) on the model.
	Wait func(t *testing.T, d time.Duration)
}

// outageSessionTimeout is the quorum-loss rule's session timeout. When a majority is back, the new leader
// gives every session its whole timeout again, and the client must be back within it: go-zookeeper sleeps
// a second each time it has tried every server, so with expiryTimeout (1 s) a real session expired on a
// loaded machine (once in 10 fresh-clone runs) before the client reconnected.
const outageSessionTimeout = 3 * expiryTimeout

// outage is how long the quorum-loss rule keeps a majority stopped: longer than its session's
// timeout, so that the rule shows no session expires without a leader.
const outage = 2 * outageSessionTimeout

// stopped stops server i and restarts it when the rule ends, unless started is called first.
func (h *harness) stopped(t *testing.T, i int) (start func()) {
	t.Helper()
	e := h.target.Ensemble
	e.Stop(t, i)
	running := false
	start = func() {
		t.Helper()
		if !running {
			running = true
			e.Start(t, i)
		}
	}
	t.Cleanup(start)
	t.Cleanup(func() { h.waitServing(t) }) // runs after start: cleanups are last in, first out
	return start
}

// waitServing waits until the admin session can make requests again (after a server restart
// its client may still be going round its server list).
func (h *harness) waitServing(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(2 * waitTimeout)
	for {
		_, err := h.admin.Sync(h.base)
		if err == nil || !(errors.Is(err, zk.ErrNoServer) || errors.Is(err, zk.ErrConnectionClosed)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the admin session cannot reach a server %v after the restart: %v", 2*waitTimeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ensembleRules run only when the Target can stop and start its servers.
var ensembleRules = []rule{
	{"ensemble/a client whose server stops moves to another server with its session, ephemerals and watches", func(t *testing.T, h *harness) {
		e := h.target.Ensemble
		c, writer := h.connect(), h.connect()
		mustCreate(t, c, h.path("e"), nil, zk.FlagEphemeral)
		mustCreate(t, writer, h.path("x"), nil, zk.FlagPersistent)
		watch := setWatch(t, c, getWatch, h.path("x"))
		sid, on := c.SessionID(), e.ServerOf(t, c.Conn)
		mark, _ := c.log.snapshot()
		start := h.stopped(t, on)
		i := c.waitSessionEvent(len(mark), zk.StateDisconnected)
		c.waitSessionEvent(i+1, zk.StateHasSession)
		c.waitState(zk.StateHasSession)
		if c.SessionID() != sid {
			t.Fatalf("session %#x after server %d stopped, want the same session %#x", c.SessionID(), on, sid)
		}
		if now := e.ServerOf(t, c.Conn); now == on {
			t.Fatalf("the client is on server %d, which is stopped", now)
		}
		h.waitServing(t)
		if st := mustStat(t, h.admin, h.path("e")); st.EphemeralOwner != sid {
			t.Fatalf("ephemeral owner %#x after the move, want %#x", st.EphemeralOwner, sid)
		}
		mustSet(t, writer, h.path("x"), []byte("changed"))
		expectWatchEvent(t, watch, zk.EventNodeDataChanged, h.path("x"), "GetW set before the server stopped")
		start()
	}},
	{"ensemble/after its server is stopped and started again the client resumes its session wherever it goes next", func(t *testing.T, h *harness) {
		// A restarted server may lag behind the zxid the client has seen; a real one then refuses the
		// connect without an answer ("client must try another server", measured) and go-zookeeper tries the
		// next: either way the client has its session back and its calls do not fail.
		e := h.target.Ensemble
		c := h.connect()
		mustCreate(t, c, h.path("e"), nil, zk.FlagEphemeral)
		sid := c.SessionID()
		for n, round := range []string{"its first server stopped", "its second server stopped, the first one back"} {
			mark, _ := c.log.snapshot()
			start := h.stopped(t, e.ServerOf(t, c.Conn))
			i := c.waitSessionEvent(len(mark), zk.StateDisconnected)
			c.waitSessionEvent(i+1, zk.StateHasSession)
			c.waitState(zk.StateHasSession)
			if c.SessionID() != sid {
				t.Fatalf("%s: session %#x, want the same session %#x", round, c.SessionID(), sid)
			}
			mustCreate(t, c, h.path(fmt.Sprintf("written after move %d", n+1)), nil, zk.FlagPersistent)
			if st := mustStat(t, c, h.path("e")); st.EphemeralOwner != sid {
				t.Fatalf("%s: ephemeral owner %#x, want %#x", round, st.EphemeralOwner, sid)
			}
			start()
			h.waitServing(t)
		}
	}},
	{"ensemble/without a majority the client stays disconnected and its session outlives the outage", func(t *testing.T, h *harness) {
		e := h.target.Ensemble
		c := h.connectTimeout(outageSessionTimeout)
		mustCreate(t, c, h.path("e"), nil, zk.FlagEphemeral)
		sid, on := c.SessionID(), e.ServerOf(t, c.Conn)
		// Stop a majority, the client's own server aside: it is left without a quorum. (The client
		// may move meanwhile, when a stop is the leader's; it is disconnected once the last stops.)
		var starts []func()
		for k := 1; len(starts) < e.Servers/2+1; k++ {
			last := len(starts) == e.Servers/2
			mark, _ := c.log.snapshot()
			starts = append(starts, h.stopped(t, (on+k)%e.Servers))
			if last {
				c.waitSessionEvent(len(mark), zk.StateDisconnected)
			}
		}
		mark, _ := c.log.snapshot()
		e.Wait(t, outage)
		events, _ := c.log.snapshot()
		for _, ev := range events[len(mark):] {
			if ev.Type == zk.EventSession && (ev.State == zk.StateHasSession || ev.State == zk.StateExpired) {
				t.Fatalf("session event %v while only a minority ran; want none until a majority is back: %s", ev.State, formatEvents(events[len(mark):]))
			}
		}
		after, _ := c.log.snapshot()
		starts[0]()
		c.waitSessionEvent(len(after), zk.StateHasSession)
		c.waitState(zk.StateHasSession)
		if c.SessionID() != sid {
			t.Fatalf("session %#x after the majority came back, want %#x: no session expires without a leader", c.SessionID(), sid)
		}
		h.waitServing(t)
		if st := mustStat(t, h.admin, h.path("e")); st.EphemeralOwner != sid {
			t.Fatalf("ephemeral owner %#x after the outage, want %#x", st.EphemeralOwner, sid)
		}
	}},
}
