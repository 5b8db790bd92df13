package model

import (
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/zkmodel/zkmodel/jute"
)

// This file is ZooKeeper 3.8's read-only mode (the system property readonlymode.enabled=true), measured on
// Debian's 3.8.0 with a 3-server ensemble of which one server is left running (clients.TestStandInReadOnlyMode):
//
//   - A running server without a quorum is read-only: isro answers "ro", srvr's mode is "read-only".
//   - A connect request without the readOnly byte set is closed unanswered, as by a server that does not
//     serve; so is one resuming a session of the ensemble (made while it had a quorum), with the byte or
//     without.
//   - A new read-only session is a local session of that server: without localSessionsEnabled=true the server
//     answers the connect request with a bare reply header carrying NotReadOnly (-119), and closes the
//     connection only when the client sends something more; with it, a connect
//     response whose readOnly byte is set. The session spends no zxid. The client may resume it on a new
//     connection to that server (the old connection closes).
//   - On a read-only session reads are answered (multiRead too); every write (create in every form, delete,
//     setData, setACL, check, multi, sync, reconfig) gets NotReadOnly (-119), spending no zxid.
//   - When the quorum comes back the read-only server closes every connection and its local sessions are gone:
//     resuming one gets the expired-session response; the ensemble's sessions resume with their ephemerals,
//     and a new connect gets a read-write session (readOnly byte false) whether it asks for read-only or not.
//
// A server goes read-only max(2 s, tickTime) after it loses its quorum or starts without one (readOnlyDelay);
// before, it is not serving. Not modelled: the expiry of read-only sessions while no quorum runs. A read-only session resumed on another read-only server
// gets the expired-session response (not measured).

// WithReadOnlyMode lets a server that runs without a quorum serve read-only sessions, as ZooKeeper 3.8's
// readonlymode.enabled=true system property does.
func WithReadOnlyMode() Option { return func(c *config) { c.readOnly = true } }

// WithLocalSessions is ZooKeeper 3.8's localSessionsEnabled=true: the sessions an ensemble's servers make over
// the wire are local (localsession.go; WithLocalSessionsUpgrading for localSessionsUpgradingEnabled), and a
// read-only server gives new read-only sessions (local ones); without it, it answers their connect requests
// with NotReadOnly.
func WithLocalSessions() Option { return func(c *config) { c.localSessions = true } }

// readOnlyMember reports whether member i is a read-only server: read-only mode is on and it has run without
// a quorum for readOnlyDelay. Caller holds s.mu.
func (s *Server) readOnlyMember(i int) bool {
	return s.cfg.readOnly && i >= 0 && i < s.ens.size() && !s.ens.down[i] && s.ens.leader < 0 &&
		s.core.Now() >= s.ens.looking[i]+s.readOnlyDelay().Milliseconds()
}

// readOnlyDelay is how long a server without a quorum waits before it serves read-only: 3.8's QuorumPeer
// starts its read-only server max(2000 ms, tickTime) after it begins to look for a leader, if it still
// looks (measured: isro answers null, and a connect request is closed unanswered, until about 2.0 s after
// the quorum is lost or the server starts alone with tickTime 500, about 3.05 s with tickTime 3000).
func (s *Server) readOnlyDelay() time.Duration { return max(2*time.Second, s.cfg.tick) }

// lookFrom records that the given running members begin now to run without a quorum. Caller holds s.mu.
func (s *Server) lookFrom(members []int) {
	if s.ens.looking == nil {
		s.ens.looking = map[int]int64{}
	}
	for _, m := range members {
		s.ens.looking[m] = s.core.Now()
	}
	if s.cfg.readOnly && len(members) > 0 {
		s.record(nil, "read-only", "servers %v run without a quorum: read-only %s from now", members, s.readOnlyDelay())
	}
}

// readOnlyConnect decides a connect request to a member that does not serve read-write. It reports whether
// the request gets a new read-only session; when it does not, it has answered and closed the connection.
// Caller holds s.mu.
func (s *Server) readOnlyConnect(l *wireLink, req jute.ConnectRequest) bool {
	switch {
	case !s.readOnlyMember(l.member):
		// A server without a quorum reads the connect request and closes the connection (measured:
		// go-zookeeper logs "authentication failed: EOF"); a stopped one does not get this far.
		s.record(l.slot, "connect", "refused: server s%d is not serving (no quorum)", l.member)
	case !req.ReadOnly:
		s.record(l.slot, "connect", "refused: server s%d is read-only and the client does not allow it", l.member)
	case req.SessionID != 0:
		if m, ok := s.roSessions[req.SessionID]; ok && m == l.member {
			return true // its own read-only session, resumed on a new connection
		}
		if _, global := s.core.Session(req.SessionID); global && !s.isReadOnlySession(req.SessionID) {
			s.record(l.slot, "reconnect", "session %#x refused: server s%d is read-only and the session is the ensemble's", req.SessionID, l.member)
			break
		}
		s.record(l.slot, "reconnect", "session %#x refused (expired or unknown to read-only server s%d)", req.SessionID, l.member)
		l.sendConnectResponse(jute.ConnectResponse{Passwd: make([]byte, 16)})
	case !s.cfg.localSessions:
		s.record(l.slot, "connect", "refused: server s%d is read-only and sessions are global: NotReadOnly", l.member)
		l.send(replyFrame(0, s.core.Zxid(), errCodeNotReadOnly, nil))
		l.lingers = true // 3.8 leaves the connection open (measured): linger closes it
		return false
	default:
		return true
	}
	l.closeAfterFlush()
	return false
}

// linger keeps a connection a read-only server answered with NotReadOnly open, as 3.8 does (measured), until
// the client sends anything more — the server then closes it unanswered — or closes it itself. A stop of its
// server, the quorum's return and Close abort it meanwhile (it is among the wire links without a session).
// It runs on the link's reader goroutine.
func (l *wireLink) linger() {
	l.srv.mu.Lock()
	lingers := l.lingers
	l.srv.mu.Unlock()
	if !lingers {
		return
	}
	_, _ = jute.ReadFrame(l.nc, jute.MaxBuffer)
	l.abort()
}

// errCodeNotReadOnly is ZooKeeper's NOTREADONLY.
const errCodeNotReadOnly = -119

// openedReadOnly records c's new session, a local session (core.CreateLocalSession: no transaction), as one of
// read-only member m.
// Caller holds s.mu.
func (s *Server) openedReadOnly(c *Conn, m int) {
	if s.roSessions == nil {
		s.roSessions = map[int64]int{}
	}
	s.roSessions[c.session] = m
	s.record(c, "connect", "session %#x is a read-only session of server s%d", c.session, m)
}

// isReadOnlySession reports whether sid is a read-only session. Caller holds s.mu.
func (s *Server) isReadOnlySession(sid int64) bool {
	_, ok := s.roSessions[sid]
	return ok
}

// readOnlyHandles reports whether c's request of type op is answered by the read-only server itself: a write
// (NotReadOnly) or the close of a read-only session. Caller holds s.mu.
func (s *Server) readOnlyHandles(c *Conn, op int32) bool {
	if !s.isReadOnlySession(c.session) {
		return false
	}
	switch op {
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL, jute.OpDelete, jute.OpDeleteContainer,
		jute.OpSetData, jute.OpSetACL, jute.OpCheck, jute.OpMulti, jute.OpSync, jute.OpReconfig, jute.OpCloseSession:
		return true
	}
	return false
}

// applyReadOnly answers a request readOnlyHandles took: NotReadOnly for a write, spending no zxid; a
// closeSession ends the local session. It returns the record's detail and whether the server then closes the
// connection. Caller holds s.mu.
func (s *Server) applyReadOnly(c *Conn, cl *call) (string, bool) {
	w := cl.wire
	if w.op == jute.OpCloseSession {
		s.endReadOnlySession(c.session)
		w.frame = replyFrame(w.xid, s.core.Zxid(), 0, nil)
		return "ok (a local session)", true
	}
	w.frame = replyFrame(w.xid, s.core.Zxid(), errCodeNotReadOnly, nil)
	return "error not read-only", false
}

// endReadOnlySession removes a read-only session, which is no transaction. Caller holds s.mu.
func (s *Server) endReadOnlySession(sid int64) {
	s.core.CloseLocalSession(sid) // no transaction
	delete(s.roSessions, sid)
}

// readOnlyEnds is called when the ensemble's quorum comes back: the read-only servers (every running member
// but the one that just started) close their connections and their local sessions are gone. Caller holds
// s.mu.
func (s *Server) readOnlyEnds(members []int) {
	if !s.cfg.readOnly {
		return
	}
	for _, m := range members {
		if n := s.dropMember(m, "server s"+strconv.Itoa(m)+" rejoins the ensemble: it closes its read-only connections"); n > 0 {
			s.record(nil, "read-only", "server s%d rejoins the ensemble: %d read-only connections closed", m, n)
		}
	}
	s.endReadOnlySessions(members)
}

// endReadOnlySessions removes the read-only sessions of the given members (a stopped member's, or those of
// members that rejoin the ensemble). Caller holds s.mu.
func (s *Server) endReadOnlySessions(members []int) {
	for _, sid := range slices.Sorted(maps.Keys(s.roSessions)) {
		if slices.Contains(members, s.roSessions[sid]) {
			s.endReadOnlySession(sid)
		}
	}
}

// othersRunning returns the running members other than i. Caller holds s.mu.
func (s *Server) othersRunning(i int) []int {
	var out []int
	for m := range s.ens.size() {
		if m != i && !s.ens.down[m] {
			out = append(out, m)
		}
	}
	return out
}
