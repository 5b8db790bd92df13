package model

import (
	"testing"

	"github.com/go-zookeeper/zk"
)

type watchCall int

const (
	callExistsW watchCall = iota
	callGetW
	callChildrenW
)

func (w watchCall) String() string { return [...]string{"ExistsW", "GetW", "ChildrenW"}[w] }

// setWatch leaves a watch of the given kind on path and returns its channel.
func setWatch(t *testing.T, c *Conn, w watchCall, path string) <-chan zk.Event {
	t.Helper()
	var (
		ch  <-chan zk.Event
		err error
	)
	switch w {
	case callExistsW:
		_, _, ch, err = c.ExistsW(path)
	case callGetW:
		_, _, ch, err = c.GetW(path)
	case callChildrenW:
		_, _, ch, err = c.ChildrenW(path)
	}
	if err != nil || ch == nil {
		t.Fatalf("%s(%q) = %v, %v; want a watch channel", w, path, ch, err)
	}
	return ch
}

// TestWatchesOnAMissingNode: exists leaves a watch on a missing node, getData and getChildren do not, and the
// calls return go-zookeeper's shapes (SEMANTICS.md §3).
func TestWatchesOnAMissingNode(t *testing.T) {
	srv := NewServer()
	a, aEvents := connect(t, srv)
	b, _ := connect(t, srv)

	t.Run("ExistsW_returns_false_a_zero_stat_and_a_watch_that_a_create_fires", func(t *testing.T) {
		ok, st, ch, err := a.ExistsW("/x")
		if ok || st == nil || *st != (zk.Stat{}) || ch == nil || err != nil {
			t.Fatalf("ExistsW(missing) = %v, %+v, %v, %v", ok, st, ch, err)
		}
		mustCreate(t, b, "/x", nil, 0)
		receiveOne(t, ch, wantWatchEvent(zk.EventNodeCreated, "/x"))
		if got := drain(aEvents); len(got) != 1 || got[0] != wantWatchEvent(zk.EventNodeCreated, "/x") {
			t.Fatalf("session channel got %+v, want the one NodeCreated", got)
		}
	})
	t.Run("GetW_returns_ErrNoNode_nil_stat_nil_channel_and_leaves_no_watch", func(t *testing.T) {
		data, st, ch, err := a.GetW("/y")
		if data != nil || st != nil || ch != nil || err != zk.ErrNoNode {
			t.Fatalf("GetW(missing) = %v, %v, %v, %v", data, st, ch, err)
		}
		mustCreate(t, b, "/y", nil, 0)
		if got := drain(aEvents); len(got) != 0 {
			t.Fatalf("session channel got %+v after the create, want nothing", got)
		}
	})
	t.Run("ChildrenW_returns_ErrNoNode_nil_stat_nil_channel_and_leaves_no_watch", func(t *testing.T) {
		kids, st, ch, err := a.ChildrenW("/z")
		if kids != nil || st != nil || ch != nil || err != zk.ErrNoNode {
			t.Fatalf("ChildrenW(missing) = %v, %v, %v, %v", kids, st, ch, err)
		}
		mustCreate(t, b, "/z", nil, 0)
		mustCreate(t, b, "/z/k", nil, 0)
		if got := drain(aEvents); len(got) != 0 {
			t.Fatalf("session channel got %+v, want nothing", got)
		}
	})
	t.Run("plain_reads_of_a_missing_node_return_a_zero_stat", func(t *testing.T) {
		if ok, st, err := a.Exists("/none"); ok || st == nil || *st != (zk.Stat{}) || err != nil {
			t.Errorf("Exists = %v, %+v, %v", ok, st, err)
		}
		if d, st, err := a.Get("/none"); d != nil || st == nil || *st != (zk.Stat{}) || err != zk.ErrNoNode {
			t.Errorf("Get = %v, %+v, %v", d, st, err)
		}
		if k, st, err := a.Children("/none"); k != nil || st == nil || *st != (zk.Stat{}) || err != zk.ErrNoNode {
			t.Errorf("Children = %v, %+v, %v", k, st, err)
		}
	})
}

// TestWatchFiring is the table of which write fires which watch (SEMANTICS.md §3): session A watches, session B
// writes. The tree holds /g/p/n with data; /g/p/new does not exist.
func TestWatchFiring(t *testing.T) {
	type write func(t *testing.T, c *Conn)
	create := func(path string) write {
		return func(t *testing.T, c *Conn) { mustCreate(t, c, path, nil, 0) }
	}
	del := func(path string) write {
		return func(t *testing.T, c *Conn) {
			if err := c.Delete(path, -1); err != nil {
				t.Fatal(err)
			}
		}
	}
	set := func(path string) write {
		return func(t *testing.T, c *Conn) {
			if _, err := c.Set(path, []byte("new"), -1); err != nil {
				t.Fatal(err)
			}
		}
	}
	cases := []struct {
		name  string
		watch watchCall
		path  string
		write write
		want  zk.EventType // 0: nothing fires
	}{
		{"create_fires_ExistsW_on_the_missing_node_with_NodeCreated", callExistsW, "/g/p/new", create("/g/p/new"), zk.EventNodeCreated},
		{"create_fires_the_parents_ChildrenW_with_NodeChildrenChanged", callChildrenW, "/g/p", create("/g/p/new"), zk.EventNodeChildrenChanged},
		{"create_does_not_fire_the_parents_GetW", callGetW, "/g/p", create("/g/p/new"), 0},
		{"create_does_not_fire_the_parents_ExistsW", callExistsW, "/g/p", create("/g/p/new"), 0},
		{"create_of_a_grandchild_does_not_fire_the_grandparents_ChildrenW", callChildrenW, "/g", create("/g/p/new"), 0},
		{"setData_fires_GetW_with_NodeDataChanged", callGetW, "/g/p/n", set("/g/p/n"), zk.EventNodeDataChanged},
		{"setData_fires_ExistsW_on_the_existing_node_with_NodeDataChanged", callExistsW, "/g/p/n", set("/g/p/n"), zk.EventNodeDataChanged},
		{"setData_does_not_fire_the_nodes_ChildrenW", callChildrenW, "/g/p/n", set("/g/p/n"), 0},
		{"setData_does_not_fire_the_parents_ChildrenW", callChildrenW, "/g/p", set("/g/p/n"), 0},
		{"setData_does_not_fire_the_parents_GetW", callGetW, "/g/p", set("/g/p/n"), 0},
		{"delete_fires_GetW_with_NodeDeleted", callGetW, "/g/p/n", del("/g/p/n"), zk.EventNodeDeleted},
		{"delete_fires_ExistsW_with_NodeDeleted", callExistsW, "/g/p/n", del("/g/p/n"), zk.EventNodeDeleted},
		{"delete_fires_the_nodes_own_ChildrenW_with_NodeDeleted", callChildrenW, "/g/p/n", del("/g/p/n"), zk.EventNodeDeleted},
		{"delete_fires_the_parents_ChildrenW_with_NodeChildrenChanged", callChildrenW, "/g/p", del("/g/p/n"), zk.EventNodeChildrenChanged},
		{"delete_does_not_fire_the_parents_GetW", callGetW, "/g/p", del("/g/p/n"), 0},
		{"delete_of_a_grandchild_does_not_fire_the_grandparents_ChildrenW", callChildrenW, "/g", del("/g/p/n"), 0},
		{"delete_of_a_grandchild_does_not_fire_the_grandparents_GetW", callGetW, "/g", del("/g/p/n"), 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := NewServer()
			a, aEvents := connect(t, srv)
			b, _ := connect(t, srv)
			mustCreate(t, b, "/g", nil, 0)
			mustCreate(t, b, "/g/p", nil, 0)
			mustCreate(t, b, "/g/p/n", []byte("old"), 0)
			ch := setWatch(t, a, tc.watch, tc.path)
			tc.write(t, b)
			if tc.want == 0 {
				receiveNothing(t, ch)
				if got := drain(aEvents); len(got) != 0 {
					t.Fatalf("session channel got %+v, want nothing", got)
				}
				return
			}
			want := wantWatchEvent(tc.want, tc.path)
			receiveOne(t, ch, want)
			if got := drain(aEvents); len(got) != 1 || got[0] != want {
				t.Fatalf("session channel got %+v, want exactly %+v", got, want)
			}
		})
	}
}

// TestWatchDelivery checks one-shot watches, one notification per session, and that watch events also reach
// the session channel.
func TestWatchDelivery(t *testing.T) {
	t.Run("a_watch_fires_once_and_a_second_write_delivers_nothing", func(t *testing.T) {
		srv := NewServer()
		a, aEvents := connect(t, srv)
		mustCreate(t, a, "/n", nil, 0)
		ch := setWatch(t, a, callGetW, "/n")
		for range 2 {
			if _, err := a.Set("/n", nil, -1); err != nil {
				t.Fatal(err)
			}
		}
		receiveOne(t, ch, wantWatchEvent(zk.EventNodeDataChanged, "/n"))
		if got := drain(aEvents); len(got) != 1 {
			t.Fatalf("session channel got %+v, want one NodeDataChanged", got)
		}
	})
	t.Run("the_same_watch_set_three_times_gives_one_notification_fanned_out_to_every_channel", func(t *testing.T) {
		srv := NewServer()
		a, aEvents := connect(t, srv)
		b, _ := connect(t, srv)
		mustCreate(t, a, "/n", nil, 0)
		chs := []<-chan zk.Event{setWatch(t, a, callGetW, "/n"), setWatch(t, a, callGetW, "/n"), setWatch(t, a, callExistsW, "/n")}
		childCh := setWatch(t, a, callChildrenW, "/n")
		if _, err := b.Set("/n", nil, -1); err != nil {
			t.Fatal(err)
		}
		want := wantWatchEvent(zk.EventNodeDataChanged, "/n")
		for _, ch := range chs {
			receiveOne(t, ch, want)
		}
		if got := drain(aEvents); len(got) != 1 || got[0] != want {
			t.Fatalf("session channel got %+v, want one %+v", got, want)
		}
		receiveNothing(t, childCh)
		mustCreate(t, b, "/n/kid", nil, 0)
		receiveOne(t, childCh, wantWatchEvent(zk.EventNodeChildrenChanged, "/n"))
	})
	t.Run("delete_of_a_node_watched_for_data_and_children_sends_one_NodeDeleted", func(t *testing.T) {
		srv := NewServer()
		a, aEvents := connect(t, srv)
		b, _ := connect(t, srv)
		mustCreate(t, a, "/n", nil, 0)
		dataCh, childCh := setWatch(t, a, callGetW, "/n"), setWatch(t, a, callChildrenW, "/n")
		if err := b.Delete("/n", -1); err != nil {
			t.Fatal(err)
		}
		want := wantWatchEvent(zk.EventNodeDeleted, "/n")
		receiveOne(t, dataCh, want)
		receiveOne(t, childCh, want)
		if got := drain(aEvents); len(got) != 1 || got[0] != want {
			t.Fatalf("session channel got %+v, want one NodeDeleted", got)
		}
	})
	t.Run("every_watching_session_gets_its_own_notification", func(t *testing.T) {
		srv := NewServer()
		a, aEvents := connect(t, srv)
		b, bEvents := connect(t, srv)
		w, _ := connect(t, srv)
		mustCreate(t, w, "/n", nil, 0)
		aCh, bCh := setWatch(t, a, callGetW, "/n"), setWatch(t, b, callExistsW, "/n")
		if _, err := w.Set("/n", nil, -1); err != nil {
			t.Fatal(err)
		}
		want := wantWatchEvent(zk.EventNodeDataChanged, "/n")
		receiveOne(t, aCh, want)
		receiveOne(t, bCh, want)
		for i, evs := range [][]zk.Event{drain(aEvents), drain(bEvents)} {
			if len(evs) != 1 || evs[0] != want {
				t.Fatalf("session %d channel got %+v", i, evs)
			}
		}
	})
	t.Run("a_sessions_own_write_fires_its_own_watch", func(t *testing.T) {
		srv := NewServer()
		a, _ := connect(t, srv)
		mustCreate(t, a, "/n", nil, 0)
		ch := setWatch(t, a, callGetW, "/n")
		if _, err := a.Set("/n", nil, -1); err != nil {
			t.Fatal(err)
		}
		receiveOne(t, ch, wantWatchEvent(zk.EventNodeDataChanged, "/n"))
	})
	t.Run("an_event_reaches_the_watcher_before_a_later_reply", func(t *testing.T) {
		srv := NewServer()
		a, _ := connect(t, srv)
		b, _ := connect(t, srv)
		mustCreate(t, a, "/x", nil, 0)
		ch := setWatch(t, a, callGetW, "/x")
		if _, err := b.Set("/x", nil, -1); err != nil {
			t.Fatal(err)
		}
		a.Get("/y")
		receiveOne(t, ch, wantWatchEvent(zk.EventNodeDataChanged, "/x"))
	})
}
