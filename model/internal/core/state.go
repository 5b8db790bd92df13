package core

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/go-zookeeper/zk"
)

// AppendState appends an encoding of the core's whole state to b and returns the extended slice: two
// encodings are equal only if the two cores are in the same state, so that whatever either is asked next,
// the other answers the same. It is canonical — maps in sorted order, children in the order the core keeps
// them — and complete: every node with its data, full stat, ACL and children's order; the sessions with their
// timeouts, last-heard times, ephemerals and identities; the watches; the clock, the zxid and the session-id
// counter; the container manager. It is not a format: nothing parses it, and it may change with any version.
func (c *Core) AppendState(b []byte) []byte {
	b = strconv.AppendInt(append(b, "now "...), c.now, 10)
	b = strconv.AppendInt(append(b, " zxid "...), c.zxid, 10)
	b = strconv.AppendInt(append(b, " sid "...), c.sidNext, 10)
	b = append(b, '\n')
	for _, p := range slices.Sorted(maps.Keys(c.nodes)) {
		n := c.nodes[p]
		b = append(append(b, "node "...), p...)
		b = strconv.AppendQuote(append(b, ' '), string(n.data))
		b = AppendStat(b, n.stat)
		b = AppendACL(b, n.acl)
		for _, ch := range n.children {
			b = append(append(b, ' '), ch.name...)
		}
		b = append(b, '\n')
	}
	for _, id := range slices.Sorted(maps.Keys(c.sessions)) {
		s := c.sessions[id]
		b = strconv.AppendInt(append(b, "session "...), id, 10)
		b = strconv.AppendInt(append(b, ' '), int64(s.timeout), 10)
		b = strconv.AppendInt(append(b, ' '), s.lastHeard, 10)
		if s.local {
			b = append(b, " local"...)
		}
		for _, p := range slices.Sorted(maps.Keys(s.ephemeral)) {
			b = append(append(b, ' '), p...)
		}
		if s.auth.ip != "" || len(s.auth.ids) > 0 || s.auth.super {
			b = fmt.Appendf(b, " auth=%v", s.auth)
		}
		b = append(b, '\n')
	}
	for kind := range c.watches {
		for _, p := range slices.Sorted(maps.Keys(c.watches[kind])) {
			b = strconv.AppendInt(append(b, "watch "...), int64(kind), 10)
			b = append(append(b, ' '), p...)
			for _, id := range slices.Sorted(maps.Keys(c.watches[kind][p])) {
				b = strconv.AppendInt(append(b, ' '), id, 10)
			}
			b = append(b, '\n')
		}
		for _, p := range slices.Sorted(maps.Keys(c.persist[kind])) {
			b = strconv.AppendInt(append(b, "persist "...), int64(kind), 10)
			b = append(append(b, ' '), p...)
			for _, id := range slices.Sorted(maps.Keys(c.persist[kind][p])) {
				b = strconv.AppendInt(append(b, ' '), id, 10)
				b = strconv.AppendInt(append(b, ':'), int64(c.persist[kind][p][id]), 10)
			}
			b = append(b, '\n')
		}
	}
	b = strconv.AppendInt(append(b, "reaper "...), c.reaper.last, 10)
	for _, p := range slices.Sorted(maps.Keys(c.reaper.paths)) {
		b = append(append(b, ' '), p...)
	}
	return append(b, '\n')
}

// AppendStat appends every field of a stat to b, each after a space.
func AppendStat(b []byte, s zk.Stat) []byte {
	for _, v := range []int64{s.Czxid, s.Mzxid, s.Ctime, s.Mtime, int64(s.Version), int64(s.Cversion), int64(s.Aversion), s.EphemeralOwner, int64(s.DataLength), int64(s.NumChildren), s.Pzxid} {
		b = strconv.AppendInt(append(b, ' '), v, 10)
	}
	return b
}

// AppendACL appends an ACL to b, each entry as " acl=PERMS:SCHEME:ID".
func AppendACL(b []byte, acl []zk.ACL) []byte {
	for _, a := range acl {
		b = strconv.AppendInt(append(b, " acl="...), int64(a.Perms), 10)
		b = append(append(append(append(b, ':'), a.Scheme...), ':'), a.ID...)
	}
	return b
}
