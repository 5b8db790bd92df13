package recipe_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/recipe"
	"github.com/zkmodel/zkmodel/recipe/recipetest"
)

// TestLockOnStandaloneZooKeeper runs the behavioural suite on a real ZooKeeper 3.8
// server this test starts, each session behind its own proxy so the test can cut it
// off (disconnection) or keep it off until the server expires it (expiry).
func TestLockOnStandaloneZooKeeper(t *testing.T) {
	srv := startStandalone(t)
	recipetest.Run(t, &standaloneEnv{srv: srv, sessions: map[recipe.Conn]*standaloneSession{}})
}

// sessionTimeout is long enough for go-zookeeper to reconnect (it pauses a second
// between rounds of dialling) and short enough for quick expiry tests.
const sessionTimeout = 3 * time.Second

type standaloneServer struct{ addr string }

// startStandalone starts a standalone ZooKeeper on a free loopback port and stops it
// when the test ends.
func startStandalone(t testing.TB) *standaloneServer {
	t.Helper()
	const java = "/usr/share/java"
	if _, err := os.Stat(filepath.Join(java, "zookeeper.jar")); err != nil {
		t.Fatalf("ZooKeeper is not installed (%v): run `make zookeeper` (Debian's zookeeper package)", err)
	}
	port := freePort(t)
	dir := t.TempDir()
	cfg := fmt.Sprintf("tickTime=100\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n"+
		"maxSessionTimeout=20000\nadmin.enableServer=false\n4lw.commands.whitelist=*\n", dir, port)
	if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	var cp []string
	for _, jar := range []string{"zookeeper", "zookeeper-jute", "slf4j-api", "slf4j-nop", "netty-handler", "netty-common",
		"netty-transport", "netty-buffer", "netty-codec", "netty-resolver", "netty-transport-native-epoll",
		"netty-transport-native-unix-common", "metrics-core", "commons-cli"} {
		cp = append(cp, filepath.Join(java, jar+".jar"))
	}
	log, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("java", "-Xmx256m", "-cp", strings.Join(cp, ":"),
		"org.apache.zookeeper.server.quorum.QuorumPeerMain", filepath.Join(dir, "zoo.cfg"))
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start ZooKeeper: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); log.Close() })
	srv := &standaloneServer{addr: fmt.Sprintf("127.0.0.1:%d", port)}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if out, _ := srv.fourLetter("ruok"); out == "imok" {
			return srv
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(log.Name())
			t.Fatalf("ZooKeeper did not answer ruok within 60s; log:\n%s", b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *standaloneServer) fourLetter(word string) (string, error) {
	c, err := net.DialTimeout("tcp", s.addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(word)); err != nil {
		return "", err
	}
	out, err := io.ReadAll(c)
	return strings.TrimSpace(string(out)), err
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

type standaloneEnv struct {
	srv      *standaloneServer
	mu       sync.Mutex
	sessions map[recipe.Conn]*standaloneSession
}

type standaloneSession struct {
	conn  *zk.Conn
	proxy *proxy
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

func (e *standaloneEnv) Connect(t testing.TB) (recipe.Conn, <-chan zk.Event) {
	t.Helper()
	p := startProxy(t, e.srv.addr)
	conn, events, err := zk.Connect([]string{p.addr}, sessionTimeout, zk.WithLogger(quietLogger{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(conn.Close)
	waitState(t, conn, zk.StateHasSession)
	e.mu.Lock()
	e.sessions[conn] = &standaloneSession{conn: conn, proxy: p}
	e.mu.Unlock()
	return conn, events
}

func (e *standaloneEnv) session(t testing.TB, c recipe.Conn) *standaloneSession {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.sessions[c]
	if !ok {
		t.Fatalf("connection %v was not made by this env", c)
	}
	return s
}

// Expire keeps the session cut off until the server's session tracker no longer
// lists it, then lets the client reconnect (and learn it has expired).
func (e *standaloneEnv) Expire(t testing.TB, c recipe.Conn) {
	t.Helper()
	s := e.session(t, c)
	id := fmt.Sprintf("0x%x", s.conn.SessionID())
	s.proxy.block()
	deadline := time.Now().Add(60 * time.Second)
	for {
		dump, err := e.srv.fourLetter("dump")
		if err == nil && !strings.Contains(dump, id) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s not expired after 60s; dump:\n%s", id, dump)
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.proxy.unblock()
}

func (e *standaloneEnv) Disconnect(t testing.TB, c recipe.Conn) {
	t.Helper()
	s := e.session(t, c)
	s.proxy.block()
	waitState(t, s.conn, zk.StateDisconnected, zk.StateConnecting, zk.StateConnected)
}

func (e *standaloneEnv) Reconnect(t testing.TB, c recipe.Conn) {
	t.Helper()
	s := e.session(t, c)
	s.proxy.unblock()
	waitState(t, s.conn, zk.StateHasSession)
}

func waitState(t testing.TB, conn *zk.Conn, want ...zk.State) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !contains(want, conn.State()) {
		if time.Now().After(deadline) {
			t.Fatalf("connection state %v, want one of %v after 60s", conn.State(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func contains(states []zk.State, s zk.State) bool {
	for _, x := range states {
		if x == s {
			return true
		}
	}
	return false
}

// proxy forwards TCP connections to a server; blocked, it cuts the open ones and
// refuses new ones (accepting and closing them at once, like a dead server).
type proxy struct {
	addr    string
	target  string
	mu      sync.Mutex
	blocked bool
	open    map[net.Conn]bool
}

func startProxy(t testing.TB, target string) *proxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{addr: l.Addr().String(), target: target, open: map[net.Conn]bool{}}
	t.Cleanup(func() { l.Close(); p.block() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *proxy) serve(client net.Conn) {
	p.mu.Lock()
	blocked := p.blocked
	p.mu.Unlock()
	if blocked {
		client.Close()
		return
	}
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	p.mu.Lock()
	if p.blocked {
		p.mu.Unlock()
		client.Close()
		server.Close()
		return
	}
	p.open[client], p.open[server] = true, true
	p.mu.Unlock()
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, bufio.NewReader(src))
		dst.Close()
		src.Close()
		p.mu.Lock()
		delete(p.open, dst)
		delete(p.open, src)
		p.mu.Unlock()
	}
	go pipe(server, client)
	go pipe(client, server)
}

func (p *proxy) block() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blocked = true
	for c := range p.open {
		c.Close()
	}
}

func (p *proxy) unblock() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blocked = false
}
