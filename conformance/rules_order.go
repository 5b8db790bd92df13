package conformance

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// orderRules: what a session can rely on about the order of events and replies, and what it
// cannot rely on about the order of children.
var orderRules = []rule{
	{"order/a watch event is delivered before the reply to a later request", func(t *testing.T, h *harness) {
		// "Later" must mean later on a's server. On one server b's Set returning is enough; on an
		// ensemble a Sync is not (see SEMANTICS.md): a leader answers it before applying a write
		// that another server has already acknowledged. So a first reads x until its server
		// shows b's write.
		a, b := h.connect(), h.connect()
		mustCreate(t, b, h.path("x"), nil, zk.FlagPersistent)
		mustCreate(t, b, h.path("y"), nil, zk.FlagPersistent)
		for round := 0; round < 5; round++ {
			ch := setWatch(t, a, getWatch, h.path("x"))
			set := mustSet(t, b, h.path("x"), []byte{byte(round)})
			awaitWrite(t, a, h.path("x"), set.Mzxid)
			if _, _, err := a.Get(h.path("y")); err != nil {
				t.Fatalf("Get(y): %v", err)
			}
			select {
			case ev := <-ch:
				want := zk.Event{Type: zk.EventNodeDataChanged, State: zk.StateSyncConnected, Path: h.path("x")}
				if !sameEvent(ev, want) {
					t.Fatalf("round %d: got %s, want %s", round, formatEvent(ev), formatEvent(want))
				}
			default:
				t.Fatalf("round %d: Get(y) returned before the NodeDataChanged event for x (set earlier by another session) was on the watch channel", round)
			}
		}
	}},
	{"order/children come back as a set, in the same order for every reader", func(t *testing.T, h *harness) {
		a, b := h.connect(), h.connect()
		var created []string
		for i := 0; i < 20; i++ {
			name := fmt.Sprintf("n%02d-%c", (i*7)%20, 'a'+i)
			created = append(created, name)
			mustCreate(t, a, h.path(name), nil, zk.FlagPersistent)
		}
		first, st, err := a.Children(h.base)
		if err != nil {
			t.Fatalf("Children: %v", err)
		}
		again, _, err := a.Children(h.base)
		if err != nil {
			t.Fatalf("Children: %v", err)
		}
		mustSync(t, b, h.base)
		other, _, err := b.Children(h.base)
		if err != nil {
			t.Fatalf("Children from another session: %v", err)
		}
		if !slices.Equal(first, again) || !slices.Equal(first, other) {
			t.Fatalf("children order differs between reads: %v, %v, %v", first, again, other)
		}
		sortedGot, sortedWant := slices.Sorted(slices.Values(first)), slices.Sorted(slices.Values(created))
		if !slices.Equal(sortedGot, sortedWant) || int(st.NumChildren) != len(created) {
			t.Fatalf("children %v (numChildren %d), want the set %v", first, st.NumChildren, created)
		}
	}},
}

// awaitWrite syncs c and reads path until c's server has applied the write of zxid mzxid to it.
func awaitWrite(t *testing.T, c Conn, path string, mzxid int64) {
	t.Helper()
	mustSync(t, c, path)
	deadline := time.Now().Add(waitTimeout)
	for {
		_, st, err := c.Exists(path)
		if err != nil {
			t.Fatalf("Exists(%q): %v", path, err)
		}
		if st.Mzxid >= mzxid {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still at mzxid %#x after %v, want %#x", path, st.Mzxid, waitTimeout, mzxid)
		}
	}
}
