package realzk

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// testContext returns a context that ends with the test or after limit.
func testContext(t testing.TB, limit time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	t.Cleanup(cancel)
	return ctx
}

// sleep waits d or until ctx is done, whichever comes first.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// connect opens a go-zookeeper client to addrs, waits for its session and
// closes it at the end of the test.
func connect(t testing.TB, addrs []string, sessionTimeout time.Duration) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	conn, events, err := zk.Connect(addrs, sessionTimeout, zk.WithLogInfo(false), zk.WithLogger(testLogger{t}))
	if err != nil {
		t.Fatalf("connect to %v: %v", addrs, err)
	}
	t.Cleanup(conn.Close)
	waitState(t, events, zk.StateHasSession, 20*time.Second)
	return conn, events
}

// testLogger sends go-zookeeper's log lines to the test log.
type testLogger struct{ t testing.TB }

func (l testLogger) Printf(format string, args ...any) { l.t.Logf("zk: "+format, args...) }

// waitState reads session events until one has state want.
func waitState(t testing.TB, events <-chan zk.Event, want zk.State, limit time.Duration) {
	t.Helper()
	deadline := time.After(limit)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("event channel closed while waiting for %v", want)
			}
			if ev.Type == zk.EventSession && ev.State == want {
				return
			}
		case <-deadline:
			t.Fatalf("no %v event within %v", want, limit)
		}
	}
}

// testPath returns a znode path unique to the test, created (persistent)
// and removed with its children at the end of the test.
func testPath(t testing.TB, conn *zk.Conn) string {
	t.Helper()
	path := "/" + strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	if _, err := conn.Create(path, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatalf("create %s: %v", path, err)
	}
	t.Cleanup(func() { deleteTree(t, conn, path) })
	return path
}

func deleteTree(t testing.TB, conn *zk.Conn, path string) {
	children, _, err := conn.Children(path)
	if err != nil {
		return
	}
	for _, child := range children {
		deleteTree(t, conn, path+"/"+child)
	}
	_ = conn.Delete(path, -1)
}

func TestEnsembleServesClients(t *testing.T) {
	e := Shared(t)
	ctx := testContext(t, 30*time.Second)
	if got := len(e.Addrs()); got != DefaultServers {
		t.Fatalf("Addrs() has %d servers, want %d", got, DefaultServers)
	}
	if !e.Harness() {
		t.Fatalf("Harness() = false for a started ensemble")
	}
	leader, err := e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var modes []string
	for i := range e.Servers() {
		mode, err := e.Mode(ctx, i)
		if err != nil {
			t.Fatal(err)
		}
		modes = append(modes, mode)
		if want := map[bool]string{true: ModeLeader, false: ModeFollower}[i == leader]; mode != want {
			t.Errorf("server %d: mode %q, want %q (leader is %d)", i, mode, want, leader)
		}
	}
	t.Logf("modes: %v", modes)

	// Each server serves its own clients, and a write through one is read
	// through every other (after sync).
	writer, _ := connect(t, e.Addrs()[:1], 2*time.Second)
	path := testPath(t, writer)
	if _, err := writer.Create(path+"/x", []byte("hello"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	for i, addr := range e.Addrs() {
		reader, _ := connect(t, []string{addr}, 2*time.Second)
		if _, err := reader.Sync(path + "/x"); err != nil {
			t.Fatalf("server %d: sync: %v", i, err)
		}
		data, _, err := reader.Get(path + "/x")
		if err != nil || string(data) != "hello" {
			t.Fatalf("server %d: Get = %q, %v; want \"hello\"", i, data, err)
		}
	}

	// The four-letter words are all allowed.
	mntr, err := FourLetter(ctx, e.Addrs()[leader], "mntr")
	if err != nil || !strings.Contains(mntr, "zk_server_state\tleader") {
		t.Fatalf("mntr on the leader = %q, %v", mntr, err)
	}
}

func TestSessionTimeoutBounds(t *testing.T) {
	e := Shared(t)
	for _, tc := range []struct{ ask, want time.Duration }{
		{50 * time.Millisecond, DefaultMinSessionTimeout},
		{1500 * time.Millisecond, 1500 * time.Millisecond},
		{time.Minute, DefaultMaxSessionTimeout},
	} {
		conn, events, err := zk.Connect(e.Addrs(), tc.ask, zk.WithLogInfo(false))
		if err != nil {
			t.Fatal(err)
		}
		waitState(t, events, zk.StateHasSession, 20*time.Second)
		// go-zookeeper keeps the negotiated timeout private; the server's
		// "cons" lists it per connection as "to=<ms>".
		var cons string
		for i := range e.Servers() {
			out, err := FourLetter(t.Context(), e.Addrs()[i], "cons")
			if err != nil {
				t.Fatal(err)
			}
			cons += out
		}
		sid := fmt.Sprintf("sid=0x%x,", conn.SessionID())
		line := ""
		for l := range strings.SplitSeq(cons, "\n") {
			if strings.Contains(l, sid) {
				line = l
			}
		}
		conn.Close()
		if !strings.Contains(line, fmt.Sprintf("to=%d,", tc.want.Milliseconds())) {
			t.Errorf("asked for %v: want negotiated %v; cons line for %s: %q", tc.ask, tc.want, sid, line)
		}
	}
}

func TestKillAndRestartLeader(t *testing.T) {
	e := Shared(t)
	ctx := testContext(t, 60*time.Second)
	oldLeader, err := e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Kill(oldLeader); err != nil {
		t.Fatal(err)
	}
	if e.Running(oldLeader) {
		t.Fatalf("server %d still running after Kill", oldLeader)
	}
	if err := e.Kill(oldLeader); err == nil {
		t.Fatalf("second Kill(%d) succeeded; want an error saying it is not running", oldLeader)
	}
	newLeader, err := e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if newLeader == oldLeader {
		t.Fatalf("Leader() = %d, the killed server", newLeader)
	}
	if err := e.WaitQuorum(ctx); err != nil {
		t.Fatal(err)
	}

	// The two survivors form a quorum and take writes.
	var survivors []string
	for i, addr := range e.Addrs() {
		if i != oldLeader {
			survivors = append(survivors, addr)
		}
	}
	conn, _ := connect(t, survivors, 2*time.Second)
	path := testPath(t, conn)
	if _, err := conn.Create(path+"/while-down", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	if err := e.Restart(ctx, newLeader); err == nil {
		t.Fatalf("Restart of running server %d succeeded; want an error", newLeader)
	}
	if err := e.Restart(ctx, oldLeader); err != nil {
		t.Fatal(err)
	}
	if mode, err := e.Mode(ctx, oldLeader); err != nil || mode != ModeFollower {
		t.Fatalf("restarted old leader: mode %q, %v; want follower", mode, err)
	}
	// It caught up with what was written while it was down.
	rejoined, _ := connect(t, e.Addrs()[oldLeader:oldLeader+1], 2*time.Second)
	if ok, _, err := rejoined.Exists(path + "/while-down"); err != nil || !ok {
		t.Fatalf("restarted server: Exists(%s/while-down) = %v, %v; want true", path, ok, err)
	}
	if !strings.Contains(e.Logs(oldLeader), "=== realzk: starting server") {
		t.Errorf("Logs(%d) lacks the harness's start marker", oldLeader)
	}
}

func TestQuorumLossIsReported(t *testing.T) {
	e := ForTestWith(t, Config{Servers: 3})
	ctx := testContext(t, 60*time.Second)
	for _, i := range []int{0, 1} {
		if err := e.Kill(i); err != nil {
			t.Fatal(err)
		}
	}
	err := e.WaitQuorum(ctx)
	if err == nil || !strings.Contains(err.Error(), "quorum needs 2") {
		t.Fatalf("WaitQuorum with 1 of 3 servers = %v; want an error saying a quorum needs 2", err)
	}
	if err := e.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range e.Servers() {
		if !e.Running(i) {
			t.Errorf("server %d not running after Heal", i)
		}
	}
}

func TestCloseLeavesNothing(t *testing.T) {
	ctx := testContext(t, 60*time.Second)
	e, err := Start(ctx, Config{Servers: 1})
	if err != nil {
		t.Fatal(err)
	}
	pids, dir := e.pids(), e.Dir()
	if len(pids) != 1 {
		t.Fatalf("pids() = %v, want one JVM", pids)
	}
	if mode, err := e.Mode(ctx, 0); err != nil || mode != ModeStandalone {
		t.Fatalf("one server: mode %q, %v; want standalone", mode, err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if processAlive(pid) {
			t.Errorf("JVM %d still alive after Close", pid)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ensemble directory %s still there after Close (stat: %v)", dir, err)
	}
	if err := e.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
	if err := e.Restart(ctx, 0); err == nil {
		t.Errorf("Restart after Close succeeded")
	}
}

func TestBadConfigIsRejected(t *testing.T) {
	ctx := testContext(t, 10*time.Second)
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no java", Config{Java: "/nonexistent/java"}, "java \"/nonexistent/java\" not found"},
		{"no jar", Config{ClassPath: []string{"/nonexistent/zookeeper.jar"}}, "make zookeeper"},
		{"servers", Config{Servers: 12}, "Servers=12"},
		{"tick", Config{TickTime: time.Millisecond}, "TickTime"},
		{"session bounds", Config{MinSessionTimeout: time.Second, MaxSessionTimeout: 500 * time.Millisecond}, "MaxSessionTimeout"},
		{"bad address", Config{Addrs: []string{"localhost"}}, "want host:port"},
		{"property key", Config{SystemProperties: map[string]string{"a=b": "c"}}, "SystemProperties"},
		{"config value", Config{ExtraConfig: map[string]string{"k": "v\nclientPort=1"}}, "one-line value"},
		{"harness key", Config{ExtraConfig: map[string]string{"clientPort": "1"}}, "the harness sets this key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Start(ctx, tc.cfg)
			if err == nil {
				e.Close()
				t.Fatalf("Start succeeded; want an error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Start error %q; want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestAttachedEnsemble(t *testing.T) {
	harness := Shared(t)
	ctx := testContext(t, 30*time.Second)
	t.Setenv(EnvServers, harness.ConnectString())
	e := ForTest(t)
	if e.Harness() {
		t.Fatalf("ForTest with ZK_SERVERS set started its own ensemble")
	}
	if !slices.Equal(e.Addrs(), harness.Addrs()) {
		t.Fatalf("Addrs() = %v, want ZK_SERVERS %v", e.Addrs(), harness.Addrs())
	}
	if err := e.WaitQuorum(ctx); err != nil {
		t.Fatal(err)
	}
	want, err := harness.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := e.Leader(ctx); err != nil || got != want {
		t.Fatalf("attached Leader() = %d, %v; want %d", got, err, want)
	}
	if err := e.Kill(0); !errors.Is(err, ErrNotHarness) {
		t.Errorf("attached Kill = %v, want ErrNotHarness", err)
	}
	if err := e.Restart(ctx, 0); !errors.Is(err, ErrNotHarness) {
		t.Errorf("attached Restart = %v, want ErrNotHarness", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitQuorum(ctx); err != nil {
		t.Fatalf("closing the attached ensemble hurt the real one: %v", err)
	}
}

func TestUnreachableEnsembleIsNamed(t *testing.T) {
	ctx := testContext(t, 10*time.Second)
	ports, err := freePorts(1) // free, so nothing listens there
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	t.Setenv(EnvServers, addr)
	addrs, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	_, err = Start(ctx, Config{Addrs: addrs})
	if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("Start on %s = %v; want an error naming the unreachable address", addr, err)
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv(EnvServers, "")
	if addrs, err := FromEnv(); addrs != nil || err != nil {
		t.Fatalf("FromEnv with ZK_SERVERS empty = %v, %v; want nil, nil", addrs, err)
	}
	t.Setenv(EnvServers, " 127.0.0.1:2181, zk2:2182 ,")
	addrs, err := FromEnv()
	if err != nil || !slices.Equal(addrs, []string{"127.0.0.1:2181", "zk2:2182"}) {
		t.Fatalf("FromEnv = %v, %v", addrs, err)
	}
	t.Setenv(EnvServers, "127.0.0.1:2181,zk2")
	if _, err := FromEnv(); err == nil || !strings.Contains(err.Error(), `"zk2"`) {
		t.Fatalf("FromEnv with a port-less entry = %v; want an error naming it", err)
	}
}

// TestOutOfHeapIsNamed fills a one-server ensemble with a small heap until it fails, and checks that the
// logs a failing test prints say the server ran out of heap, and what to raise.
func TestOutOfHeapIsNamed(t *testing.T) {
	ctx := testContext(t, 90*time.Second)
	e, err := Start(ctx, Config{Servers: 1, HeapMB: 24})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	conn, _ := connect(t, e.Addrs(), 5*time.Second)
	data := make([]byte, 1<<20-1024)
	created := 0
	for ; created < 100; created++ {
		if _, err = conn.Create(fmt.Sprintf("/big-%d", created), data, 0, zk.WorldACL(zk.PermAll)); err != nil {
			break
		}
	}
	if created == 100 {
		t.Fatalf("a 24 MiB heap held 100 nodes of 1 MiB; the test needs a server that runs out")
	}
	t.Logf("the server failed after %d creates of 1 MiB (%v)", created, err)
	for !strings.Contains(e.LogTails(1), "ran out of Java heap") {
		select {
		case <-ctx.Done():
			t.Fatalf("after %d creates of 1 MiB the log tails do not name the out-of-heap server:\n%s", created, e.LogTails(20))
		case <-time.After(100 * time.Millisecond):
		}
	}
	if tails := e.LogTails(1); !strings.Contains(tails, "-Xmx24m") || !strings.Contains(tails, "Config.HeapMB") {
		t.Errorf("the out-of-heap line does not give the heap and what to raise:\n%s", tails)
	}
}
