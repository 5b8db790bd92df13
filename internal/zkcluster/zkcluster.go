// Package zkcluster writes the configuration of a ZooKeeper test cluster on 127.0.0.1 — one zoo.cfg per
// server, in a directory of its own that is also its dataDir — for tests that start the servers with a
// zkServer.sh: Debian's ZooKeeper 3.8 or the stand-in (dropin/bin). Starting and stopping them is the
// test's own business (cmd/zkmodel's and clients' tests do it differently).
package zkcluster

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Server is one configured server.
type Server struct {
	Dir        string // its dataDir, holding its zoo.cfg (and, in a cluster, its myid)
	Cfg        string // its zoo.cfg
	ClientPort int
}

// Addr is the server's client address.
func (s Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.ClientPort) }

// FreePorts returns n distinct ports on 127.0.0.1 that were free a moment ago (each is held until all are
// chosen, so none repeats).
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, 0, n)
	held := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("zkcluster: a free port on 127.0.0.1: %v", err)
		}
		held = append(held, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// Write writes under base the zoo.cfg of each of n servers (1: a standalone server) on free ports, server i
// (from 0) in base/srv<i+1>: tickTime=500, initLimit=10, syncLimit=5, its dataDir and clientPort and
// admin.enableServer=false; with more than one server, the server.N lines (quorum and election ports on
// 127.0.0.1) and a myid file in each dataDir; then the extra lines. It fails t on any error.
func Write(t testing.TB, base string, n int, extra ...string) []Server {
	t.Helper()
	if n < 1 {
		t.Fatalf("zkcluster: a cluster of %d servers: want at least 1", n)
	}
	ports := FreePorts(t, 3*n) // server i: client, quorum and election ports at 3i, 3i+1, 3i+2
	servers := make([]Server, n)
	for i := range n {
		dir := filepath.Join(base, fmt.Sprintf("srv%d", i+1))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatalf("zkcluster: %v", err)
		}
		lines := []string{"tickTime=500", "initLimit=10", "syncLimit=5", "dataDir=" + dir,
			"clientPort=" + strconv.Itoa(ports[3*i]), "admin.enableServer=false"}
		if n > 1 {
			for j := range n {
				lines = append(lines, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", j+1, ports[3*j+1], ports[3*j+2]))
			}
			if err := os.WriteFile(filepath.Join(dir, "myid"), []byte(strconv.Itoa(i+1)+"\n"), 0o600); err != nil {
				t.Fatalf("zkcluster: %v", err)
			}
		}
		cfg := filepath.Join(dir, "zoo.cfg")
		if err := os.WriteFile(cfg, []byte(strings.Join(append(lines, extra...), "\n")+"\n"), 0o600); err != nil {
			t.Fatalf("zkcluster: %v", err)
		}
		servers[i] = Server{Dir: dir, Cfg: cfg, ClientPort: ports[3*i]}
	}
	return servers
}
