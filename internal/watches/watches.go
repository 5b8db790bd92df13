// Package watches is a ZooKeeper client's own table of its watches, as go-zookeeper keeps it — the one-shot
// data, exist and child watches by path — with 3.6's persistent and recursive watches beside them, and the
// rules that say which of them an event fires, which a removeWatches ends and in what order they are set
// again or ended. model.Conn and internal/rawzk both keep theirs in a Table; each holds its own kind of
// watcher (a channel, a queue) and its own locking.
package watches

import (
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
)

// Kind is a client-side watch's kind.
type Kind uint8

// The kinds, in the order a client's watches sort by (after their paths).
const (
	Data       Kind = iota // GetW, or ExistsW on an existing node
	Exist                  // ExistsW on a missing node
	Child                  // ChildrenW
	Persistent             // addWatch, persistent
	Recursive              // addWatch, persistent recursive
)

// Key is one path's watches of one kind.
type Key struct {
	Path string
	Kind Kind
}

// Table holds a client's watchers by key, each key's in the order they were added. Make one with
// make(Table[W]) or Table[W]{}; a nil Table reads as empty.
type Table[W any] map[Key][]W

// Add adds watcher w of kind on path.
func (t Table[W]) Add(path string, kind Kind, w W) {
	k := Key{path, kind}
	t[k] = append(t[k], w)
}

// OneShot returns the one-shot kinds an event of type et fires, in go-zookeeper v1.0.4's order:
// NodeCreated the exist watches; NodeDataChanged the exist and data ones; NodeChildrenChanged the child ones;
// NodeDeleted the exist, data and child ones. Any other type fires none.
func OneShot(et zk.EventType) []Kind {
	switch et {
	case zk.EventNodeCreated:
		return []Kind{Exist}
	case zk.EventNodeDataChanged:
		return []Kind{Exist, Data}
	case zk.EventNodeChildrenChanged:
		return []Kind{Child}
	case zk.EventNodeDeleted:
		return []Kind{Exist, Data, Child}
	}
	return nil
}

// Removed returns the kinds a removeWatches of watcherType ends on the client: 1 (children) the child
// watches; 2 (data) the data and exist ones; 3 (any) those and the persistent and recursive ones. Any other
// type ends none.
func Removed(watcherType int32) []Kind {
	switch watcherType {
	case 1:
		return []Kind{Child}
	case 2:
		return []Kind{Data, Exist}
	case 3:
		return []Kind{Data, Exist, Child, Persistent, Recursive}
	}
	return nil
}

// Take removes the watchers of path of the kinds and returns them, kind by kind in the order given, each
// kind's in the order they were added.
func (t Table[W]) Take(path string, kinds ...Kind) []W {
	var taken []W
	for _, kind := range kinds {
		k := Key{path, kind}
		taken = append(taken, t[k]...)
		delete(t, k)
	}
	return taken
}

// Lasting returns the persistent watchers an event goes to, which stay: the persistent ones on its path,
// then, unless it is NodeChildrenChanged, the recursive ones on its path and on each ancestor up to "/".
func (t Table[W]) Lasting(ev zk.Event) []W {
	if len(t) == 0 {
		return nil
	}
	lasting := slices.Clone(t[Key{ev.Path, Persistent}])
	if ev.Type == zk.EventNodeChildrenChanged {
		return lasting
	}
	for p := ev.Path; ; p = parent(p) {
		lasting = append(lasting, t[Key{p, Recursive}]...)
		if p == "/" {
			return lasting
		}
	}
}

// SortedKeys returns the keys that have watchers, by path, then kind: the order in which a client sets its
// watches again and ends them.
func (t Table[W]) SortedKeys() []Key {
	keys := make([]Key, 0, len(t))
	for k, ws := range t {
		if len(ws) > 0 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b Key) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return int(a.Kind) - int(b.Kind)
	})
	return keys
}

// parent is p's parent path ("/" for a child of the root).
func parent(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}
