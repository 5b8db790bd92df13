package conformance

import (
	"context"
	"testing"

	"github.com/go-zookeeper/zk"
)

// watchKind names the three ways to leave a one-shot watch.
type watchKind string

const (
	existsWatch   watchKind = "ExistsW"
	getWatch      watchKind = "GetW"
	childrenWatch watchKind = "ChildrenW"
)

// setWatch leaves a watch of the given kind on path (after a Sync, so that it sees every write
// completed so far) and returns its channel; it fails the rule on any error.
func setWatch(t *testing.T, c Conn, kind watchKind, path string) <-chan zk.Event {
	t.Helper()
	mustSync(t, c, path)
	var (
		ch  <-chan zk.Event
		err error
	)
	switch kind {
	case existsWatch:
		_, _, ch, err = c.ExistsW(path)
	case getWatch:
		_, _, ch, err = c.GetW(path)
	case childrenWatch:
		_, _, ch, err = c.ChildrenW(path)
	}
	if err != nil {
		t.Fatalf("%s(%q): %v", kind, path, err)
	}
	if ch == nil {
		t.Fatalf("%s(%q) returned a nil channel", kind, path)
	}
	return ch
}

// watchExpectation is the event one watch should (or, with typ 0, should not) receive.
type watchExpectation struct {
	kind watchKind
	node string // "n" (the written node), "p" (its parent), relative to the base path
	typ  zk.EventType
}

// watchRules: which watches each write fires, and how go-zookeeper delivers them.
var watchRules = []rule{
	{"watch/ExistsW on a missing node leaves a watch that fires NodeCreated", func(t *testing.T, h *harness) {
		watcher, writer := h.connect(), h.connect()
		ok, st, ch, err := watcher.ExistsW(h.path("x"))
		if err != nil || ok || ch == nil || st == nil || *st != (zk.Stat{}) {
			t.Fatalf("ExistsW(missing) = %v, %v, channel %v, %v; want false, zero stat, a channel, nil", ok, st, ch, err)
		}
		mustCreate(t, writer, h.path("x"), nil, zk.FlagPersistent)
		expectWatchEvent(t, ch, zk.EventNodeCreated, h.path("x"), "ExistsW on missing node")
	}},
	{"watch/GetW and ChildrenW on a missing node return ErrNoNode and leave no watch", func(t *testing.T, h *harness) {
		watcher, writer := h.connect(), h.connect()
		data, st, ch, err := watcher.GetW(h.path("x"))
		if data != nil || st != nil || ch != nil {
			t.Fatalf("GetW(missing) = %v, %v, %v; want nil data, stat and channel", data, st, ch)
		}
		expectErr(t, err, zk.ErrNoNode, "GetW(missing)")
		children, st, ch, err := watcher.ChildrenW(h.path("x"))
		if children != nil || st != nil || ch != nil {
			t.Fatalf("ChildrenW(missing) = %v, %v, %v; want nil children, stat and channel", children, st, ch)
		}
		expectErr(t, err, zk.ErrNoNode, "ChildrenW(missing)")
		mark, _ := watcher.log.snapshot()
		mustCreate(t, writer, h.path("x"), nil, zk.FlagPersistent)
		mustCreate(t, writer, h.path("x/c"), nil, zk.FlagPersistent)
		mustSet(t, writer, h.path("x"), []byte("d"))
		mustDelete(t, writer, h.path("x/c"))
		mustDelete(t, writer, h.path("x"))
		watcher.quiesce()
		if events, _ := watcher.log.snapshot(); len(events) != len(mark) {
			t.Fatalf("session received %s after GetW/ChildrenW on a missing node; want no notification", formatEvents(events[len(mark):]))
		}
	}},
	{"watch/reads of a missing node", func(t *testing.T, h *harness) {
		c := h.connect()
		ok, st, err := c.Exists(h.path("x"))
		if ok || err != nil || st == nil || *st != (zk.Stat{}) {
			t.Fatalf("Exists(missing) = %v, %v, %v; want false, zero stat, nil", ok, st, err)
		}
		data, st, err := c.Get(h.path("x"))
		expectErr(t, err, zk.ErrNoNode, "Get(missing)")
		if data != nil || st == nil || *st != (zk.Stat{}) {
			t.Fatalf("Get(missing) = %v, %v; want nil data and a zero stat", data, st)
		}
		children, st, err := c.Children(h.path("x"))
		expectErr(t, err, zk.ErrNoNode, "Children(missing)")
		if children != nil || st == nil || *st != (zk.Stat{}) {
			t.Fatalf("Children(missing) = %v, %v; want nil children and a zero stat", children, st)
		}
	}},
	{"watch/each write fires exactly the watches ZooKeeper fires", func(t *testing.T, h *harness) {
		// For each write: watches on the node n (under parent p) and on p, and what each gets.
		cases := []struct {
			name   string
			setup  func(t *testing.T, c Conn, n string)
			write  func(t *testing.T, c Conn, n string)
			expect []watchExpectation
		}{
			{
				name:  "create",
				setup: func(t *testing.T, c Conn, n string) {},
				write: func(t *testing.T, c Conn, n string) { mustCreate(t, c, n, nil, zk.FlagPersistent) },
				expect: []watchExpectation{
					{existsWatch, "n", zk.EventNodeCreated},
					{childrenWatch, "p", zk.EventNodeChildrenChanged},
					{getWatch, "p", 0}, {existsWatch, "p", 0},
				},
			},
			{
				name:  "setData",
				setup: func(t *testing.T, c Conn, n string) { mustCreate(t, c, n, nil, zk.FlagPersistent) },
				write: func(t *testing.T, c Conn, n string) { mustSet(t, c, n, []byte("new")) },
				expect: []watchExpectation{
					{existsWatch, "n", zk.EventNodeDataChanged}, {getWatch, "n", zk.EventNodeDataChanged},
					{childrenWatch, "n", 0},
					{childrenWatch, "p", 0}, {getWatch, "p", 0}, {existsWatch, "p", 0},
				},
			},
			{
				name:  "delete",
				setup: func(t *testing.T, c Conn, n string) { mustCreate(t, c, n, nil, zk.FlagPersistent) },
				write: func(t *testing.T, c Conn, n string) { mustDelete(t, c, n) },
				expect: []watchExpectation{
					{existsWatch, "n", zk.EventNodeDeleted}, {getWatch, "n", zk.EventNodeDeleted},
					{childrenWatch, "n", zk.EventNodeDeleted},
					{childrenWatch, "p", zk.EventNodeChildrenChanged},
					{getWatch, "p", 0}, {existsWatch, "p", 0},
				},
			},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				watcher, writer := h.connect(), h.connect()
				parent := h.path(tc.name)
				node := parent + "/n"
				mustCreate(t, writer, parent, nil, zk.FlagPersistent)
				tc.setup(t, writer, node)
				channels := make([]<-chan zk.Event, len(tc.expect))
				for i, e := range tc.expect {
					target := parent
					if e.node == "n" {
						target = node
					}
					channels[i] = setWatch(t, watcher, e.kind, target)
				}
				tc.write(t, writer, node)
				for i, e := range tc.expect {
					what := string(e.kind) + " on " + e.node + " after " + tc.name
					if e.typ == 0 {
						expectNoEvent(t, watcher, channels[i], what)
						continue
					}
					path := parent
					if e.node == "n" {
						path = node
					}
					expectWatchEvent(t, channels[i], e.typ, path, what)
				}
			})
		}
	}},
	{"watch/grandchild create and delete do not fire the grandparent's watches", func(t *testing.T, h *harness) {
		watcher, writer := h.connect(), h.connect()
		mustCreate(t, writer, h.path("c"), nil, zk.FlagPersistent)
		kinds := []watchKind{childrenWatch, getWatch, existsWatch}
		var channels []<-chan zk.Event
		for _, k := range kinds {
			channels = append(channels, setWatch(t, watcher, k, h.base))
		}
		mustCreate(t, writer, h.path("c/g"), nil, zk.FlagPersistent)
		mustDelete(t, writer, h.path("c/g"))
		for i, k := range kinds {
			expectNoEvent(t, watcher, channels[i], string(k)+" on grandparent")
		}
	}},
	{"watch/a watch fires once and its channel is then closed", func(t *testing.T, h *harness) {
		watcher, writer := h.connect(), h.connect()
		mustCreate(t, writer, h.path("x"), nil, zk.FlagPersistent)
		ch := setWatch(t, watcher, getWatch, h.path("x"))
		mark, _ := watcher.log.snapshot()
		mustSet(t, writer, h.path("x"), []byte("1"))
		expectWatchEvent(t, ch, zk.EventNodeDataChanged, h.path("x"), "first set")
		expectClosedAfterEvent(t, ch, "GetW after its event")
		mustSet(t, writer, h.path("x"), []byte("2"))
		watcher.quiesce()
		if events, _ := watcher.log.snapshot(); len(events) != len(mark)+1 {
			t.Fatalf("session received %s for two sets after one GetW; want exactly one notification", formatEvents(events[len(mark):]))
		}
	}},
	{"watch/a session's own write fires its own watch", func(t *testing.T, h *harness) {
		c := h.connect()
		mustCreate(t, c, h.path("x"), nil, zk.FlagPersistent)
		ch := setWatch(t, c, getWatch, h.path("x"))
		mustSet(t, c, h.path("x"), []byte("own"))
		expectWatchEvent(t, ch, zk.EventNodeDataChanged, h.path("x"), "GetW then own Set")
	}},
	{"watch/duplicate watches get one notification delivered to every channel", func(t *testing.T, h *harness) {
		watcher, writer := h.connect(), h.connect()
		mustCreate(t, writer, h.path("x"), nil, zk.FlagPersistent)
		kinds := []watchKind{getWatch, getWatch, existsWatch}
		var channels []<-chan zk.Event
		for _, k := range kinds {
			channels = append(channels, setWatch(t, watcher, k, h.path("x")))
		}
		mark, _ := watcher.log.snapshot()
		mustSet(t, writer, h.path("x"), []byte("v"))
		for i, k := range kinds {
			expectWatchEvent(t, channels[i], zk.EventNodeDataChanged, h.path("x"), string(k)+" #"+sequenceSuffix(int32(i)))
		}
		watcher.quiesce()
		events, _ := watcher.log.snapshot()
		if got := events[len(mark):]; len(got) != 1 {
			t.Fatalf("session channel received %s; want exactly one NodeDataChanged notification", formatEvents(got))
		}
	}},
	{"watch/notifications also arrive on the session channel with identical fields", func(t *testing.T, h *harness) {
		watcher, writer := h.connect(), h.connect()
		ch := setWatch(t, watcher, existsWatch, h.path("x"))
		mark, _ := watcher.log.snapshot()
		mustCreate(t, writer, h.path("x"), nil, zk.FlagPersistent)
		want := zk.Event{Type: zk.EventNodeCreated, State: zk.StateSyncConnected, Path: h.path("x")}
		expectWatchEvent(t, ch, want.Type, want.Path, "ExistsW")
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		_, got, err := watcher.log.waitFor(ctx, len(mark), func(zk.Event) bool { return true })
		if err != nil {
			t.Fatalf("no event on the session channel: %v", err)
		}
		if !sameEvent(got, want) {
			t.Fatalf("session channel got %s, want %s", formatEvent(got), formatEvent(want))
		}
	}},
}
