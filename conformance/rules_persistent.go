package conformance

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// WatchConn is a session on a client that can also send the requests of ZooKeeper 3.6+ that go-zookeeper
// v1.0.4 cannot: addWatch (persistent and persistent-recursive watches), removeWatches and checkWatches.
// *model.Conn satisfies it, and so does the project's raw wire client (internal/rawzk).
type WatchConn interface {
	Conn
	// AddWatch sets a persistent watch on path, recursive or not, and returns a channel that receives every
	// event of the watch, in order.
	AddWatch(path string, recursive bool) (<-chan zk.Event, error)
	// RemoveWatches removes the session's watches of a type (WatcherChildren, WatcherData, WatcherAny: 1, 2,
	// 3, sent as given) on path.
	RemoveWatches(path string, watcherType int32) error
	// CheckWatches returns nil if the session has a watch of that type on path.
	CheckWatches(path string, watcherType int32) error
}

// The watcher types of removeWatches and checkWatches (Java's Watcher.WatcherType), as sent on the wire.
const (
	watcherChildren int32 = 1
	watcherData     int32 = 2
	watcherAny      int32 = 3
)

// The codes go-zookeeper v1.0.4 has no named error for, which these rules meet.
const (
	codeMarshalling int32 = -5   // a request the server cannot decode: an unknown watcher type or addWatch mode
	codeNoWatcher   int32 = -121 // removeWatches or checkWatches of a watch the session does not have
)

// watchSession is a WatchConn with a log of its session event channel, which carries every notification the
// server sends it; mark is how far expectNotes has read.
type watchSession struct {
	WatchConn
	t    *testing.T
	h    *harness
	log  *eventLog
	mark int
}

// connectWatch opens a session with ConnectWatch, closed when the rule ends.
func (h *harness) connectWatch() *watchSession {
	h.t.Helper()
	c, events := h.target.ConnectWatch(h.t, 10*time.Second)
	if c == nil || events == nil {
		h.t.Fatal("Target.ConnectWatch returned a nil WatchConn or event channel")
	}
	w := &watchSession{WatchConn: c, t: h.t, h: h, log: newEventLog(events)}
	s := &session{Conn: c, t: h.t, log: w.log}
	h.t.Cleanup(s.close)
	w.mark = s.waitSessionEvent(0, zk.StateHasSession) + 1
	return w
}

// quiesce is session.quiesce for a watch session.
func (w *watchSession) quiesce() {
	w.t.Helper()
	(&session{Conn: w.WatchConn, t: w.t, log: w.log}).quiesce()
}

// render names a node event by its type and its path relative to the rule's base ("/" for the base).
func (w *watchSession) render(ev zk.Event) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(ev.Path, w.h.base), "/")
	if rel == "" {
		rel = "/"
	}
	return strings.TrimPrefix(ev.Type.String(), "EventNode") + " " + rel
}

// expectNotes checks that the notifications the session received since the last check (after a quiesce)
// are exactly want, in order, each as "Created x", "DataChanged x", "Deleted x" or "ChildrenChanged x" with x
// relative to the base path. Session events are skipped; notifications outside the base path too.
func (w *watchSession) expectNotes(what string, want ...string) {
	w.t.Helper()
	w.quiesce()
	events, _ := w.log.snapshot()
	var got []string
	for _, ev := range events[w.mark:] {
		if ev.Type == zk.EventSession || (ev.Path != w.h.base && !strings.HasPrefix(ev.Path, w.h.base+"/")) {
			continue
		}
		got = append(got, w.render(ev))
	}
	w.mark = len(events)
	if want == nil {
		want = []string{}
	}
	if got == nil {
		got = []string{}
	}
	if !slices.Equal(got, want) {
		w.t.Fatalf("%s: the session received %q, want %q", what, got, want)
	}
}

// write is one write a rule makes with the admin session: "create x", "set x", "delete x" (x relative to the
// base path), and the notifications the watch session must receive for it.
type write struct {
	op   string
	want []string
}

// run makes each write in turn and checks the notifications it sent the session.
func (w *watchSession) run(writes ...write) {
	w.t.Helper()
	for _, wr := range writes {
		verb, rel, _ := strings.Cut(wr.op, " ")
		p := w.h.path(rel)
		switch verb {
		case "create":
			mustCreate(w.t, w.h.admin, p, nil, zk.FlagPersistent)
		case "set":
			mustSet(w.t, w.h.admin, p, []byte(wr.op))
		case "delete":
			mustDelete(w.t, w.h.admin, p)
		default:
			w.t.Fatalf("rule bug: write %q", wr.op)
		}
		w.expectNotes(wr.op, wr.want...)
	}
}

// mustAddWatch sets a persistent watch on the base-relative path rel, or fails the rule.
func (w *watchSession) mustAddWatch(rel string, recursive bool) <-chan zk.Event {
	w.t.Helper()
	mustSync(w.t, w.WatchConn, "/")
	ch, err := w.AddWatch(w.h.path(rel), recursive)
	if err != nil || ch == nil {
		w.t.Fatalf("AddWatch(%q, recursive=%t) = channel %v, %v; want a channel, nil", rel, recursive, ch, err)
	}
	return ch
}

// expectWatches checks CheckWatches on the base-relative path rel for the children, data and any types:
// each true wants nil, each false NoWatcher.
func (w *watchSession) expectWatches(rel string, children, data, any bool) {
	w.t.Helper()
	for i, has := range []bool{children, data, any} {
		typ := int32(i + 1)
		err := w.CheckWatches(w.h.path(rel), typ)
		what := fmt.Sprintf("CheckWatches(%q, type %d)", rel, typ)
		if has {
			expectNoError(w.t, err, what)
		} else {
			expectCode(w.t, err, codeNoWatcher, what)
		}
	}
}

// expectChannel checks that ch has received exactly the events want (rendered as by expectNotes), and no more,
// without ending.
func (w *watchSession) expectChannel(ch <-chan zk.Event, what string, want ...string) {
	w.t.Helper()
	w.quiesce()
	var got []string
	for range want {
		got = append(got, w.render(waitEvent(w.t, ch, what)))
	}
	select {
	case ev, ok := <-ch:
		if !ok {
			w.t.Fatalf("%s: the channel is closed after %q; a persistent watch's channel stays open", what, got)
		}
		got = append(got, w.render(ev))
	default:
	}
	if !slices.Equal(got, want) {
		w.t.Fatalf("%s: the channel received %q, want %q", what, got, want)
	}
}

func expectNoError(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v, want success", what, err)
	}
}

// expectCode checks that err is go-zookeeper's error for a code it has no named error for.
func expectCode(t *testing.T, err error, code int32, what string) {
	t.Helper()
	want := fmt.Sprintf("unknown error: %v", zk.ErrCode(code))
	if err == nil || err.Error() != want {
		t.Fatalf("%s: got error %v, want %q (ZooKeeper's code %d)", what, err, want, code)
	}
}

// persistentRules: addWatch, removeWatches and checkWatches, as ZooKeeper 3.8 answers them.
var persistentRules = []rule{
	{"persistent/a persistent watch gets a data and a child watch's events on its path, and stays", func(t *testing.T, h *harness) {
		w := h.connectWatch()
		mustCreate(t, h.admin, h.path("n"), nil, zk.FlagPersistent)
		ch := w.mustAddWatch("n", false)
		w.run(
			write{"set n", []string{"DataChanged n"}},
			write{"create n/c", []string{"ChildrenChanged n"}},
			write{"set n/c", nil},
			write{"create n/c/d", nil},
			write{"delete n/c/d", nil},
			write{"delete n/c", []string{"ChildrenChanged n"}},
			write{"delete n", []string{"Deleted n"}},
			write{"create n", []string{"Created n"}},
			write{"set n", []string{"DataChanged n"}},
		)
		w.expectChannel(ch, "the persistent watch's channel",
			"DataChanged n", "ChildrenChanged n", "ChildrenChanged n", "Deleted n", "Created n", "DataChanged n")
	}},
	{"persistent/a recursive watch gets NodeCreated, NodeDataChanged and NodeDeleted of its node and every node below it, never NodeChildrenChanged", func(t *testing.T, h *harness) {
		w := h.connectWatch()
		mustCreate(t, h.admin, h.path("n"), nil, zk.FlagPersistent)
		ch := w.mustAddWatch("n", true)
		w.run(
			write{"set n", []string{"DataChanged n"}},
			write{"create n/c", []string{"Created n/c"}},
			write{"set n/c", []string{"DataChanged n/c"}},
			write{"create n/c/d", []string{"Created n/c/d"}},
			write{"set n/c/d", []string{"DataChanged n/c/d"}},
			write{"delete n/c/d", []string{"Deleted n/c/d"}},
			write{"delete n/c", []string{"Deleted n/c"}},
			write{"delete n", []string{"Deleted n"}},
			write{"create n", []string{"Created n"}},
			write{"create n2", nil}, // a sibling whose name starts with the watched one's
		)
		w.expectChannel(ch, "the recursive watch's channel", "DataChanged n", "Created n/c", "DataChanged n/c",
			"Created n/c/d", "DataChanged n/c/d", "Deleted n/c/d", "Deleted n/c", "Deleted n", "Created n")
	}},
	{"persistent/addWatch on a missing path succeeds and the watch fires when the node comes", func(t *testing.T, h *harness) {
		w := h.connectWatch()
		w.mustAddWatch("p", false)
		w.mustAddWatch("r", true)
		w.expectWatches("p", true, true, true)
		w.expectWatches("r", true, true, true)
		w.run(
			write{"create p", []string{"Created p"}},
			write{"create p/c", []string{"ChildrenChanged p"}},
			write{"create r", []string{"Created r"}},
			write{"create r/c", []string{"Created r/c"}},
		)
	}},
	{"persistent/a multi's notifications reach a recursive watch in the order of its ops; a failed multi sends none", func(t *testing.T, h *harness) {
		w := h.connectWatch()
		mustCreate(t, h.admin, h.path("n"), nil, zk.FlagPersistent)
		w.mustAddWatch("n", true)
		if _, err := h.admin.Multi(
			&zk.CreateRequest{Path: h.path("n/a"), Acl: openACL},
			&zk.SetDataRequest{Path: h.path("n"), Data: []byte("x"), Version: -1},
			&zk.CreateRequest{Path: h.path("n/a/b"), Acl: openACL},
			&zk.DeleteRequest{Path: h.path("n/a/b"), Version: -1},
		); err != nil {
			t.Fatalf("Multi: %v", err)
		}
		w.expectNotes("multi", "Created n/a", "DataChanged n", "Created n/a/b", "Deleted n/a/b")
		_, err := h.admin.Multi(
			&zk.CreateRequest{Path: h.path("n/c"), Acl: openACL},
			&zk.CreateRequest{Path: h.path("n/c"), Acl: openACL},
		)
		expectErr(t, err, zk.ErrNodeExists, "failing Multi")
		w.expectNotes("failed multi")
	}},
	{"persistent/a standard watch set on the path takes the persistent watch's place in its table", func(t *testing.T, h *harness) {
		w := h.connectWatch()
		for _, n := range []string{"p", "q", "r", "r/k", "s"} {
			mustCreate(t, h.admin, h.path(n), nil, zk.FlagPersistent)
		}
		// Persistent, then GetW: one NodeDataChanged, then the data table has nothing; the child half stays.
		w.mustAddWatch("p", false)
		setWatch(t, w, getWatch, h.path("p"))
		w.run(
			write{"set p", []string{"DataChanged p"}},
			write{"set p", nil},
			write{"create p/k", []string{"ChildrenChanged p"}},
		)
		w.expectWatches("p", true, false, true)
		// Persistent, then ChildrenW: one NodeChildrenChanged, then the child table has nothing.
		w.mustAddWatch("q", false)
		setWatch(t, w, childrenWatch, h.path("q"))
		w.run(
			write{"create q/k", []string{"ChildrenChanged q"}},
			write{"create q/l", nil},
			write{"set q", []string{"DataChanged q"}},
		)
		// Recursive, then GetW on its own path: the data table loses the recursion (descendants' creates and
		// data changes go unseen); the child table keeps it, and with it descendants' deletions.
		w.mustAddWatch("r", true)
		setWatch(t, w, getWatch, h.path("r"))
		w.run(
			write{"set r", []string{"DataChanged r"}},
			write{"set r", nil},
			write{"set r/k", nil},
			write{"create r/j", nil},
			write{"delete r/j", []string{"Deleted r/j"}},
		)
		// Recursive, then ChildrenW on its own path: the child watch fires once, the recursion goes on.
		w.mustAddWatch("s", true)
		setWatch(t, w, childrenWatch, h.path("s"))
		w.run(
			write{"create s/k", []string{"Created s/k", "ChildrenChanged s"}},
			write{"create s/l", []string{"Created s/l"}},
			write{"set s", []string{"DataChanged s"}},
		)
	}},
	{"persistent/addWatch replaces the session's standard watches and its other mode on the path", func(t *testing.T, h *harness) {
		w := h.connectWatch()
		for _, n := range []string{"g", "p", "r"} {
			mustCreate(t, h.admin, h.path(n), nil, zk.FlagPersistent)
		}
		setWatch(t, w, getWatch, h.path("g"))
		w.mustAddWatch("g", false)
		w.run(
			write{"set g", []string{"DataChanged g"}},
			write{"set g", []string{"DataChanged g"}},
		)
		w.mustAddWatch("p", false)
		w.mustAddWatch("p", true) // now recursive only
		w.run(
			write{"create p/k", []string{"Created p/k"}},
			write{"create p/k/l", []string{"Created p/k/l"}},
		)
		w.mustAddWatch("r", true)
		w.mustAddWatch("r", false) // now persistent only
		w.run(
			write{"create r/k", []string{"ChildrenChanged r"}},
			write{"create r/k/l", nil},
		)
	}},
	{"persistent/a session gets one notification per event however many of its watches it matches", func(t *testing.T, h *harness) {
		w := h.connectWatch()
		for _, n := range []string{"a", "a/k", "b", "b/k"} {
			mustCreate(t, h.admin, h.path(n), nil, zk.FlagPersistent)
		}
		w.mustAddWatch("a", true)
		std := setWatch(t, w, getWatch, h.path("a/k"))
		w.run(write{"set a/k", []string{"DataChanged a/k"}})
		expectWatchEvent(t, std, zk.EventNodeDataChanged, h.path("a/k"), "GetW below a recursive watch")
		w.run(write{"set a/k", []string{"DataChanged a/k"}}) // the recursive watch stays
		setWatch(t, w, existsWatch, h.path("a/new"))
		w.run(write{"create a/new", []string{"Created a/new"}})
		w.mustAddWatch("a/k", false)
		w.run(
			write{"set a/k", []string{"DataChanged a/k"}},
			write{"create a/k/z", []string{"Created a/k/z", "ChildrenChanged a/k"}},
		)
		w.mustAddWatch("b", true)
		w.mustAddWatch("b/k", true)
		w.run(write{"set b/k", []string{"DataChanged b/k"}})
	}},
	{"persistent/each session gets its own notifications; an ephemeral's deletion at its owner's close reaches recursive watches", func(t *testing.T, h *harness) {
		w, v := h.connectWatch(), h.connectWatch()
		mustCreate(t, h.admin, h.path("n"), nil, zk.FlagPersistent)
		w.mustAddWatch("n", true)
		v.mustAddWatch("n", false)
		mustCreate(t, v, h.path("n/e"), nil, zk.FlagEphemeral)
		w.expectNotes("W after V creates n/e", "Created n/e")
		v.expectNotes("V after it creates n/e", "ChildrenChanged n")
		v.Close()
		w.expectNotes("W after V's session closed", "Deleted n/e")
	}},
	{"persistent/a recursive watch on / gets the events of the whole tree", func(t *testing.T, h *harness) {
		w := h.connectWatch()
		ch, err := w.AddWatch("/", true)
		if err != nil {
			t.Fatalf("AddWatch(/, recursive): %v", err)
		}
		mustCreate(t, h.admin, h.path("x"), nil, zk.FlagPersistent)
		expectWatchEvent(t, ch, zk.EventNodeCreated, h.path("x"), "recursive watch on /")
	}},
	{"persistent/checkWatches finds a persistent or recursive watch under every type, on its own path only", func(t *testing.T, h *harness) {
		w := h.connectWatch()
		for _, n := range []string{"p", "r", "r/k"} {
			mustCreate(t, h.admin, h.path(n), nil, zk.FlagPersistent)
		}
		w.mustAddWatch("p", false)
		w.mustAddWatch("r", true)
		w.expectWatches("p", true, true, true)
		w.expectWatches("r", true, true, true)
		w.expectWatches("r/k", false, false, false)
		w.expectWatches("none", false, false, false)
		for _, typ := range []int32{4, 5, 0, -1} { // 4 and 5 (Persistent, PersistentRecursive) are 3.9's
			expectCode(t, w.CheckWatches(h.path("p"), typ), codeMarshalling, fmt.Sprintf("CheckWatches(p, type %d)", typ))
		}
	}},
	{"persistent/removeWatches of one type removes that table's half of a persistent watch, and sends nothing", func(t *testing.T, h *harness) {
		w := h.connectWatch()
		cases := []struct {
			recursive bool
			typ       int32
			children  bool // CheckWatches finds what is left
			data      bool
			after     []write
		}{
			{false, watcherChildren, false, true, []write{{"set X", []string{"DataChanged X"}}, {"create X/k", nil}}},
			{false, watcherData, true, false, []write{{"set X", nil}, {"create X/k", []string{"ChildrenChanged X"}}}},
			{false, watcherAny, false, false, []write{{"set X", nil}, {"create X/k", nil}}},
			{true, watcherChildren, false, true, []write{{"set X", []string{"DataChanged X"}}, {"create X/k", []string{"Created X/k"}}, {"set X/k", []string{"DataChanged X/k"}}}},
			{true, watcherData, true, false, []write{{"set X", nil}, {"create X/k", nil}, {"set X/k", nil}, {"delete X/k", []string{"Deleted X/k"}}}},
			{true, watcherAny, false, false, []write{{"set X", nil}, {"create X/k", nil}, {"delete X/k", nil}}},
		}
		for i, c := range cases { // X stands for the case's node
			x := fmt.Sprintf("c%d", i)
			mustCreate(t, h.admin, h.path(x), nil, zk.FlagPersistent)
			w.mustAddWatch(x, c.recursive)
			what := fmt.Sprintf("RemoveWatches(%s, recursive=%t, type %d)", x, c.recursive, c.typ)
			expectNoError(t, w.RemoveWatches(h.path(x), c.typ), what)
			w.expectNotes(what)
			w.expectWatches(x, c.children, c.data, c.children || c.data)
			for _, wr := range c.after {
				wr.op = strings.ReplaceAll(wr.op, "X", x)
				for j := range wr.want {
					wr.want[j] = strings.ReplaceAll(wr.want[j], "X", x)
				}
				w.run(wr)
			}
			expectCode(t, w.RemoveWatches(h.path(x), c.typ), codeNoWatcher, what+" again")
		}
	}},
	{"persistent/removeWatches and checkWatches without such a watch fail with NoWatcher, unknown types with a marshalling error, and change nothing", func(t *testing.T, h *harness) {
		w := h.connectWatch()
		for _, n := range []string{"d", "p"} {
			mustCreate(t, h.admin, h.path(n), nil, zk.FlagPersistent)
		}
		for _, typ := range []int32{watcherChildren, watcherData, watcherAny} {
			expectCode(t, w.RemoveWatches(h.path("d"), typ), codeNoWatcher, fmt.Sprintf("RemoveWatches(existing node, no watch, type %d)", typ))
			expectCode(t, w.RemoveWatches(h.path("missing"), typ), codeNoWatcher, fmt.Sprintf("RemoveWatches(missing node, type %d)", typ))
		}
		setWatch(t, w, getWatch, h.path("d"))
		expectCode(t, w.RemoveWatches(h.path("d"), watcherChildren), codeNoWatcher, "RemoveWatches(children) with only a data watch")
		w.mustAddWatch("p", true)
		for _, typ := range []int32{4, 5, 0} {
			expectCode(t, w.RemoveWatches(h.path("p"), typ), codeMarshalling, fmt.Sprintf("RemoveWatches(type %d)", typ))
		}
		w.expectWatches("p", true, true, true)
		w.run(
			write{"set d", []string{"DataChanged d"}},
			write{"create p/k", []string{"Created p/k"}},
		)
	}},
	{"persistent/removeWatches removes standard watches, and the server sends nothing for it", func(t *testing.T, h *harness) {
		w := h.connectWatch()
		for _, n := range []string{"d", "c", "b"} {
			mustCreate(t, h.admin, h.path(n), nil, zk.FlagPersistent)
		}
		setWatch(t, w, getWatch, h.path("d"))
		setWatch(t, w, childrenWatch, h.path("c"))
		setWatch(t, w, existsWatch, h.path("e"))
		setWatch(t, w, getWatch, h.path("b"))
		setWatch(t, w, childrenWatch, h.path("b"))
		w.expectWatches("b", true, true, true)
		expectNoError(t, w.RemoveWatches(h.path("d"), watcherData), "RemoveWatches(d, data)")
		expectNoError(t, w.RemoveWatches(h.path("c"), watcherChildren), "RemoveWatches(c, children)")
		expectNoError(t, w.RemoveWatches(h.path("e"), watcherData), "RemoveWatches(e, data), an exists watch")
		expectNoError(t, w.RemoveWatches(h.path("b"), watcherAny), "RemoveWatches(b, any)")
		w.expectNotes("after the removals")
		w.expectWatches("b", false, false, false)
		w.run(
			write{"set d", nil},
			write{"create c/k", nil},
			write{"create e", nil},
			write{"set b", nil},
			write{"create b/k", nil},
		)
	}},
}

// persistentSeverRules need Target.Sever.
var persistentSeverRules = []rule{
	{"persistent/persistent and recursive watches are set again after a reconnection (setWatches2) and keep firing", func(t *testing.T, h *harness) {
		w := h.connectWatch()
		for _, n := range []string{"p", "r"} {
			mustCreate(t, h.admin, h.path(n), nil, zk.FlagPersistent)
		}
		w.mustAddWatch("p", false)
		w.mustAddWatch("r", true)
		events, _ := w.log.snapshot()
		h.target.Sever(t, w.WatchConn)
		s := &session{Conn: w.WatchConn, t: t, log: w.log}
		s.waitSessionEvent(s.waitSessionEvent(len(events), zk.StateDisconnected), zk.StateHasSession)
		w.expectWatches("p", true, true, true)
		w.expectWatches("r", true, true, true)
		w.run(
			write{"set p", []string{"DataChanged p"}},
			write{"create p/k", []string{"ChildrenChanged p"}},
			write{"create r/k", []string{"Created r/k"}},
			write{"set r/k", []string{"DataChanged r/k"}},
		)
	}},
}
