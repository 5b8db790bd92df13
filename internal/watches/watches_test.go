package watches

import (
	"slices"
	"testing"

	"github.com/go-zookeeper/zk"
)

// TestTakeFiresGoZookeepersTable: each event type takes the one-shot watches go-zookeeper's table gives it,
// kind by kind in its order, and leaves the rest.
func TestTakeFiresGoZookeepersTable(t *testing.T) {
	for _, c := range []struct {
		et   zk.EventType
		want []string
	}{
		{zk.EventNodeCreated, []string{"exist"}},
		{zk.EventNodeDataChanged, []string{"exist", "data1", "data2"}},
		{zk.EventNodeChildrenChanged, []string{"child"}},
		{zk.EventNodeDeleted, []string{"exist", "data1", "data2", "child"}},
		{zk.EventNotWatching, nil},
	} {
		tab := Table[string]{}
		tab.Add("/a", Data, "data1")
		tab.Add("/a", Exist, "exist")
		tab.Add("/a", Child, "child")
		tab.Add("/a", Data, "data2")
		tab.Add("/a", Persistent, "persistent")
		tab.Add("/b", Exist, "other path")
		got := tab.Take("/a", OneShot(c.et)...)
		if !slices.Equal(got, c.want) {
			t.Errorf("%v takes %v, want %v", c.et, got, c.want)
		}
		left := 0
		for _, ws := range tab {
			left += len(ws)
		}
		if left != 6-len(c.want) {
			t.Errorf("%v leaves %d watchers, want %d", c.et, left, 6-len(c.want))
		}
	}
}

// TestRemovedKinds: removeWatches ends the child watches for CHILDREN (1), data and exist for DATA (2), all
// five kinds for ANY (3), nothing for another type.
func TestRemovedKinds(t *testing.T) {
	for wt, want := range map[int32][]Kind{1: {Child}, 2: {Data, Exist}, 3: {Data, Exist, Child, Persistent, Recursive}, 4: nil} {
		if got := Removed(wt); !slices.Equal(got, want) {
			t.Errorf("Removed(%d) = %v, want %v", wt, got, want)
		}
	}
}

// TestLastingWalksUpForRecursiveWatches: an event goes to the persistent watches on its path, then the
// recursive ones on its path and every ancestor, except NodeChildrenChanged, which no recursive watch gets;
// they stay, and the table is not changed by the answer.
func TestLastingWalksUpForRecursiveWatches(t *testing.T) {
	tab := Table[string]{}
	tab.Add("/", Recursive, "root")
	tab.Add("/a", Recursive, "a")
	tab.Add("/a/b", Persistent, "b persistent")
	tab.Add("/a/b", Recursive, "b recursive")
	tab.Add("/a/c", Recursive, "sibling")
	tab.Add("/a/b", Data, "one-shot")
	got := tab.Lasting(zk.Event{Type: zk.EventNodeDataChanged, Path: "/a/b"})
	if want := []string{"b persistent", "b recursive", "a", "root"}; !slices.Equal(got, want) {
		t.Errorf("NodeDataChanged /a/b goes to %v, want %v", got, want)
	}
	got[0] = "changed"
	if tab[Key{"/a/b", Persistent}][0] != "b persistent" {
		t.Error("changing Lasting's answer changed the table")
	}
	if got := tab.Lasting(zk.Event{Type: zk.EventNodeChildrenChanged, Path: "/a/b"}); !slices.Equal(got, []string{"b persistent"}) {
		t.Errorf("NodeChildrenChanged /a/b goes to %v, want the persistent watch only", got)
	}
	if got := (Table[string](nil)).Lasting(zk.Event{Type: zk.EventNodeCreated, Path: "/x"}); got != nil {
		t.Errorf("an empty table gives %v", got)
	}
}

// TestSortedKeysByPathThenKind: the keys with watchers, by path and then kind; emptied keys are left out.
func TestSortedKeysByPathThenKind(t *testing.T) {
	tab := Table[int]{}
	tab.Add("/b", Data, 1)
	tab.Add("/a", Child, 2)
	tab.Add("/a", Data, 3)
	tab.Add("/a/x", Exist, 4)
	tab[Key{"/c", Data}] = nil
	want := []Key{{"/a", Data}, {"/a", Child}, {"/a/x", Exist}, {"/b", Data}}
	if got := tab.SortedKeys(); !slices.Equal(got, want) {
		t.Errorf("SortedKeys = %v, want %v", got, want)
	}
}
