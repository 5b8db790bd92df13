package conformance

import (
	"bufio"
	"context"
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
)

// This file starts a private standalone ZooKeeper 3.8 for the package's tests and wraps every
// session in a tiny TCP proxy so that the tests can sever and expire sessions.

// zooKeeperJars lists the jars (in /usr/share/java, Debian's layout) that a standalone server
// needs; the first three are required, the rest are used when present.
var zooKeeperJars = []string{
	"zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar",
	"slf4j-simple.jar", "netty-all.jar", "metrics-core.jar", "commons-cli.jar", "commons-io.jar", "snappy-java.jar",
}

const javaLibDir = "/usr/share/java"

// standaloneServer is a ZooKeeper server process this package started.
type standaloneServer struct {
	addr string
	cmd  *exec.Cmd
	dir  string
	done chan struct{}
}

// testServer is the server shared by every test in the package (started by TestMain).
var testServer *standaloneServer

func TestMain(m *testing.M) {
	// A start can fail when another process takes the free port first; try a few ports.
	var srv *standaloneServer
	var err error
	for attempt := 0; attempt < 3 && srv == nil; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		srv, err = startStandalone(ctx)
		cancel()
		if err != nil {
			fmt.Fprintf(os.Stderr, "starting ZooKeeper (attempt %d): %v\n", attempt+1, err)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "conformance tests need ZooKeeper 3.8 (run `make zookeeper`): %v\n", err)
		os.Exit(1)
	}
	testServer = srv
	code := m.Run()
	srv.stop()
	os.Exit(code)
}

// freeLoopbackPort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freeLoopbackPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// startStandalone starts ZooKeeperServerMain with tickTime=200 on a free loopback port in a
// fresh temporary directory and returns once the server answers "ruok".
func startStandalone(ctx context.Context) (*standaloneServer, error) {
	var classpath []string
	for i, jar := range zooKeeperJars {
		p := filepath.Join(javaLibDir, jar)
		if _, err := os.Stat(p); err != nil {
			if i < 3 {
				return nil, fmt.Errorf("required jar missing: %w", err)
			}
			continue
		}
		classpath = append(classpath, p)
	}
	dir, err := os.MkdirTemp("", "conformance-zk-")
	if err != nil {
		return nil, fmt.Errorf("make server directory: %w", err)
	}
	port, err := freeLoopbackPort()
	if err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf("tickTime=200\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n"+
		"4lw.commands.whitelist=*\nadmin.enableServer=false\nmaxClientCnxns=0\n", filepath.Join(dir, "data"), port)
	cfgPath := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return nil, fmt.Errorf("write zoo.cfg: %w", err)
	}
	logFile, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		return nil, fmt.Errorf("create server log: %w", err)
	}
	cmd := exec.Command("java", "-Xmx256m", "-cp", strings.Join(classpath, ":"),
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-Dzookeeper.jmx.log4j.disable=true",
		"org.apache.zookeeper.server.ZooKeeperServerMain", cfgPath)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start java: %w", err)
	}
	srv := &standaloneServer{addr: fmt.Sprintf("127.0.0.1:%d", port), cmd: cmd, dir: dir, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(srv.done)
	}()
	for {
		if reply, err := fourLetterWord(ctx, srv.addr, "ruok"); err == nil && reply == "imok" {
			return srv, nil
		}
		select {
		case <-srv.done:
			log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			return nil, fmt.Errorf("ZooKeeper exited during startup; log:\n%s", log)
		case <-ctx.Done():
			log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			srv.stop()
			return nil, fmt.Errorf("ZooKeeper on %s did not answer ruok: %w; log:\n%s", srv.addr, ctx.Err(), log)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stop kills the server process and removes its directory.
func (s *standaloneServer) stop() {
	_ = s.cmd.Process.Kill()
	<-s.done
	_ = os.RemoveAll(s.dir)
}

// fourLetterWord sends a ZooKeeper four-letter command and returns the trimmed reply.
func fourLetterWord(ctx context.Context, addr, cmd string) (string, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("dial %s: %w", addr, err)
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	} else {
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	}
	if _, err := conn.Write([]byte(cmd)); err != nil {
		return "", fmt.Errorf("send %s: %w", cmd, err)
	}
	reply, err := io.ReadAll(bufio.NewReader(conn))
	if err != nil {
		return "", fmt.Errorf("read %s reply: %w", cmd, err)
	}
	return strings.TrimSpace(string(reply)), nil
}

// sessionProxy forwards one client's connections to the server. Sever closes the current
// connections; hold makes it park new connections until release.
type sessionProxy struct {
	ln      net.Listener
	backend string

	mu      sync.Mutex
	conns   []net.Conn
	holding bool
	release chan struct{}
	closed  bool
}

func newSessionProxy(backend string) (*sessionProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy listen: %w", err)
	}
	p := &sessionProxy{ln: ln, backend: backend}
	go p.acceptLoop()
	return p, nil
}

func (p *sessionProxy) addr() string { return p.ln.Addr().String() }

func (p *sessionProxy) acceptLoop() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(client)
	}
}

func (p *sessionProxy) serve(client net.Conn) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		client.Close()
		return
	}
	p.conns = append(p.conns, client)
	wait := p.release
	holding := p.holding
	p.mu.Unlock()
	if holding {
		<-wait
	}
	server, err := net.DialTimeout("tcp", p.backend, 5*time.Second)
	if err != nil {
		client.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, server)
	p.mu.Unlock()
	go func() {
		_, _ = io.Copy(server, client)
		server.Close()
		client.Close()
	}()
	_, _ = io.Copy(client, server)
	server.Close()
	client.Close()
}

// sever closes every connection currently open through the proxy.
func (p *sessionProxy) sever() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// hold parks connections made from now on until unhold is called.
func (p *sessionProxy) hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.holding {
		p.holding = true
		p.release = make(chan struct{})
	}
}

func (p *sessionProxy) unhold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.holding {
		p.holding = false
		close(p.release)
	}
}

func (p *sessionProxy) close() {
	p.unhold()
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.ln.Close()
	p.sever()
}

// silentLogger drops go-zookeeper's log lines (reconnects are expected in these tests).
type silentLogger struct{}

func (silentLogger) Printf(string, ...any) {}

// proxiedTarget is a Target for the private server where every session runs through its own
// sessionProxy, so that Sever and Expire can act on one session.
type proxiedTarget struct {
	server  string
	proxies sync.Map // Conn -> *sessionProxy
}

func (pt *proxiedTarget) target() Target {
	return Target{Connect: pt.connect, Expire: pt.expire, Sever: pt.sever}
}

func (pt *proxiedTarget) connect(t *testing.T, sessionTimeout time.Duration) (Conn, <-chan zk.Event) {
	t.Helper()
	proxy, err := newSessionProxy(pt.server)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.close)
	conn, events, err := zk.Connect([]string{proxy.addr()}, sessionTimeout, zk.WithLogger(silentLogger{}))
	if err != nil {
		t.Fatalf("connect to ZooKeeper through %s: %v", proxy.addr(), err)
	}
	t.Cleanup(conn.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for conn.State() != zk.StateHasSession {
		select {
		case <-ctx.Done():
			t.Fatalf("no session from ZooKeeper at %s: %v", pt.server, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	pt.proxies.Store(Conn(conn), proxy)
	return conn, events
}

func (pt *proxiedTarget) proxyOf(t *testing.T, c Conn) *sessionProxy {
	t.Helper()
	p, ok := pt.proxies.Load(c)
	if !ok {
		t.Fatalf("connection %p was not opened by this target", c)
	}
	return p.(*sessionProxy)
}

func (pt *proxiedTarget) sever(t *testing.T, c Conn) {
	t.Helper()
	pt.proxyOf(t, c).sever()
}

// expire cuts c off until the server has expired its session. It knows the server has done so
// when an ephemeral canary node created by c has disappeared.
func (pt *proxiedTarget) expire(t *testing.T, c Conn) {
	t.Helper()
	proxy := pt.proxyOf(t, c)
	canary := fmt.Sprintf("/conformance-expiry-canary-%x-%d", c.SessionID(), time.Now().UnixNano())
	if _, err := c.Create(canary, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("expire: create canary %s: %v", canary, err)
	}
	watcher, _, err := zk.Connect([]string{pt.server}, 10*time.Second, zk.WithLogger(silentLogger{}))
	if err != nil {
		t.Fatalf("expire: connect watcher: %v", err)
	}
	defer watcher.Close()
	proxy.hold()
	proxy.sever()
	defer proxy.unhold()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		ok, _, err := watcher.Exists(canary)
		if err == nil && !ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("expire: session %#x still alive (canary %s present, last error %v): %v",
				c.SessionID(), canary, err, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func TestRealZooKeeperStandalone(t *testing.T) {
	pt := &proxiedTarget{server: testServer.addr}
	Run(t, pt.target())
}
