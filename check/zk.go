package check

import (
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/model"
)

// ZKFactory makes one client's Locker on a real go-zookeeper connection (connected to the model through its
// in-process wire) and the lock path, for RunZK. Like Factory, it must be deterministic: take randomness from
// RandFor(conn).
type ZKFactory func(conn *zk.Conn, path string) Locker

// wireClients are real go-zookeeper clients (*zk.Conn) on the model's in-process wire running f's lock: every
// request, reply and watch event crosses the wire as a step the scheduler takes, and go-zookeeper's own
// goroutines (send and receive loops, pinger, reconnection) run on the bubble's virtual time.
func wireClients(f ZKFactory) clients {
	return clients{
		name: wireKind,
		connect: func(srv *model.Server, i int) (int, clientConn, error) {
			// Not model.ConnectZK, which polls for the session on the clock: inside the bubble the handshake of
			// a first connection happens at once, and synctest.Wait sees it through without time passing.
			hosts := srv.Hosts()
			conn, err := connectWire(srv, &ensembleHosts{srv: srv, hosts: hosts, next: i % len(hosts)})
			if err != nil {
				return 0, nil, err
			}
			synctest.Wait()
			if st := conn.State(); st != zk.StateHasSession {
				conn.Close()
				return 0, nil, fmt.Errorf("go-zookeeper has no session on the model after its handshake (state %s)", st)
			}
			id := srv.ClientOf(conn.SessionID())
			wireIDs.Lock()
			wireIDs.of[conn] = id
			wireIDs.Unlock()
			return id, conn, nil
		},
		lock: func(conn clientConn, path string) Locker { return f(conn.(*zk.Conn), path) },
		forget: func(conn clientConn) {
			wireIDs.Lock()
			delete(wireIDs.of, conn.(*zk.Conn))
			wireIDs.Unlock()
		},
	}
}

// connectWire starts a go-zookeeper client on srv's in-process wire, with hosts as its host provider, as
// zk.Connect does with nothing changed but the capacity its receive loop starts each connection with
// (smallReceives).
func connectWire(srv *model.Server, hosts zk.HostProvider) (*zk.Conn, error) {
	var made *zk.Conn // set by an option, which zk.Connect applies before it starts the goroutines that dial
	dial := srv.Dialer()
	conn, _, err := zk.Connect(srv.Hosts(), sessionTimeout,
		func(c *zk.Conn) { made = c },
		zk.WithDialer(func(network, address string, timeout time.Duration) (net.Conn, error) {
			nc, err := dial(network, address, timeout)
			if err != nil {
				return nil, err
			}
			return smallReceives(made, nc), nil
		}),
		zk.WithHostProvider(hosts), zk.WithLogger(quiet{}))
	return conn, err
}

// receiveStart is the capacity go-zookeeper's receive loop starts a connection of the checker's clients
// with: enough for every reply of the checker's workloads and of the recipes (a reply of one lock or
// semaphore path's children, tens of bytes a child), where go-zookeeper's default is 1.5 MiB, allocated and
// zeroed at every connection — with two connections a client and three clients a run it was half of a RunZK
// run's CPU time (issue 28). A larger reply still arrives whole: the buffer grows to it, as go-zookeeper's
// own does past 1.5 MiB.
const receiveStart = 4 << 10

// smallReceives makes conn's receive loop start nc, a connection its dialer has just opened, with a buffer
// of receiveStart bytes instead of 1.5 MiB, and changes nothing it receives. go-zookeeper (v1.0.4) sizes that
// buffer as min(1.5 MiB, the limit zk.WithMaxBufferSize sets) when the receive loop starts, and checks the
// limit again only for a frame larger than the buffer, growing the buffer to the frame when there is no
// limit (0, the default). So the limit is receiveStart from the dial (on the connecting goroutine, while no
// receive loop runs: the previous connection's has ended) until the handshake's reply has been read, and 0
// (no limit, as for any client) from the receive loop's first read on, set by the receive loop's own
// goroutine. The handshake's reply is read with a buffer of its own, which ignores the limit.
//
// It relies on go-zookeeper's receive loop as v1.0.4 has it; TestWireClientsReceiveRepliesOfAnySize fails if
// an upgrade changes it so that a limit stays.
func smallReceives(conn *zk.Conn, nc net.Conn) net.Conn {
	zk.WithMaxBufferSize(receiveStart)(conn)
	return &handshakeCounter{Conn: nc, zc: conn, left: -1}
}

// handshakeCounter counts the bytes of the handshake's reply as go-zookeeper reads them (its length, then
// the reply); the first read after them is the receive loop's, which lifts the limit.
type handshakeCounter struct {
	net.Conn
	zc     *zk.Conn
	header [4]byte
	got    int // bytes of the length read so far
	left   int // bytes of the reply still to read; -1 until the length is known
}

func (h *handshakeCounter) Read(b []byte) (int, error) {
	if h.zc == nil {
		return h.Conn.Read(b)
	}
	if h.left == 0 {
		zk.WithMaxBufferSize(0)(h.zc) // the receive loop's goroutine: no limit from now on, as by default
		h.zc = nil
		return h.Conn.Read(b)
	}
	n, err := h.Conn.Read(b)
	for _, c := range b[:n] {
		switch {
		case h.left < 0:
			h.header[h.got] = c
			if h.got++; h.got == 4 {
				h.left = int(binary.BigEndian.Uint32(h.header[:]))
			}
		case h.left > 0:
			h.left--
		}
	}
	return n, err
}

// ensembleHosts is the host provider of RunZK's clients: always one more server to try. go-zookeeper given a
// single address treats every reconnection as a round of all servers failed: it fails the requests queued
// meanwhile with zk.ErrNoServer and waits a second, racing the caller's retries (who queues first is the
// goroutines' choice). Given an ensemble, it sends them to the next server at once — what services run
// with, and what this provider gives on every reconnection; when it happens is the scheduler's Reconnect
// step.
//
// On the model's one server it names that server every time. On an emulated ensemble (FaultStopServer) it
// goes round the servers from the client's own first one, skipping those that do not serve (stopped, or
// without a quorum), as a client skips the ones that refuse it; when none serves it waits a second of the
// bubble's time and looks again, rather than spin, so that the client's redialling blocks until the
// scheduler starts a server.
type ensembleHosts struct {
	srv   *model.Server
	hosts []string
	next  int
}

func (h *ensembleHosts) Init([]string) error { return nil }
func (h *ensembleHosts) Len() int            { return 3 }
func (h *ensembleHosts) Connected()          {}

func (h *ensembleHosts) Next() (string, bool) {
	if len(h.hosts) == 1 {
		return h.hosts[0], false
	}
	for {
		for range h.hosts {
			i := h.next
			h.next = (h.next + 1) % len(h.hosts)
			if m, err := h.srv.Mode(i); err == nil && (m == "leader" || m == "follower") {
				return h.hosts[i], false
			}
		}
		time.Sleep(time.Second)
	}
}

// quiet discards go-zookeeper's log lines: the trace says what happened.
type quiet struct{}

func (quiet) Printf(string, ...any) {}

// wireIDs are the client numbers of the go-zookeeper connections RunZK's runs have open, for RandFor.
var wireIDs = struct {
	sync.Mutex
	of map[*zk.Conn]int
}{of: map[*zk.Conn]int{}}

// wireClientID returns the client number of a connection a RunZK run opened, or 0.
func wireClientID(conn *zk.Conn) int {
	wireIDs.Lock()
	defer wireIDs.Unlock()
	return wireIDs.of[conn]
}

// RunZK is Run for locks written against go-zookeeper's *zk.Conn: the K clients are real go-zookeeper
// clients talking ZooKeeper's wire protocol to the model in-process, with the same scheduler, faults,
// properties, shrinking, traces and replay as Run. go-zookeeper's own goroutines (its send and receive
// loops, pinger and reconnection) run inside the run's synctest bubble, on its virtual time.
//
// While a run lasts, crypto/rand.Reader is a deterministic stream (go-zookeeper names protected nodes from
// it), so RunZK must not run beside parallel tests that need real randomness. Use RandFor(conn) for the
// lock's own randomness.
func RunZK(t *testing.T, f ZKFactory, cfg Config) Report {
	t.Helper()
	if f == nil {
		t.Fatal("check: RunZK needs a ZKFactory: a func(conn *zk.Conn, path string) Locker that makes your lock")
	}
	return named(runWith(t, wireClients(f), cfg), cfg)
}

// ReplayZK is Replay for a trace RunZK wrote: it re-runs the trace's decisions with f's lock on go-zookeeper
// clients; when the run comes out differently, its error is a *Divergence that names the first step that
// differs and says what the schedule does now.
func ReplayZK(t *testing.T, f ZKFactory, tr *Trace) (string, error) {
	t.Helper()
	return replayWith(t, wireClients(f), tr)
}
