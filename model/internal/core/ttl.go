package core

import (
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/go-zookeeper/zk"
)

// This file is part of the pure core: TTL nodes, containers and the container manager that removes them, as
// ZooKeeper 3.8 does (measured; see conformance/SEMANTICS.md). The manager's passes run from the virtual
// clock only (Server.Advance), at the server's start time plus whole check intervals.

// ttlOwner marks a TTL node's ephemeralOwner, as ZooKeeper's EphemeralType.TTL encodes it: the top byte set,
// the TTL in milliseconds in the low 40 bits. Clients see 0.
const ttlOwner = -1 << 56

// maxTTL is the longest TTL a server accepts, in milliseconds (2^40-1, measured).
const maxTTL = 1<<40 - 1

// nodeMode is what a create makes, once its opcode, flags and TTL have been checked.
type nodeMode struct {
	ephemeral, sequential, container bool
	ttl                              int64 // > 0: a TTL node with this TTL in milliseconds
}

// reaper is the container manager's state: the server's options and what it watches.
type reaper struct {
	extended bool  // zookeeper.extendedTypesEnabled: TTL nodes are allowed
	start    int64 // the server's start: passes run at start + k*interval, k ≥ 1
	interval int64 // milliseconds between passes
	last     int64 // the time of the last pass that is behind the clock, run or found idle (start before the first)
	// paths holds every path created as a container or TTL node. Entries are dropped lazily, when a pass
	// finds the path gone or no longer such a node, so that a multi's rollback needs no bookkeeping here.
	paths map[string]struct{}
}

func (r *reaper) watch(path string) {
	if r.paths == nil {
		r.paths = map[string]struct{}{}
	}
	r.paths[path] = struct{}{}
}

// active reports whether the tree may hold containers or TTL nodes.
func (r *reaper) active() bool { return len(r.paths) > 0 }

// configureReaper sets the server's options: whether extended types (TTL nodes) are enabled, and the
// container manager's check interval in milliseconds (> 0).
func (c *Core) configureReaper(extended bool, interval int64) {
	c.reaper.extended, c.reaper.interval = extended, interval
	c.reaper.start, c.reaper.last = c.now, c.now
}

// ttl returns the node's TTL in milliseconds, or 0 if it is not a TTL node.
func (n *node) ttl() int64 {
	if o := n.stat.EphemeralOwner; o < 0 && o != containerOwner && o&ttlOwner == ttlOwner {
		return o &^ ttlOwner
	}
	return 0
}

func (n *node) isContainer() bool { return n.stat.EphemeralOwner == containerOwner }

// kindSuffix renders, for Dump, what the reported stat hides: that a node is a container or a TTL node.
func (n *node) kindSuffix() string {
	switch {
	case n.isContainer():
		return " container"
	case n.ttl() > 0:
		return " ttl=" + strconv.FormatInt(n.ttl(), 10)
	}
	return ""
}

// createMode checks a create's flags (and, for createTTL, its TTL) the way ZooKeeper 3.8's
// PrepRequestProcessor does, as measured: an unknown mode is bad arguments; a TTL mode is UNIMPLEMENTED
// unless the server enables extended types, and then needs 1 ≤ ttl ≤ 2^40-1 ms (a create other than
// createTTL carries no TTL, so it fails with bad arguments); createTTL with any other mode is bad arguments.
// createContainer makes a container whatever its other flags, sequential ones included. A plain create
// (opcode create or create2) with the container mode makes a persistent node, which the container manager
// leaves alone: the transaction a real server makes of it records only whether the node is ephemeral
// (measured on 3.8); a multi's create takes its opcode from its flags, and makes a container.
func (c *Core) createMode(op Op, flags int32, ttl int64) (nodeMode, error) {
	var m nodeMode
	switch flags {
	case zk.FlagPersistent:
	case zk.FlagEphemeral:
		m.ephemeral = true
	case zk.FlagSequence:
		m.sequential = true
	case zk.FlagEphemeralSequential:
		m.ephemeral, m.sequential = true, true
	case zk.FlagContainer:
		m.container = op != OpCreate
	case zk.FlagTTL, zk.FlagPersistentSequentialWithTTL:
		if !c.reaper.extended {
			return nodeMode{}, errUnimplemented // TTL nodes are off unless the server enables extended types
		}
		if op != OpCreateTTL || ttl < 1 || ttl > maxTTL {
			return nodeMode{}, zk.ErrBadArguments
		}
		return nodeMode{sequential: flags == zk.FlagPersistentSequentialWithTTL, ttl: ttl}, nil
	default:
		return nodeMode{}, zk.ErrBadArguments // not a create mode the server knows
	}
	switch op {
	case OpCreateTTL:
		// A real server answers bad arguments when ttl ≥ 0; with a negative TTL it fails while applying the
		// transaction and stops serving (measured on 3.8.0). The model answers bad arguments for both.
		return nodeMode{}, zk.ErrBadArguments
	case OpCreateContainer:
		return nodeMode{container: true, sequential: m.sequential}, nil
	}
	return m, nil
}

// multiTTLOp is the operation a createTTL op inside a multi is checked as: createTTL for the TTL modes, a
// plain create (mode from the flags, TTL unused) for the others (measured).
func multiTTLOp(flags int32) Op {
	if flags == zk.FlagTTL || flags == zk.FlagPersistentSequentialWithTTL {
		return OpCreateTTL
	}
	return OpCreate
}

// passedTo records that the passes up to now are behind the clock: a candidate that appears at now waits for
// the next pass.
func (c *Core) passedTo(now int64) {
	r := &c.reaper
	r.last = max(r.last, r.start+(now-r.start)/r.interval*r.interval)
}

// candidate reports whether the container manager would delete the node at c.now: a childless container that
// has had children (cversion > 0; one never used stays), or a childless TTL node whose mtime is more than
// its TTL ago.
func (c *Core) candidate(n *node) bool {
	if len(n.children) > 0 {
		return false
	}
	if n.isContainer() {
		return n.stat.Cversion > 0
	}
	ttl := n.ttl()
	return ttl > 0 && c.now-n.stat.Mtime > ttl
}

// nextReap returns the time of the next container-manager pass that has something to delete, if the tree
// stays as it is: the next pass if a container is a candidate now, else the first pass after some TTL node
// expires. It reports false when no pass would delete anything. It drops the entries of paths that are no
// longer containers or TTL nodes.
func (c *Core) nextReap() (int64, bool) {
	r := &c.reaper
	if len(r.paths) == 0 {
		return 0, false
	}
	next := r.last + r.interval
	best := int64(math.MaxInt64)
	// Every stale entry goes, whatever the map's order: an early return would leave some of them, and which
	// would depend on the order (active, and the state's encoding, would then too).
	due := false
	for p := range r.paths {
		n, ok := c.nodes[p]
		if !ok || (!n.isContainer() && n.ttl() == 0) {
			delete(r.paths, p)
			continue
		}
		if due || len(n.children) > 0 {
			continue
		}
		if n.isContainer() {
			due = n.stat.Cversion > 0
			continue
		}
		expires := n.stat.Mtime + n.ttl() + 1 // the first time a pass finds it expired
		if expires <= next {
			due = true
			continue
		}
		at := r.start + (expires-r.start+r.interval-1)/r.interval*r.interval
		best = min(best, at)
	}
	if due {
		return next, true
	}
	return best, best != math.MaxInt64
}

// reap runs one pass of the container manager at c.now: it deletes the candidates it finds at the start of
// the pass, in path order, each in a transaction of its own (a zxid each, as the server's deleteContainer
// requests), with a delete's watch events. A container emptied by the pass waits for the next one. It returns
// the deleted paths and the events.
func (c *Core) reap() ([]string, []Notification) {
	c.reaper.last = c.now
	var doomed []string
	for _, p := range slices.Sorted(maps.Keys(c.reaper.paths)) {
		if n, ok := c.nodes[p]; ok && c.candidate(n) {
			doomed = append(doomed, p)
		}
	}
	var notes []Notification
	for _, p := range doomed {
		c.zxid++
		notes = c.removeNode(p, notes)
	}
	return doomed, notes
}
