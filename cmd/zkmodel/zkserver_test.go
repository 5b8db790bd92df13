package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/internal/evqueue"
	"github.com/zkmodel/zkmodel/internal/zkcluster"
)

// The stand-in's tests run dropin/bin/zkServer.sh as a harness does, with this test binary as the zkmodel
// binary (ZKMODEL_BIN): run as `zkmodel …` (envAsMain set), it is the command itself.
const envAsMain = "ZKMODEL_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envAsMain) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// standinSuperDigest is go-zookeeper's harness's super user, super:test.
const standinSuperDigest = "super:D/InIHSb7yEEbrWz8b9l71RjZJU="

// cluster is a set of zoo.cfg files written as go-zookeeper's harness writes them, and the stand-in's
// processes running them.
type cluster struct {
	t      *testing.T
	rundir string
	env    []string
	cfgs   []string // each server's zoo.cfg
	ports  []int    // each server's clientPort
	dirs   []string // each server's dataDir
	mu     sync.Mutex
	procs  []*standin // the running process of each server, nil when stopped
}

// standin is one running `zkServer.sh start-foreground`.
type standin struct {
	cmd    *exec.Cmd
	out    *syncBuffer
	waited chan error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newCluster writes the configuration of a cluster of size servers (1: standalone) and extra zoo.cfg lines.
func newCluster(t *testing.T, size int, jvmFlags string, extra ...string) *cluster {
	t.Helper()
	base := t.TempDir()
	c := &cluster{t: t, rundir: filepath.Join(base, "run"), procs: make([]*standin, size)}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c.env = append(os.Environ(), envAsMain+"=1", "ZKMODEL_BIN="+exe, "ZKMODEL_RUNDIR="+c.rundir, "SERVER_JVMFLAGS="+jvmFlags)
	lines := []string{"reconfigEnabled=true", "4lw.commands.whitelist=*"}
	if size > 1 {
		lines = append(lines, "standaloneEnabled=false")
	}
	for _, srv := range zkcluster.Write(t, base, size, append(lines, extra...)...) {
		c.cfgs, c.ports, c.dirs = append(c.cfgs, srv.Cfg), append(c.ports, srv.ClientPort), append(c.dirs, srv.Dir)
	}
	t.Cleanup(func() {
		for i := range size {
			c.kill(i)
		}
	})
	return c
}

// script is the stand-in's path in this repository.
func script(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("../../dropin/bin/zkServer.sh")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// run runs the script with args to completion and returns its output and exit status.
func (c *cluster) run(args ...string) (string, int) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, script(c.t), args...)
	cmd.Env = c.env
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		c.t.Fatalf("zkServer.sh %v: %v", args, err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// start runs server i's `zkServer.sh start-foreground` and waits (bounded) until its port accepts.
func (c *cluster) start(i int) *standin {
	c.t.Helper()
	s := &standin{out: &syncBuffer{}, waited: make(chan error, 1)}
	s.cmd = exec.Command(script(c.t), "start-foreground", c.cfgs[i])
	s.cmd.Env = c.env
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out // pipes: Wait returns only once every holder of them is gone
	if err := s.cmd.Start(); err != nil {
		c.t.Fatalf("start server %d: %v", i+1, err)
	}
	go func() { s.waited <- s.cmd.Wait() }()
	c.mu.Lock()
	c.procs[i] = s
	c.mu.Unlock()
	addr := c.addr(i)
	deadline := time.Now().Add(20 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return s
		}
		select {
		case err := <-s.waited:
			s.waited <- err // for kill, at the test's end
			c.t.Fatalf("server %d exited (%v) before listening on %s:\n%s", i+1, err, addr, s.out.String())
		default:
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("server %d does not listen on %s after 20s:\n%s", i+1, addr, s.out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// kill kills server i's process with SIGKILL, as go-zookeeper's harness stops a server, and checks that
// Wait returns: no process it started holds its output pipes.
func (c *cluster) kill(i int) {
	c.t.Helper()
	c.mu.Lock()
	s := c.procs[i]
	c.procs[i] = nil
	c.mu.Unlock()
	if s == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	select {
	case <-s.waited:
	case <-time.After(20 * time.Second):
		c.t.Errorf("server %d: Wait did not return 20s after SIGKILL: a process it started holds its stdout or stderr", i+1)
	}
}

func (c *cluster) addr(i int) string { return "127.0.0.1:" + strconv.Itoa(c.ports[i]) }

func (c *cluster) addrs() []string {
	var out []string
	for i := range c.ports {
		out = append(out, c.addr(i))
	}
	return out
}

// daemonPID reads the cluster daemon's pid from a stand-in's output.
func daemonPID(t *testing.T, s *standin) int {
	t.Helper()
	re := regexp.MustCompile(`cluster daemon pid (\d+)`)
	deadline := time.Now().Add(20 * time.Second)
	m := re.FindStringSubmatch(s.out.String())
	for ; m == nil; m = re.FindStringSubmatch(s.out.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("no daemon pid in the stand-in's output after 20s:\n%s", s.out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	pid, _ := strconv.Atoi(m[1])
	return pid
}

// waitGone waits (bounded) until pid no longer runs.
func waitGone(t *testing.T, pid int, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for processRuns(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %d) still runs after 30s", what, pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// refuses reports whether addr refuses TCP connections.
func refuses(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return errors.Is(err, syscall.ECONNREFUSED)
	}
	conn.Close()
	return false
}

// zkClient connects go-zookeeper to addrs with lossless session events and waits for its session.
func zkClient(t *testing.T, addrs []string) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	rec := evqueue.NewSession()
	conn, events, err := zk.Connect(addrs, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(quietLogger{}), rec.Option())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	ch := rec.Follow(events)
	waitState(t, ch, zk.StateHasSession)
	return conn, ch
}

// TestZKServerEnsemble: three servers started through zkServer.sh as go-zookeeper's harness starts them
// form one ensemble: a client of all three keeps its session and data while one server is killed (whose
// port then refuses); killing a second leaves the third without a quorum; starting the two again gives the
// client its session back, with its ephemeral node.
func TestZKServerEnsemble(t *testing.T) {
	c := newCluster(t, 3, "")
	for i := range 3 {
		c.start(i)
	}
	conn, events := zkClient(t, c.addrs())
	sid := conn.SessionID()
	if _, err := conn.Create("/data", []byte("kept"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create("/eph", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	on := strings.Index(strings.Join(c.addrs(), ","), conn.Server())
	first := strings.Count(strings.Join(c.addrs(), ",")[:on], ",") // the server the client is on
	c.kill(first)
	if !refuses(c.addr(first)) {
		t.Fatalf("server %d's port %s still accepts after its process was killed", first+1, c.addr(first))
	}
	waitState(t, events, zk.StateHasSession) // failed over
	// The client may fail over before the ensemble has noticed the kill; when the killed server led, the
	// election that follows closes every connection (as a real one does), and the client reconnects again.
	for try := 1; ; try++ {
		b, _, err := conn.Get("/data")
		if errors.Is(err, zk.ErrConnectionClosed) && try < 3 {
			waitState(t, events, zk.StateHasSession)
			continue
		}
		if err != nil || string(b) != "kept" {
			t.Fatalf("after failover: Get(/data) = %q, %v", b, err)
		}
		break
	}
	second := (first + 1) % 3
	c.kill(second)
	third := 3 - first - second
	// Without a quorum the third server closes its clients' connections and answers no connect.
	waitState(t, events, zk.StateDisconnected)
	other, _, err := zk.Connect([]string{c.addr(third)}, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(quietLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, _, err := other.Get("/data"); err == nil { // go-zookeeper fails it once it has tried every server
		t.Fatalf("Get on the server left without a quorum = %v, want an error", err)
	}
	other.Close()
	c.start(first)
	c.start(second)
	waitState(t, events, zk.StateHasSession)
	if conn.SessionID() != sid {
		t.Fatalf("session %#x after the restarts, want %#x resumed", conn.SessionID(), sid)
	}
	if ok, _, err := conn.Exists("/eph"); err != nil || !ok {
		t.Fatalf("the session's ephemeral after the restarts: exists %v, %v", ok, err)
	}
}

// TestZKServerStandaloneFlags: SERVER_JVMFLAGS' superDigest and extendedTypesEnabled, as go-zookeeper's
// harness passes them, reach the model: TTL nodes can be created, and the super user reads what no one else
// may.
func TestZKServerStandaloneFlags(t *testing.T) {
	flags := "-Dzookeeper.DigestAuthenticationProvider.superDigest=" + standinSuperDigest +
		" -Dzookeeper.extendedTypesEnabled=true -Dzookeeper.emulate353TTLNodes=true"
	c := newCluster(t, 1, flags)
	c.start(0)
	conn, _ := zkClient(t, c.addrs())
	if _, err := conn.CreateTTL("/ttl", nil, zk.FlagTTL, zk.WorldACL(zk.PermAll), time.Minute); err != nil {
		t.Fatalf("CreateTTL with extendedTypesEnabled: %v", err)
	}
	if _, err := conn.Create("/secret", []byte("s"), 0, zk.DigestACL(zk.PermAll, "owner", "pw")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := conn.Get("/secret"); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("Get(/secret) without auth = %v, want %v", err, zk.ErrNoAuth)
	}
	if err := conn.AddAuth("digest", []byte("super:test")); err != nil {
		t.Fatal(err)
	}
	if b, _, err := conn.Get("/secret"); err != nil || string(b) != "s" {
		t.Fatalf("Get(/secret) as the super user = %q, %v", b, err)
	}
}

// TestZKServerRestartKeepsData: a standalone server killed and run again within the linger time comes back
// with its data; once it is killed and its dataDir removed, the cluster's daemon exits.
func TestZKServerRestartKeepsData(t *testing.T) {
	c := newCluster(t, 1, "")
	s := c.start(0)
	pid := daemonPID(t, s)
	conn, _ := zkClient(t, c.addrs())
	if _, err := conn.Create("/kept", []byte("v"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	c.kill(0)
	if !refuses(c.addr(0)) {
		t.Fatalf("port %s still accepts after the server was killed", c.addr(0))
	}
	if s = c.start(0); daemonPID(t, s) != pid {
		t.Fatalf("the restarted server has daemon pid %d, want %d (the cluster's state)", daemonPID(t, s), pid)
	}
	again, _ := zkClient(t, c.addrs())
	if b, _, err := again.Get("/kept"); err != nil || string(b) != "v" {
		t.Fatalf("after the restart: Get(/kept) = %q, %v", b, err)
	}
	again.Close()
	c.kill(0)
	if err := os.RemoveAll(c.dirs[0]); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid, "the daemon of a cluster whose servers are gone and dataDirs removed")
}

// TestZKServerLinger: a daemon whose servers are all gone, dataDirs still there, exits after ZKMODEL_LINGER.
func TestZKServerLinger(t *testing.T) {
	c := newCluster(t, 1, "")
	c.env = append(c.env, "ZKMODEL_LINGER=300ms")
	pid := daemonPID(t, c.start(0))
	c.kill(0)
	waitGone(t, pid, "the daemon after its linger time")
}

// TestZKServerBackground: start, status and stop, as zkServer.sh prints them.
func TestZKServerBackground(t *testing.T) {
	c := newCluster(t, 1, "")
	if out, code := c.run("start", c.cfgs[0]); code != 0 || !strings.Contains(out, "STARTED") {
		t.Fatalf("start: exit %d:\n%s", code, out)
	}
	if out, code := c.run("status", c.cfgs[0]); code != 0 || !strings.Contains(out, "Mode: standalone") {
		t.Fatalf("status of a running server: exit %d:\n%s", code, out)
	}
	if out, code := c.run("start", c.cfgs[0]); code != 1 || !strings.Contains(out, "already running") {
		t.Fatalf("start twice: exit %d:\n%s", code, out)
	}
	if out, code := c.run("stop", c.cfgs[0]); code != 0 || !strings.Contains(out, "STOPPED") {
		t.Fatalf("stop: exit %d:\n%s", code, out)
	}
	if !refuses(c.addr(0)) {
		t.Fatalf("port %s still accepts after stop", c.addr(0))
	}
	if out, code := c.run("status", c.cfgs[0]); code != 1 || !strings.Contains(out, "probably not running") {
		t.Fatalf("status of a stopped server: exit %d:\n%s", code, out)
	}
	if out, code := c.run("stop", c.cfgs[0]); code != 0 || !strings.Contains(out, "no zookeeper to stop") {
		t.Fatalf("stop twice: exit %d:\n%s", code, out)
	}
}

// TestZKServerBadConfig: a configuration the stand-in cannot run is refused with exit status 2 and a message
// that names the file (and line) and what to fix, before anything starts.
func TestZKServerBadConfig(t *testing.T) {
	c := newCluster(t, 3, "")
	write := func(name, text string) string {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	noMyID := t.TempDir()
	cases := []struct{ name, cfg, want string }{
		{"missing file", filepath.Join(t.TempDir(), "nope.cfg"), "does not exist"},
		{"no dataDir", write("a.cfg", "clientPort=2181\n"), "dataDir is not set"},
		{"bad port", write("b.cfg", "dataDir=/tmp/x\nclientPort=http\n"), "b.cfg:2: clientPort"},
		{"bad server line", write("c.cfg", "dataDir=/tmp/x\nclientPort=2181\nserver.1=127.0.0.1:2888\nserver.2=127.0.0.1:2889:3889\n"), "c.cfg:3: server.1"},
		{"no myid", write("d.cfg", "dataDir="+noMyID+"\nclientPort=2181\ninitLimit=10\nsyncLimit=5\nserver.1=127.0.0.1:2888:3888\nserver.2=127.0.0.1:2889:3889\n"), "myid"},
		{"bad jvm flag", c.cfgs[0], "znode.container.checkIntervalMs"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := c.env
			if tc.name == "bad jvm flag" {
				c.env = append(c.env, "JVMFLAGS=-Dznode.container.checkIntervalMs=soon")
				defer func() { c.env = env }()
			}
			out, code := c.run("start-foreground", tc.cfg)
			if code != 2 || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d, want 2 and a message with %q:\n%s", code, tc.want, out)
			}
		})
	}
	if entries, _ := os.ReadDir(c.rundir); len(entries) > 0 {
		t.Fatalf("a refused configuration started something: %v in %s", entries, c.rundir)
	}
}

// TestZKServerSessionTimeouts: minSessionTimeout and maxSessionTimeout in zoo.cfg bound the timeouts the
// stand-in negotiates, as they bound a real server's, and conf shows them; a minimum above the maximum is
// refused.
func TestZKServerSessionTimeouts(t *testing.T) {
	c := newCluster(t, 1, "", "minSessionTimeout=1500", "maxSessionTimeout=30000") // tickTime 500: defaults 1 s and 10 s
	c.start(0)
	if conf := askWord(t, c.addr(0), "conf", false); !strings.Contains(conf, "minSessionTimeout=1500\nmaxSessionTimeout=30000\n") {
		t.Errorf("conf does not show the configured bounds:\n%s", conf)
	}
	for _, tc := range []struct{ ask, want time.Duration }{{25 * time.Second, 25 * time.Second}, {time.Hour, 30 * time.Second}, {time.Second, 1500 * time.Millisecond}} {
		conn, _, err := zk.Connect(c.addrs(), tc.ask, zk.WithLogInfo(false), zk.WithLogger(quietLogger{}))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Sync("/"); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("sid=%#x,", conn.SessionID())
		var line string
		for _, l := range strings.Split(askWord(t, c.addr(0), "cons", false), "\n") {
			if strings.Contains(l, want) {
				line = l
			}
		}
		if !strings.Contains(line, fmt.Sprintf(",to=%d,", tc.want.Milliseconds())) {
			t.Errorf("asking %v: cons shows %q, want to=%d", tc.ask, line, tc.want.Milliseconds())
		}
		conn.Close()
	}
	bad := newCluster(t, 1, "", "minSessionTimeout=9000", "maxSessionTimeout=2000")
	if out, code := bad.run("start-foreground", bad.cfgs[0]); code != 2 || !strings.Contains(out, "minSessionTimeout (9s) must not be larger than maxSessionTimeout (2s)") {
		t.Errorf("start-foreground with minSessionTimeout above maxSessionTimeout: exit %d, %q", code, out)
	}
}

// TestZKServerWhitelist: a standard zoo.cfg's 4lw.commands.whitelist=srvr reaches the stand-in's server, as it
// reaches a real one: srvr is answered, ruok and mntr get 3.8's refusal, and a zoo.cfg without the line gets
// 3.8's default (srvr alone) too.
func TestZKServerWhitelist(t *testing.T) {
	for _, extra := range [][]string{{"4lw.commands.whitelist=srvr"}, nil} {
		c := newCluster(t, 1, "", extra...)
		if extra == nil { // newCluster allows every word: write the zoo.cfg without the line
			raw, err := os.ReadFile(c.cfgs[0])
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(c.cfgs[0], []byte(strings.ReplaceAll(string(raw), "4lw.commands.whitelist=*\n", "")), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		c.start(0)
		if got := askWord(t, c.addr(0), "srvr", false); !strings.Contains(got, "Mode: standalone\n") {
			t.Errorf("%q: srvr answered %q", extra, got)
		}
		for _, word := range []string{"ruok", "mntr"} {
			if got, want := askWord(t, c.addr(0), word, false), word+" is not executed because it is not in the whitelist.\n"; got != want {
				t.Errorf("%q: %s answered %q, want %q", extra, word, got, want)
			}
		}
	}
}
