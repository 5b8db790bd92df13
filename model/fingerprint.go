package model

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/model/internal/core"
)

// This file encodes the server's state for a model checker that caches the states it has explored
// (check/statecache.go): two encodings are equal only if the two servers are in the same state, so that
// whatever either does next, the other does too. The encoding is canonical — maps in sorted order, the
// children in the order the server keeps them — and complete for what a step can read: every node with its
// data, full stat, ACL and children's order; the sessions with their timeouts, last-heard times, ephemerals
// and authentication; the watches; the clock, the zxid and the session-id counter; the container and TTL
// reaper; the ensemble's running members and read-only sessions; and each client's transport — its requests in flight, its replies
// and events not yet delivered (with their whole content), its connection state and the watches it holds.
// It is not a format: nothing parses it, and it may change with any version.

// AppendState appends the encoding of the server's whole state to b and returns the extended slice.
func (s *Server) AppendState(b []byte) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	b = s.core.AppendState(b)
	for i, down := range s.ens.down {
		b = append(b, "member "...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = strconv.AppendBool(append(b, ' '), down)
		b = append(b, '\n')
	}
	b = strconv.AppendInt(append(b, "leader "...), int64(s.ens.leader), 10)
	b = append(b, '\n')
	for _, m := range slices.Sorted(maps.Keys(s.ens.looking)) {
		if !s.cfg.readOnly {
			break // read only by a read-only mode's wait (readOnlyMember)
		}
		b = strconv.AppendInt(append(b, "looking "...), int64(m), 10)
		b = strconv.AppendInt(append(b, ' '), s.ens.looking[m], 10)
		b = append(b, '\n')
	}
	for _, id := range slices.Sorted(maps.Keys(s.roSessions)) {
		b = strconv.AppendInt(append(b, "read-only session "...), id, 10)
		b = strconv.AppendInt(append(b, ' '), int64(s.roSessions[id]), 10)
		b = append(b, '\n')
	}
	for _, id := range slices.Sorted(maps.Keys(s.localSess)) {
		b = strconv.AppendInt(append(b, "local session "...), id, 10)
		b = strconv.AppendInt(append(b, ' '), int64(s.localSess[id]), 10)
		b = append(b, '\n')
	}
	for _, t := range slices.Sorted(maps.Keys(s.sessionSets)) {
		b = strconv.AppendInt(append(b, "bucket "...), t, 10)
		b = append(b, '\n')
	}
	for _, c := range s.clients {
		b = c.appendState(b)
	}
	return b
}

// AppendClientState appends the encoding of client id's transport state (its connection, its requests in
// flight, its replies and events not yet delivered, the watches it holds) to b and returns the extended
// slice; nothing for a client the server does not have.
func (s *Server) AppendClientState(b []byte, id int) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id < 1 || id > len(s.clients) {
		return b
	}
	return s.clients[id-1].appendState(b)
}

func (c *Conn) appendState(b []byte) []byte {
	b = strconv.AppendInt(append(b, "client "...), int64(c.id), 10)
	b = strconv.AppendInt(append(b, " session "...), c.session, 10)
	b = strconv.AppendInt(append(b, " state "...), int64(c.state), 10)
	b = append(b, ' ')
	for _, f := range [...]bool{c.connected, c.closing, c.closed, c.finished, c.wireClient, c.connecting != nil, c.link != nil} {
		if f {
			b = append(b, 't')
		} else {
			b = append(b, 'f')
		}
	}
	b = strconv.AppendInt(append(b, " zxid "...), c.lastZxid, 10)
	b = strconv.AppendInt(append(b, " member "...), int64(c.member), 10)
	b = strconv.AppendInt(append(b, " unread "...), int64(len(c.events)), 10)
	b = strconv.AppendInt(append(b, " creds "...), int64(len(c.creds)), 10)
	b = append(b, '\n')
	for _, q := range [...][]*call{c.outgoing, c.sent, c.queued} {
		b = append(b, "calls"...)
		for _, cl := range q {
			b = appendFullRequest(append(b, ' '), cl.req)
		}
		b = append(b, '\n')
	}
	for _, it := range c.outbox {
		switch {
		case it.hangUp:
			b = append(b, "out hang-up\n"...)
		case it.drop:
			b = append(b, "out drop\n"...)
		case it.call != nil:
			b = appendFullRequest(append(b, "out reply "...), it.call.req)
			b = appendFullResult(append(b, " -> "...), it.call.rep.res)
			b = append(b, '\n')
		default:
			b = appendWatchEvent(append(b, "out event "...), it.event)
		}
	}
	for _, k := range c.watchers.SortedKeys() {
		b = strconv.AppendInt(append(b, "holds "...), int64(k.Kind), 10)
		b = append(append(b, ' '), k.Path...)
		b = strconv.AppendInt(append(b, ' '), int64(len(c.watchers[k])), 10)
		b = append(b, '\n')
	}
	if len(c.persistent) > 0 {
		persistent, recursive := c.persistentLists()
		b = fmt.Appendf(b, "persistent %q %q\n", persistent, recursive)
	}
	return b
}

func appendWatchEvent(b []byte, ev zk.Event) []byte {
	b = strconv.AppendInt(b, int64(ev.Type), 10)
	b = strconv.AppendInt(append(b, ' '), int64(ev.State), 10)
	b = append(append(b, ' '), ev.Path...)
	if ev.Err != nil {
		b = append(append(b, ' '), ev.Err.Error()...)
	}
	b = append(append(b, ' '), ev.Server...)
	return append(b, '\n')
}

func appendFullRequest(b []byte, r *core.Request) []byte {
	b = append(b, r.String()...)
	b = strconv.AppendBool(append(b, " watch="...), r.Watch)
	b = strconv.AppendInt(append(b, " v="...), int64(r.Version), 10)
	b = core.AppendACL(b, r.ACL)
	if len(r.Ops) > 0 {
		b = fmt.Appendf(b, " ops=%+v", r.Ops)
	}
	return b
}

func appendFullResult(b []byte, res core.Result) []byte {
	b = strconv.AppendInt(b, res.Zxid, 10)
	if res.Err != nil {
		b = append(append(b, " err="...), res.Err.Error()...)
	}
	b = append(append(b, ' '), res.Path...)
	b = strconv.AppendQuote(append(b, ' '), string(res.Data))
	b = core.AppendStat(b, res.Stat)
	for _, ch := range res.Children {
		b = append(append(b, ' '), ch...)
	}
	if len(res.Multi) > 0 {
		b = fmt.Appendf(b, " multi=%+v", res.Multi)
	}
	b = core.AppendACL(b, res.ACL)
	b = strconv.AppendInt(append(b, " n="...), int64(res.Number), 10)
	return strconv.AppendBool(append(b, ' '), res.NoReply)
}
