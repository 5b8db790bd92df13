package conformance

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// expiryTimeout is the session timeout asked for by sessions that a rule expires.
const expiryTimeout = time.Second

// severRules run only when the Target can sever connections.
var severRules = []rule{
	{"sever/the session survives a dropped connection with its id and ephemerals", func(t *testing.T, h *harness) {
		c, observer := h.connect(), h.connect()
		mustCreate(t, c, h.path("e"), nil, zk.FlagEphemeral)
		sid := c.SessionID()
		mark, _ := c.log.snapshot()
		h.target.Sever(t, c.Conn)
		i := c.waitSessionEvent(len(mark), zk.StateDisconnected)
		c.waitSessionEvent(i+1, zk.StateHasSession)
		c.waitState(zk.StateHasSession)
		if c.SessionID() != sid {
			t.Fatalf("session id %#x after reconnect, want %#x", c.SessionID(), sid)
		}
		st := mustStat(t, observer, h.path("e"))
		if st.EphemeralOwner != sid {
			t.Fatalf("ephemeral owner %#x after reconnect, want %#x", st.EphemeralOwner, sid)
		}
		mustCreate(t, c, h.path("after"), nil, zk.FlagPersistent)
	}},
	{"sever/watches set before a dropped connection still fire", func(t *testing.T, h *harness) {
		c, writer := h.connect(), h.connect()
		mustCreate(t, writer, h.path("x"), nil, zk.FlagPersistent)
		data := setWatch(t, c, getWatch, h.path("x"))
		created := setWatch(t, c, existsWatch, h.path("y"))
		children := setWatch(t, c, childrenWatch, h.base)
		mark, _ := c.log.snapshot()
		h.target.Sever(t, c.Conn)
		c.waitSessionEvent(len(mark), zk.StateDisconnected)
		mustSet(t, writer, h.path("x"), []byte("changed"))
		mustCreate(t, writer, h.path("y"), nil, zk.FlagPersistent)
		expectWatchEvent(t, data, zk.EventNodeDataChanged, h.path("x"), "GetW across a reconnect")
		expectWatchEvent(t, created, zk.EventNodeCreated, h.path("y"), "ExistsW across a reconnect")
		expectWatchEvent(t, children, zk.EventNodeChildrenChanged, h.base, "ChildrenW across a reconnect")
	}},
}

// expireRules run only when the Target can expire sessions.
var expireRules = []rule{
	{"expire/an expired session's ephemerals are deleted and other sessions are notified", func(t *testing.T, h *harness) {
		c, observer := h.connectTimeout(expiryTimeout), h.connect()
		mustCreate(t, c, h.path("e"), nil, zk.FlagEphemeral)
		deleted := setWatch(t, observer, existsWatch, h.path("e"))
		children := setWatch(t, observer, childrenWatch, h.base)
		h.target.Expire(t, c.Conn)
		expectWatchEvent(t, deleted, zk.EventNodeDeleted, h.path("e"), "ExistsW on the expired session's ephemeral")
		expectWatchEvent(t, children, zk.EventNodeChildrenChanged, h.base, "ChildrenW on its parent")
		expectAbsent(t, observer, h.path("e"))
	}},
	{"expire/the client sees StateExpired, loses its watches, then gets a new session", func(t *testing.T, h *harness) {
		c := h.connectTimeout(expiryTimeout)
		mustCreate(t, c, h.path("x"), nil, zk.FlagPersistent)
		watch := setWatch(t, c, getWatch, h.path("x"))
		sid := c.SessionID()
		mark, _ := c.log.snapshot()
		h.target.Expire(t, c.Conn)
		expired := c.waitSessionEvent(len(mark), zk.StateExpired)
		got := waitEvent(t, watch, "GetW pending at expiry")
		want := zk.Event{Type: zk.EventNotWatching, State: zk.StateDisconnected, Path: h.path("x"), Err: zk.ErrSessionExpired}
		if !sameEvent(got, want) {
			t.Fatalf("pending watch at expiry got %s, want %s", formatEvent(got), formatEvent(want))
		}
		expectClosedAfterEvent(t, watch, "GetW pending at expiry")
		c.waitSessionEvent(expired+1, zk.StateHasSession)
		c.waitState(zk.StateHasSession)
		if c.SessionID() == sid || c.SessionID() == 0 {
			t.Fatalf("session id %#x after expiry, want a new non-zero id (old %#x)", c.SessionID(), sid)
		}
		e := mustCreate(t, c, h.path("e"), nil, zk.FlagEphemeral)
		if st := mustStat(t, c, e); st.EphemeralOwner != c.SessionID() {
			t.Fatalf("ephemeral created after expiry owned by %#x, want the new session %#x", st.EphemeralOwner, c.SessionID())
		}
	}},
}
