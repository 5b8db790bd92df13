package model

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"syscall"

	"github.com/zkmodel/zkmodel/model/internal/core"
)

// This file is the emulated ensemble: one model state served by n servers (members), each of which can be
// stopped and started, with ZooKeeper 3.8's rules for what clients see (measured on a real 3-server
// ensemble, realzk.Kill; see the package documentation):
//
//   - A stopped server is a killed one: its connections close (the client reads EOF), its port refuses new
//     ones, and its clients reconnect to another server with the same session.
//   - While a majority runs, one server leads. Stopping a follower drops only its own clients. Stopping the
//     leader starts an election: every server closes all its client connections, and sessions' expiry
//     deadlines restart from the new leader's start (a full timeout each).
//   - Without a majority no server serves: each closes its connections and answers a connect request by
//     closing the connection without a reply (go-zookeeper logs "authentication failed: EOF"; four-letter
//     words say "This ZooKeeper instance is not currently serving requests"). No session expires meanwhile,
//     however long it lasts: when a majority is back, a new leader restarts every session's deadline.
//
// All members share one state, so a session resumes on any of them and no member is ever behind a client's
// last zxid (on a real ensemble a lagging follower refuses such a client, which then tries another server).
// Elections take no time on the model (about 0.7 to 1 s on the real ensemble at tickTime 100 ms).

// ensembleState is the members' state. Member i is "server i" (0-based, as realzk numbers them).
type ensembleState struct {
	down       []bool                 // stopped members; its length is the ensemble's size
	ids        []int64                // each member's server id (its server.N line's N)
	leader     int                    // the leading member, or -1 when no majority runs
	listeners  [][]net.Listener       // each member's TCP listeners
	addrs      [][]string             // the addresses they were opened on, to listen on again after a restart
	traceMasks map[int]int64          // members' trace masks, once stmk set them (flw.go)
	reads      []core.NamespaceCounts // each member's reads per namespace since it started (nsmetrics.go; the writes are the core's)
	looking    map[int]int64          // when (virtual ms) each member last began to run without a quorum (readonly.go)
}

func newEnsemble(ids []int64) ensembleState {
	if len(ids) == 0 {
		ids = []int64{1}
	}
	n := len(ids)
	return ensembleState{down: make([]bool, n), ids: slices.Clone(ids), leader: n - 1, listeners: make([][]net.Listener, n), addrs: make([][]string, n), reads: make([]core.NamespaceCounts, n)}
}

// memberIDs returns the server ids of the members' configuration lines.
func memberIDs(members []EnsembleMember) []int64 {
	ids := make([]int64, len(members))
	for i, m := range members {
		ids[i] = m.ID
	}
	return ids
}

// add makes a server the ensemble does not run yet a member (a reconfig's joining server), stopped.
func (e *ensembleState) add(id int64) {
	e.down = append(e.down, true)
	e.ids = append(e.ids, id)
	e.listeners = append(e.listeners, nil)
	e.addrs = append(e.addrs, nil)
	e.reads = append(e.reads, nil)
}

// runningIDs returns the server ids of the running members.
func (e *ensembleState) runningIDs() []int64 {
	var out []int64
	for i, d := range e.down {
		if !d {
			out = append(out, e.ids[i])
		}
	}
	return out
}

// voter reports whether member i is a participant of the configuration (a standalone server is).
func (s *Server) voter(i int) bool {
	if !s.core.HasConfig() {
		return true
	}
	q, ok := s.core.ConfigMember(s.ens.ids[i])
	return ok && !q.Observer
}

// observer reports whether member i is an observer of the configuration.
func (s *Server) observer(i int) bool {
	q, ok := s.core.ConfigMember(s.ens.ids[i])
	return ok && q.Observer
}

// quorum reports whether a majority of the configuration's participants runs, and how many a majority is.
func (s *Server) quorum() (bool, int) {
	voters, running := 0, 0
	for i := range s.ens.size() {
		if s.voter(i) {
			voters++
			if !s.ens.down[i] {
				running++
			}
		}
	}
	if s.core.HasConfig() {
		voters = len(s.core.Voters()) // joining servers the ensemble has no member for yet count too
	}
	return running > voters/2, voters/2 + 1
}

func (e *ensembleState) size() int { return len(e.down) }

func (e *ensembleState) running() int {
	n := 0
	for _, d := range e.down {
		if !d {
			n++
		}
	}
	return n
}

// serving reports whether member i answers clients: it runs and a majority runs.
func (e *ensembleState) serving(i int) bool {
	return i >= 0 && i < len(e.down) && !e.down[i] && e.leader >= 0
}

// anyServing reports whether some member answers clients.
func (e *ensembleState) anyServing() bool { return e.leader >= 0 }

// next returns the first serving member from i on, in ring order, or -1: the member a client that tries the
// servers in order (as go-zookeeper does) reaches.
func (e *ensembleState) next(i int) int {
	n := len(e.down)
	for k := range n {
		if m := ((i+k)%n + n) % n; e.serving(m) {
			return m
		}
	}
	return -1
}

// WithEnsemble makes the server an ensemble of n members (default 1, a standalone server) that serve one
// state: StopServer and StartServer stop and start them, the model's own clients spread over them and
// reconnect to the next serving one, and Dialer and ListenEnsemble give real clients one address per
// member.
func WithEnsemble(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.members = n
		}
	}
}

// Members returns the number of servers in the ensemble (1 unless WithEnsemble or ListenEnsemble made more).
func (s *Server) Members() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ens.size()
}

// Mode returns server i's mode as ZooKeeper's "srvr" command names it: "leader", "follower" or
// "standalone"; "read-only" for a running server without a majority in read-only mode (WithReadOnlyMode);
// "not serving" for one without ("This ZooKeeper instance is not
// currently serving requests"); "stopped" for a stopped one.
func (s *Server) Mode(i int) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkMember(i); err != nil {
		return "", fmt.Errorf("model: Mode: %w", err)
	}
	switch {
	case s.ens.down[i]:
		return "stopped", nil
	case s.readOnlyMember(i):
		return "read-only", nil
	case s.ens.leader < 0:
		return "not serving", nil
	case s.ens.size() == 1:
		return "standalone", nil
	case s.ens.leader == i:
		return "leader", nil
	case s.observer(i):
		return "observer", nil
	}
	return "follower", nil // a server a reconfig removed too: it still serves (measured)
}

// Hosts returns the in-process addresses of the members, "127.0.0.1:2181" for server 0, "127.0.0.1:2182"
// for server 1, and so on: pass them to zk.Connect with zk.WithDialer(srv.Dialer()), which connects each
// address to its member.
func (s *Server) Hosts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, s.ens.size())
	for i := range out {
		out[i] = "127.0.0.1:" + strconv.Itoa(2181+i)
	}
	return out
}

// memberOfAddress returns the member an in-process address names (Hosts, or a member's TCP address), or 0
// for any other address, so that a Dialer given any address reaches server 0. Caller holds s.mu.
func (s *Server) memberOfAddress(address string) int {
	for i, addrs := range s.ens.addrs {
		if slices.Contains(addrs, address) {
			return i
		}
	}
	host, port, err := net.SplitHostPort(address)
	if p, perr := strconv.Atoi(port); err == nil && perr == nil && net.ParseIP(host) != nil && p > 2181 && p-2181 < s.ens.size() {
		return p - 2181
	}
	return 0
}

func (s *Server) checkMember(i int) error {
	if i < 0 || i >= s.ens.size() {
		return fmt.Errorf("no server %d: the ensemble has servers 0 to %d (WithEnsemble sets how many)", i, s.ens.size()-1)
	}
	return nil
}

// ListenEnsemble serves the ensemble on n loopback TCP ports, one per member, and returns their addresses
// in member order (a connect string is strings.Join(addrs, ",")). A standalone server (no WithEnsemble)
// becomes an ensemble of n members; otherwise n must be the ensemble's size.
func (s *Server) ListenEnsemble(n int) ([]string, error) {
	if n < 1 {
		return nil, fmt.Errorf("model: ListenEnsemble(%d): want at least one server (3 for a majority that survives one stop)", n)
	}
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = "127.0.0.1:0"
	}
	return s.ListenEnsembleOn(addrs...)
}

// ListenEnsembleOn is ListenEnsemble on the given TCP addresses, one per member ("127.0.0.1:0" for any free
// port). After StopServer(i), StartServer(i) listens on the same address again.
func (s *Server) ListenEnsembleOn(addrs ...string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(addrs)
	switch {
	case n == 0:
		return nil, errors.New("model: ListenEnsembleOn: give one address per server, e.g. 127.0.0.1:0 three times")
	case s.wire.closed:
		return nil, fmt.Errorf("model: ListenEnsembleOn %v: the server is closed", addrs)
	case s.ens.size() == 1 && n > 1 && !s.ens.down[0]:
		members := defaultMembers(n)
		grown := newEnsemble(memberIDs(members))
		s.core.SetMembers(members)
		grown.leader = s.ens.leader
		if grown.leader >= 0 {
			grown.leader = n - 1
		}
		grown.listeners[0], grown.addrs[0] = s.ens.listeners[0], s.ens.addrs[0]
		s.ens = grown
	case s.ens.size() != n:
		return nil, fmt.Errorf("model: ListenEnsembleOn: %d addresses for an ensemble of %d servers: give one per server", n, s.ens.size())
	}
	out := make([]string, n)
	for i, a := range addrs {
		got, err := s.listenMember(i, a)
		if err != nil {
			return nil, err
		}
		out[i] = got
	}
	return out, nil
}

// listenMember serves member i on a TCP address and returns the address. Caller holds s.mu.
func (s *Server) listenMember(i int, address string) (string, error) {
	ln, err := net.Listen("tcp", address)
	if err != nil {
		return "", fmt.Errorf("model: listen for server %d: %w", i, err)
	}
	s.ens.listeners[i] = append(s.ens.listeners[i], ln)
	addr := ln.Addr().String()
	s.ens.addrs[i] = append(s.ens.addrs[i], addr)
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return // closed
			}
			s.mu.Lock()
			if s.wire.closed || s.ens.down[i] {
				nc.Close()
			} else {
				s.startLink(nc, nil, i)
			}
			s.mu.Unlock()
		}
	}()
	return addr, nil
}

// dialRefused is what dialing a stopped member returns, as a TCP dial to a closed port does.
func dialRefused(address string) error {
	return &net.OpError{Op: "dial", Net: "pipe", Addr: pipeAddr(address), Err: syscall.ECONNREFUSED}
}

type pipeAddr string

func (a pipeAddr) Network() string { return "pipe" }
func (a pipeAddr) String() string  { return string(a) }

// StopServer stops server i as a killed ZooKeeper server stops: its connections close at once (what was
// queued for them is lost) and its addresses refuse connections. If the rest still has a majority and i led,
// a new leader is elected: every other server closes its connections too and every session's expiry
// deadline restarts. If no majority is left, no server serves. It is an error to stop a stopped server.
func (s *Server) StopServer(i int) error { return s.Do(Step{Kind: StopServer, Server: i}) }

// StartServer starts the stopped server i again (on the addresses it listened on). If that gives the
// ensemble back its majority, a leader is elected (the highest-numbered running server) and every session's
// expiry deadline restarts from now; otherwise it joins as a follower. It is an error to start a running
// server, or if its address cannot be listened on again.
func (s *Server) StartServer(i int) error { return s.Do(Step{Kind: StartServer, Server: i}) }

// stopMember is the StopServer step. Caller holds s.mu.
func (s *Server) stopMember(i int) {
	s.ens.down[i] = true
	for _, ln := range s.ens.listeners[i] {
		ln.Close()
	}
	s.ens.listeners[i] = nil
	s.endReadOnlySessions([]int{i}) // its local sessions die with it
	s.endLocalSessions([]int{i})
	dropped := s.dropMember(i, fmt.Sprintf("server s%d stopped", i))
	quorum, _ := s.quorum()
	switch {
	case !quorum && s.ens.leader >= 0:
		s.ens.leader = -1
		s.endLocalSessions(nil) // every server stops serving: their local sessions are gone
		s.lookFrom(s.othersRunning(i))
		for m := range s.ens.size() {
			dropped += s.dropMember(m, "no quorum: server s"+strconv.Itoa(m)+" is not serving")
		}
		s.record(nil, "stop", "server s%d stopped, %d connections closed; %d of %d servers run, no quorum: none serves", i, dropped, s.ens.running(), s.ens.size())
	case quorum && s.ens.leader == i:
		s.ens.leader = -1
		for m := range s.ens.size() {
			dropped += s.dropMember(m, "leader election: server s"+strconv.Itoa(m)+" closed its connections")
		}
		s.elect()
		s.record(nil, "stop", "server s%d (the leader) stopped, %d connections closed by the election; s%d leads, session deadlines restart", i, dropped, s.ens.leader)
	default:
		s.record(nil, "stop", "server s%d stopped, %d connections closed", i, dropped)
	}
}

// startMember is the StartServer step; it fails, changing nothing, when a listener cannot be reopened.
// Caller holds s.mu.
func (s *Server) startMember(i int) error {
	addrs := s.ens.addrs[i]
	s.ens.addrs[i] = nil
	s.ens.down[i] = false
	s.ens.reads[i] = nil // a restarted server counts its reads afresh
	for _, a := range addrs {
		if _, err := s.listenMember(i, a); err != nil {
			for _, ln := range s.ens.listeners[i] {
				ln.Close()
			}
			s.ens.listeners[i], s.ens.addrs[i], s.ens.down[i] = nil, addrs, true
			return fmt.Errorf("model: start server %d: %w", i, err)
		}
	}
	if quorum, _ := s.quorum(); s.ens.leader < 0 && quorum {
		s.readOnlyEnds(s.othersRunning(i))
		s.elect()
		s.record(nil, "start", "server s%d started: quorum back, s%d leads, session deadlines restart", i, s.ens.leader)
		return nil
	}
	if s.ens.leader < 0 {
		s.lookFrom([]int{i})
	}
	s.record(nil, "start", "server s%d started", i)
	return nil
}

// elect makes the highest-numbered running participant the leader (every member has the same zxid, and
// ZooKeeper's election then prefers the highest server id) and restarts every session's expiry deadline, as
// a new leader's session tracker does. Caller holds s.mu.
func (s *Server) elect() {
	s.endLocalSessions(nil) // every server restarts its session tracker: the local sessions are gone
	for m := s.ens.size() - 1; m >= 0; m-- {
		if !s.ens.down[m] && s.voter(m) {
			s.ens.leader = m
			break
		}
	}
	for _, sid := range s.core.SessionIDs() {
		s.heard(sid)
	}
}

// dropMember closes every connection of member i, as a server that stops or stops serving does, and returns
// how many clients lost theirs. The server executes nothing more for them at once; each client learns of it
// when its next delivery is the drop (first in its queue, what was queued behind it lost), a step of its
// own with the manual transport, so that clients whose connections dropped together react one at a time.
// Caller holds s.mu.
func (s *Server) dropMember(i int, why string) int { return s.dropMemberAs(i, why, false) }

// dropMemberAs is dropMember; with behind set, each client gets what was queued for it before the drop (a
// reconfig's reply, say, before the election it starts closes the connection).
func (s *Server) dropMemberAs(i int, why string, behind bool) int {
	n := 0
	for _, c := range s.clients {
		switch {
		case c.wireClient && c.connecting != nil && c.connecting.link.member == i:
			c.connecting.link.abort()
			c.connecting.done <- false
			c.connecting = nil
		case c.connected && (c.wireClient && c.link != nil && c.link.member == i || !c.wireClient && c.member == i):
			if len(c.outbox) > 0 && c.outbox[0].drop || behind && c.closing {
				continue // dropped or closing already (by the stop that preceded this election, say)
			}
			s.record(c, "drop", "%s", why)
			c.closing = true
			if behind {
				c.outbox = append(c.outbox, outItem{hangUp: true}) // the server closes it once the queue is written
			} else {
				c.outbox = append([]outItem{{drop: true}}, c.outbox...)
			}
			n++
		}
	}
	for l := range s.wire.links {
		if l.member == i && (l.slot == nil || l.slot.link != l) {
			l.abort() // a connection still in its handshake
		}
	}
	return n
}

// doServer takes a StopServer or StartServer step. Caller holds s.mu.
func (s *Server) doServer(st Step) error {
	if err := s.checkMember(st.Server); err != nil {
		return fmt.Errorf("model: step %s: %w", st, err)
	}
	switch {
	case st.Kind == StopServer && s.ens.down[st.Server]:
		return fmt.Errorf("model: step %s: server %d is stopped already (StartServer starts it)", st, st.Server)
	case st.Kind == StartServer && !s.ens.down[st.Server]:
		return fmt.Errorf("model: step %s: server %d is running (StopServer stops it)", st, st.Server)
	}
	defer s.stepping()()
	if st.Kind == StopServer {
		s.stopMember(st.Server)
	} else if err := s.startMember(st.Server); err != nil {
		return err
	}
	s.settle()
	return nil
}

// ServerOf returns the server of the ensemble that the client of sessionID is connected to, and false when
// that client is not connected (or there is none).
func (s *Server) ServerOf(sessionID int64) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.owner(sessionID)
	switch {
	case c == nil || !c.connected || c.closing:
		return 0, false
	}
	m := c.servedBy()
	return max(m, 0), m >= 0
}

// servedBy is the member that serves c: its wire link's for a wire client (-1 when it has none), else the
// member its in-process connection is on.
func (c *Conn) servedBy() int {
	switch {
	case c.wireClient && c.link == nil:
		return -1
	case c.wireClient:
		return c.link.member
	}
	return c.member
}

// reconfigured brings the emulated ensemble in line with the configuration a reconfig committed: a joining
// server it has no member for becomes a stopped member, and when the leader is no longer a participant, the
// others elect a new one, closing every client connection (after what was queued for it), as a real
// ensemble does when a reconfig removes its leader (measured). A removed server keeps running and serving as
// a follower. Caller holds s.mu.
func (s *Server) reconfigured() {
	if !s.core.HasConfig() {
		return
	}
	for _, q := range s.core.ConfigMembers() {
		if !slices.Contains(s.ens.ids, q.ID) {
			s.ens.add(q.ID)
			s.record(nil, "reconfig", "server.%d joined the configuration; the ensemble does not run it (s%d, stopped)", q.ID, s.ens.size()-1)
		}
	}
	if old := s.ens.leader; old >= 0 && !s.voter(old) {
		s.ens.leader = -1
		dropped := 0
		for m := range s.ens.size() {
			dropped += s.dropMemberAs(m, "leader election after a reconfig: server s"+strconv.Itoa(m)+" closed its connections", true)
		}
		s.elect()
		s.record(nil, "reconfig", "the leader s%d left the participants, %d connections closed by the election; s%d leads, session deadlines restart", old, dropped, s.ens.leader)
	}
}
