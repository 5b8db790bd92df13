package model

import (
	"slices"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/internal/evqueue"
	"github.com/zkmodel/zkmodel/internal/watches"
	"github.com/zkmodel/zkmodel/model/internal/core"
)

// This file is the client's side of ZooKeeper 3.6+'s persistent watches (addWatch) and of removeWatches and
// checkWatches: requests go-zookeeper v1.0.4 cannot send, which *Conn offers with the shape go-zookeeper's
// development branch gives AddWatch. The server's side is in the core (internal/core/core.go: addPersistentWatch, watchedBy).

// The watch types RemoveWatches and CheckWatches take (Java's Watcher.WatcherType; ZooKeeper 3.8.0 knows no
// others and answers them with a marshalling error).
const (
	WatcherChildren int32 = 1 // child watches (getChildren), and the child half of persistent ones
	WatcherData     int32 = 2 // data and exist watches (getData, exists), and the data half of persistent ones
	WatcherAny      int32 = 3 // both
)

// ErrNoWatcher is what RemoveWatches and CheckWatches return when the session has no such watch: ZooKeeper's
// code -121, which go-zookeeper v1.0.4 has no named error for (its text is go-zookeeper's: "unknown error:
// -121").
var ErrNoWatcher = core.ErrNoWatcher

// persistentBuffer is how many events a persistent watch's channel holds before the ones that follow wait,
// in order, for the reader (internal/evqueue hands them over; none is ever dropped).
const persistentBuffer = 64

// AddWatch sets a persistent watch on path (addWatch, ZooKeeper 3.6+), recursive or not, and returns its
// channel. Unlike a standard watch it stays after it fires: a persistent watch gets the events a data watch
// and a child watch on path would get (NodeCreated, NodeDataChanged, NodeDeleted, NodeChildrenChanged); a
// recursive one gets NodeCreated, NodeDataChanged and NodeDeleted for path and every node below it, and never
// NodeChildrenChanged. path need not exist. The channel receives every event of the watch, in order, never
// dropping one, until RemoveWatches with WatcherAny removes the watch or the session ends (expiry, Close):
// its last event is then EventNotWatching, and it is closed. As on a real server, a session has one watch per
// path and table: a later exists, getData or getChildren with a watch replaces the persistent one in its
// table (data or child), and AddWatch replaces the standard ones and the other mode.
func (c *Conn) AddWatch(path string, recursive bool) (<-chan zk.Event, error) {
	if err := core.ValidatePath(path, false); err != nil {
		return nil, err
	}
	r := &core.Request{Op: core.OpAddWatch, Path: path}
	if recursive {
		r.Mode = 1
	}
	res, ch := c.do(r)
	if res.Err != nil {
		return nil, res.Err
	}
	return ch, nil
}

// RemoveWatches removes the session's watches of watcherType (WatcherChildren, WatcherData, WatcherAny) on
// path, standard and persistent (removeWatches), or returns ErrNoWatcher if it has none. A persistent watch
// lives in both tables: removing one type leaves the other half firing. On success the client's channels of
// the removed kinds get EventNotWatching (State StateSyncConnected, Err nil) and are closed: child watches for
// WatcherChildren, data and exist watches for WatcherData, and for WatcherAny those and the persistent ones.
// The server sends nothing for a removal.
func (c *Conn) RemoveWatches(path string, watcherType int32) error {
	if err := core.ValidatePath(path, false); err != nil {
		return err
	}
	res, _ := c.do(&core.Request{Op: core.OpRemoveWatches, Path: path, Mode: watcherType})
	return res.Err
}

// CheckWatches returns nil if the session has a watch of watcherType on path (checkWatches), standard or
// persistent, and ErrNoWatcher otherwise. A recursive watch counts only on its own path.
func (c *Conn) CheckWatches(path string, watcherType int32) error {
	if err := core.ValidatePath(path, false); err != nil {
		return err
	}
	res, _ := c.do(&core.Request{Op: core.OpCheckWatches, Path: path, Mode: watcherType})
	return res.Err
}

// registerPersistent does, when the reply to r arrives, what the client does with the persistent watches:
// AddWatch's channel, and RemoveWatches' ending of channels. It returns AddWatch's channel.
func (c *Conn) registerPersistent(r *core.Request, err error) <-chan zk.Event {
	if err != nil {
		return nil
	}
	switch r.Op {
	case core.OpAddWatch:
		kind := watches.Persistent
		if r.Mode == 1 {
			kind = watches.Recursive
		}
		w := evqueue.New(persistentBuffer)
		if c.persistent == nil {
			c.persistent = watches.Table[*evqueue.Queue]{}
		}
		c.persistent.Add(r.Path, kind, w)
		return w.C()
	case core.OpRemoveWatches:
		ev := zk.Event{Type: zk.EventNotWatching, State: zk.StateSyncConnected, Path: r.Path}
		for _, kind := range watches.Removed(r.Mode) {
			c.fireStandard(ev, r.Path, kind)
			for _, w := range c.persistent.Take(r.Path, kind) {
				w.Push(ev)
				w.Close()
			}
		}
	}
	return nil
}

// notifyPersistent hands a notification to the persistent watches it is for: those on its path, and, unless it
// is NodeChildrenChanged, the recursive ones on its path and its ancestors.
func (c *Conn) notifyPersistent(ev zk.Event) {
	for _, w := range c.persistent.Lasting(ev) {
		w.Push(ev)
	}
}

// endPersistent ends every persistent watch with EventNotWatching carrying err (session expiry, Close), in
// path order, each also announced on the session event channel, as go-zookeeper does for standard watches.
func (c *Conn) endPersistent(err error) {
	keys := c.persistent.SortedKeys()
	for _, k := range keys {
		ev := zk.Event{Type: zk.EventNotWatching, State: zk.StateDisconnected, Path: k.Path, Err: err}
		c.sendEvent(ev)
		for _, w := range c.persistent[k] {
			w.Push(ev)
			w.Close()
		}
	}
	c.persistent = nil
}

// persistentLists returns the paths of the client's persistent and recursive watches, sorted, for setWatches2.
func (c *Conn) persistentLists() (persistent, recursive []string) {
	for k := range c.persistent {
		switch k.Kind {
		case watches.Persistent:
			persistent = append(persistent, k.Path)
		case watches.Recursive:
			recursive = append(recursive, k.Path)
		}
	}
	slices.Sort(persistent)
	slices.Sort(recursive)
	return persistent, recursive
}
