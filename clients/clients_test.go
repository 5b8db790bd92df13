package clients

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkmodel/zkmodel/internal/javaclients"
	"github.com/zkmodel/zkmodel/internal/pyclients"
	"github.com/zkmodel/zkmodel/model"
	"github.com/zkmodel/zkmodel/realzk"
)

// Contention of the lock scenarios: processes and acquisitions per process.
const (
	contenders = 3
	iterations = 5
)

// Where the clients come from: Debian's packages.
const (
	java        = javaclients.Java
	python      = pyclients.Python
	zkCli       = "/usr/share/zookeeper/bin/zkCli.sh"
	installHint = "install Debian's zookeeper, libcurator-recipes-java, python3-kazoo and python3-pure-sasl (make clientdeps)"
)

// kazooScript is the kazoo program, in its contend and hold modes.
var kazooScript = filepath.Join("python", "kazoo_lock.py")

// jvmHeap is the client JVMs' heap; jvmFlags make them start quickly too.
var (
	jvmHeap  = []string{"-Xmx64m"}
	jvmFlags = append(slices.Clone(javaclients.JVMFlags), jvmHeap...)
)

// scenarioTimeout bounds one client scenario on one target.
const scenarioTimeout = 90 * time.Second

// The real ZooKeeper the scenarios also run on: one standalone server for
// the package (or ZK_SERVERS), started on first use and closed by TestMain.
var real struct {
	once     sync.Once
	ensemble *realzk.Ensemble
	err      error
}

func TestMain(m *testing.M) {
	os.Setenv("PYTHONDONTWRITEBYTECODE", "1") // no __pycache__ in python/ from kazoo_session
	code := m.Run()
	if real.ensemble != nil {
		if err := real.ensemble.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "clients: close the real ensemble:", err)
			code = max(code, 1)
		}
	}
	if realSASL.ensemble != nil {
		if err := realSASL.ensemble.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "clients: close the real ensemble with SASL:", err)
			code = max(code, 1)
		}
	}
	if saslFiles.dir != "" {
		os.RemoveAll(saslFiles.dir)
	}
	if classes.dir != "" {
		os.RemoveAll(classes.dir)
	}
	os.Exit(code)
}

// target is a ZooKeeper the client programs connect to.
type target struct {
	name    string
	connect string        // host:port,… as the clients take it
	model   *model.Server // the model's server; nil for the real ZooKeeper
}

// realTarget returns the package's real ZooKeeper.
func realTarget(t *testing.T) target {
	t.Helper()
	real.once.Do(func() {
		cfg := realzk.Config{Servers: 1}
		cfg.Addrs, real.err = realzk.FromEnv()
		if real.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), realzk.StartTimeout)
		defer cancel()
		real.ensemble, real.err = realzk.Start(ctx, cfg)
	})
	if real.err != nil {
		t.Fatalf("real ZooKeeper: %v", real.err)
	}
	return target{name: "real", connect: real.ensemble.ConnectString()}
}

// targets returns the ZooKeepers every scenario runs on: the model first,
// then the real one.
func targets(t *testing.T) []target {
	return []target{modelTarget(t), realTarget(t)}
}

// quietLogger keeps go-zookeeper's reconnect chatter out of the test log.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// dialZK connects go-zookeeper to tg, for setting up and checking the tree.
func dialZK(t *testing.T, tg target) *zk.Conn {
	t.Helper()
	conn, events, err := zk.Connect(strings.Split(tg.connect, ","), 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(quietLogger{}))
	if err != nil {
		t.Fatalf("%s: connect %s: %v", tg.name, tg.connect, err)
	}
	t.Cleanup(conn.Close)
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return conn
			}
		case <-deadline:
			t.Fatalf("%s: no session from %s within 30s", tg.name, tg.connect)
		}
	}
}

// deleteTree removes path and everything under it, if it exists.
func deleteTree(conn *zk.Conn, path string) error {
	children, _, err := conn.Children(path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("children of %s: %w", path, err)
	}
	for _, c := range children {
		if err := deleteTree(conn, path+"/"+c); err != nil {
			return err
		}
	}
	if err := conn.Delete(path, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("delete %s: %w", path, err)
	}
	return nil
}

// The Java programs, compiled once per test binary.
var classes struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// curatorClassPath compiles the Java programs (java/*.java) and returns the
// class path to run them with.
func curatorClassPath(t *testing.T) string {
	t.Helper()
	classes.once.Do(func() {
		classes.dir, classes.err = os.MkdirTemp("", "clients-java-")
		if classes.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
		defer cancel()
		classes.path, classes.err = javaclients.Compile(ctx, classes.dir, filepath.Join("java", "LockContend.java"), filepath.Join("java", "CacheWatch.java"), filepath.Join("java", "SaslLogin.java"), filepath.Join("java", "LeaderElect.java"), filepath.Join("java", "SemaphoreLease.java"), filepath.Join("java", "ReadWriteContend.java"), filepath.Join("java", "TLSClient.java"))
	})
	if classes.err != nil {
		t.Fatalf("Curator contender: %v", classes.err)
	}
	return classes.path
}

// acquisition is one "acquired …" line of a contender.
type acquisition struct {
	id      string
	iter    int
	node    string
	seq     int
	counter int
}

var acquiredLine = regexp.MustCompile(`^acquired id=(\S+) iter=(\d+) node=(\S+) counter=(\d+)$`)

// lockScenario describes one lock recipe's contender program.
type lockScenario struct {
	// command returns the contender process for id on connect under root.
	command func(ctx context.Context, connect, id, root string) *exec.Cmd
	// nodeName matches the recipe's lock node names; its last group is the
	// sequence number.
	nodeName *regexp.Regexp
	// sameNodePrefix: the recipe reuses one name prefix for all of one
	// client's lock nodes (kazoo) rather than a fresh one each time (Curator).
	sameNodePrefix bool
	// iterations is how often each contender acquires: iterations when 0;
	// 1 for an election, where each candidate leads once.
	iterations int
}

// freshRoot connects to tg and makes root afresh (removing what is there),
// with the given children; a child named counter holds "0".
func freshRoot(t *testing.T, tg target, root string, children ...string) *zk.Conn {
	t.Helper()
	conn := dialZK(t, tg)
	if err := deleteTree(conn, root); err != nil {
		t.Fatalf("%s: %v", tg.name, err)
	}
	paths := []string{root}
	for _, c := range children {
		paths = append(paths, root+"/"+c)
	}
	for _, p := range paths {
		var data []byte
		if strings.HasSuffix(p, "/counter") {
			data = []byte("0")
		}
		if _, err := conn.Create(p, data, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("%s: create %s: %v", tg.name, p, err)
		}
	}
	return conn
}

// contenderRun is one contender process that ran to its end.
type contenderRun struct {
	id             string // A, B, …
	stdout, stderr bytes.Buffer
	err            error
}

// runContenders starts n contender processes, command(ctx, id) with ids A,
// B, …, and waits for all of them. Before starting the i-th it calls
// before(i) when before is not nil, which may wait for what the ones already
// started have done (failing the test stops those: their context ends). It
// fails the test (after all have ended) when a contender does not exit 0,
// and returns them in id order.
func runContenders(t *testing.T, tg target, n int, before func(i int), command func(ctx context.Context, id string) *exec.Cmd) []*contenderRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	results := make([]*contenderRun, n)
	var wg sync.WaitGroup
	for i := range results {
		r := &contenderRun{id: string(rune('A' + i))}
		results[i] = r
		if before != nil {
			before(i)
		}
		cmd := command(ctx, r.id)
		cmd.Stdout, cmd.Stderr = &r.stdout, &r.stderr
		if err := cmd.Start(); err != nil {
			cancel()
			wg.Wait()
			t.Fatalf("%s: start contender %s: %v (%s)", tg.name, r.id, err, installHint)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.err = cmd.Wait()
		}()
	}
	wg.Wait()
	for _, r := range results {
		if r.err != nil {
			t.Errorf("%s: contender %s: %v\nstdout:\n%s\nstderr:\n%s", tg.name, r.id, r.err, r.stdout.String(), r.stderr.String())
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	return results
}

// runLock runs the contenders on tg under root and checks what any correct
// lock must give: every process exits 0; every acquisition saw no other
// holder and an up-to-date counter; the lock nodes are named as the recipe
// names them; holders come in the order of their sequence numbers (both
// recipes are fair), so acquisition i holds sequence number i; nothing is
// left behind. It returns the outcome with the random parts (ids, uuids)
// taken out, for comparing targets.
func runLock(t *testing.T, tg target, sc lockScenario, root string) string {
	t.Helper()
	each := cmp.Or(sc.iterations, iterations)
	conn := freshRoot(t, tg, root, "counter")
	results := runContenders(t, tg, contenders, nil, func(ctx context.Context, id string) *exec.Cmd {
		return sc.command(ctx, tg.connect, id, root)
	})

	var acquired []acquisition
	for _, r := range results {
		var mine []acquisition
		for line := range strings.Lines(r.stdout.String()) {
			line = strings.TrimRight(line, "\n")
			m := acquiredLine.FindStringSubmatch(line)
			if m == nil {
				t.Errorf("%s: contender %s printed %q, want only acquired lines", tg.name, r.id, line)
				continue
			}
			a := acquisition{id: m[1], node: m[3]}
			a.iter, _ = strconv.Atoi(m[2])
			a.counter, _ = strconv.Atoi(m[4])
			nm := sc.nodeName.FindStringSubmatch(a.node)
			if nm == nil {
				t.Errorf("%s: contender %s held lock node %q, want a name matching %s", tg.name, r.id, a.node, sc.nodeName)
				continue
			}
			a.seq, _ = strconv.Atoi(nm[len(nm)-1])
			mine = append(mine, a)
		}
		if len(mine) != each {
			t.Errorf("%s: contender %s acquired %d times, want %d:\n%s", tg.name, r.id, len(mine), each, r.stdout.String())
		}
		for i, a := range mine {
			if a.id != r.id || a.iter != i {
				t.Errorf("%s: contender %s line %d is %+v, want id=%s iter=%d", tg.name, r.id, i, a, r.id, i)
			}
			prefix := func(a acquisition) string { return strings.TrimSuffix(a.node, fmt.Sprintf("%010d", a.seq)) }
			if i > 0 && (prefix(a) == prefix(mine[0])) != sc.sameNodePrefix {
				t.Errorf("%s: contender %s lock nodes %s and %s: same prefix=%v, want %v", tg.name, r.id, mine[0].node, a.node, !sc.sameNodePrefix, sc.sameNodePrefix)
			}
		}
		acquired = append(acquired, mine...)
	}
	if t.Failed() {
		t.FailNow()
	}

	slices.SortFunc(acquired, func(a, b acquisition) int { return a.counter - b.counter })
	var outcome strings.Builder
	outcome.WriteString("holders' sequence numbers, in the order they held the lock:")
	for i, a := range acquired {
		if a.counter != i {
			t.Errorf("%s: acquisition %d saw counter=%d (%+v): two holders at once, or a lost update", tg.name, i, a.counter, a)
		}
		if a.seq != a.counter {
			t.Errorf("%s: holder %s of lock node %s (sequence %d) came %d-th: want holders in sequence order", tg.name, a.id, a.node, a.seq, a.counter)
		}
		fmt.Fprintf(&outcome, " %d", a.seq)
	}
	outcome.WriteString("\n")

	checkCounter(t, tg, conn, root, contenders*each, &outcome)
	leftBehind(t, tg, conn, root, &outcome, "lock")
	return outcome.String()
}

// checkCounter checks, at a scenario's end, that root/counter is want and
// root/holder is gone, and adds the counter to outcome.
func checkCounter(t *testing.T, tg target, conn *zk.Conn, root string, want int, outcome *strings.Builder) {
	t.Helper()
	data, _, err := conn.Get(root + "/counter")
	if err != nil {
		t.Fatalf("%s: get counter: %v", tg.name, err)
	}
	fmt.Fprintf(outcome, "counter %s\n", data)
	if string(data) != strconv.Itoa(want) {
		t.Errorf("%s: counter %s at the end, want %d", tg.name, data, want)
	}
	if ok, _, err := conn.Exists(root + "/holder"); err != nil || ok {
		t.Errorf("%s: %s/holder left behind (exists=%v, err=%v)", tg.name, root, ok, err)
	}
}

// leftBehind checks, at a scenario's end, that the dirs under root have no
// children, and adds how many each has to outcome. A dir may be gone:
// Curator makes its recipes' nodes containers, which the server removes.
func leftBehind(t *testing.T, tg target, conn *zk.Conn, root string, outcome *strings.Builder, dirs ...string) {
	t.Helper()
	for _, dir := range dirs {
		left, _, err := conn.Children(root + "/" + dir)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			t.Errorf("%s: children of %s/%s: %v", tg.name, root, dir, err)
		}
		if len(left) > 0 {
			t.Errorf("%s: left behind in %s/%s: %v", tg.name, root, dir, left)
		}
		fmt.Fprintf(outcome, "%s: %d left\n", dir, len(left))
	}
}

// curatorProtected is how Curator's protected nodes begin: "_c_", a
// random UUID and "-"; the recipe's name and sequence number follow.
const curatorProtected = `^_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-`

// curatorCommand returns the JVM running class (one of java/*.java, on
// class path cp) with args.
func curatorCommand(ctx context.Context, cp, class string, args ...string) *exec.Cmd {
	return javaclients.Command(ctx, cp, class, jvmHeap, args...)
}

// kazooCommand returns python/kazoo_lock.py in mode with args.
func kazooCommand(ctx context.Context, mode string, args ...string) *exec.Cmd {
	return pyclients.Command(ctx, kazooScript, append([]string{mode}, args...)...)
}

// needKazoo fails t unless Debian's python imports kazoo's module.
func needKazoo(t *testing.T, module string) {
	t.Helper()
	if err := pyclients.Check(t.Context(), module); err != nil {
		t.Fatalf("%v (%s)", err, installHint)
	}
}

// sameOutcome runs scenario on every target and fails when the normalised
// outcomes differ.
func sameOutcome(t *testing.T, scenario func(t *testing.T, tg target) string) {
	t.Helper()
	var first target
	var want string
	for i, tg := range targets(t) {
		got := scenario(t, tg)
		t.Logf("%s (%s):\n%s", tg.name, tg.connect, got)
		if t.Failed() {
			return
		}
		if i == 0 {
			first, want = tg, got
			continue
		}
		if got != want {
			t.Errorf("outcome on %s differs from %s:\n--- %s\n%s--- %s\n%s", tg.name, first.name, first.name, want, tg.name, got)
		}
	}
}

// TestCuratorMutex: Curator 5.4's InterProcessMutex in separate JVMs.
func TestCuratorMutex(t *testing.T) {
	cp := curatorClassPath(t)
	sc := lockScenario{
		command: func(ctx context.Context, connect, id, root string) *exec.Cmd {
			return curatorCommand(ctx, cp, "LockContend", connect, id, strconv.Itoa(iterations), root)
		},
		nodeName: regexp.MustCompile(curatorProtected + `lock-([0-9]{10})$`),
	}
	sameOutcome(t, func(t *testing.T, tg target) string { return runLock(t, tg, sc, "/curator-mutex") })
}

// TestKazooLock: kazoo 2.8's Lock in separate Python processes.
func TestKazooLock(t *testing.T) {
	needKazoo(t, "kazoo.recipe.lock")
	sc := lockScenario{
		command: func(ctx context.Context, connect, id, root string) *exec.Cmd {
			return kazooCommand(ctx, "contend", connect, id, strconv.Itoa(iterations), root)
		},
		nodeName:       kazooLockNode,
		sameNodePrefix: true,
	}
	sameOutcome(t, func(t *testing.T, tg target) string { return runLock(t, tg, sc, "/kazoo-lock") })
}

// curatorLatchNode and kazooLockNode are the names Curator's LeaderLatch and
// kazoo's Lock (and so its Election) give their nodes, as measured on
// ZooKeeper 3.8; the group is the sequence number.
var (
	curatorLatchNode = regexp.MustCompile(curatorProtected + `latch-([0-9]{10})$`)
	kazooLockNode    = regexp.MustCompile(`^[0-9a-f]{32}__lock__([0-9]{10})$`)
)

// TestCuratorLeaderLatch: Curator 5.4's LeaderLatch, one candidate a JVM
// (java/LeaderElect.java), each leading once and then closing its latch:
// one leader at a time, every candidate leads exactly once, in the order of
// the latch nodes' sequence numbers, and nothing is left behind — the same
// on the model as on ZooKeeper.
func TestCuratorLeaderLatch(t *testing.T) {
	cp := curatorClassPath(t)
	sc := lockScenario{
		command: func(ctx context.Context, connect, id, root string) *exec.Cmd {
			return curatorCommand(ctx, cp, "LeaderElect", connect, id, root)
		},
		nodeName:   curatorLatchNode,
		iterations: 1,
	}
	sameOutcome(t, func(t *testing.T, tg target) string { return runLock(t, tg, sc, "/curator-latch") })
}

// TestKazooElection: kazoo 2.8's Election, one candidate a Python process
// (python/kazoo_lock.py elect), each leading once and then leaving: the
// same checks as TestCuratorLeaderLatch.
func TestKazooElection(t *testing.T) {
	needKazoo(t, "kazoo.recipe.election")
	sc := lockScenario{
		command: func(ctx context.Context, connect, id, root string) *exec.Cmd {
			return kazooCommand(ctx, "elect", connect, id, root)
		},
		nodeName:   kazooLockNode,
		iterations: 1,
	}
	sameOutcome(t, func(t *testing.T, tg target) string { return runLock(t, tg, sc, "/kazoo-election") })
}

// What zkCli.sh prints for zkcli/script.txt, normalised.
type cliOutcome struct {
	exitCode int
	stdout   []string // without blank lines, WATCHER:: markers and events
	events   []string // WatchedEvent lines, in order
	stderr   []string // without SLF4J's notices
}

// closedEvent is what zkCli prints when its session is closed.
const closedEvent = "WatchedEvent state:Closed type:None path:null"

var (
	stampLine = regexp.MustCompile(`^(cZxid|mZxid|pZxid|ctime|mtime) = .*$`)
	eventLine = regexp.MustCompile(`^WatchedEvent state:\S+ type:\S+ path:\S+$`)
)

// cliSession is a running zkCli.sh that the test feeds commands to.
type cliSession struct {
	*process
	tg target
}

// startZkCli starts zkCli.sh connected to server (tg's address, or a proxy
// in front of it), with root removed from tg first.
func startZkCli(t *testing.T, tg target, server string, root string) *cliSession {
	t.Helper()
	if _, err := os.Stat(zkCli); err != nil {
		t.Fatalf("%s missing: %s", zkCli, installHint)
	}
	if err := deleteTree(dialZK(t, tg), root); err != nil {
		t.Fatalf("%s: %v", tg.name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, zkCli, "-server", server)
	cmd.Env = append(os.Environ(), "CLIENT_JVMFLAGS="+strings.Join(jvmFlags, " "), "ZOO_LOG_DIR="+t.TempDir())
	return &cliSession{process: startProcess(t, tg.name+": zkCli.sh", cmd), tg: tg}
}

// outcome closes zkCli's stdin, waits for it to exit and returns what it
// printed, normalised: zkCli prints watch events from its event thread, so
// they may interleave with the command output anywhere and are kept as
// their own sequence; zxids and times are replaced by <stamp>.
func (s *cliSession) outcome(t *testing.T) cliOutcome {
	t.Helper()
	err := s.process.finish()
	var out cliOutcome
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		out.exitCode = exit.ExitCode()
	case err != nil:
		t.Fatalf("%s: zkCli.sh: %v", s.tg.name, err)
	}
	for _, line := range s.lines {
		switch {
		case line == "" || line == "WATCHER::":
		case strings.HasPrefix(line, "Connecting to "):
		case eventLine.MatchString(line):
			out.events = append(out.events, line)
		case stampLine.MatchString(line):
			out.stdout = append(out.stdout, strings.SplitN(line, " = ", 2)[0]+" = <stamp>")
		default:
			out.stdout = append(out.stdout, line)
		}
	}
	// zkCli closes its session at the end of its input and exits the JVM at once; its event thread prints
	// the Closed event only if it gets there first (seen missing once in a dozen loaded runs, on the model
	// side), so that last event is not part of the outcome.
	if n := len(out.events); n > 0 && out.events[n-1] == closedEvent {
		out.events = out.events[:n-1]
	}
	for line := range strings.Lines(s.stderr.String()) {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "SLF4J:") {
			out.stderr = append(out.stderr, line)
		}
	}
	return out
}

// runZkCli pipes zkcli/script.txt into zkCli.sh connected to tg.
func runZkCli(t *testing.T, tg target) cliOutcome {
	t.Helper()
	script, err := os.ReadFile(filepath.Join("zkcli", "script.txt"))
	if err != nil {
		t.Fatal(err)
	}
	s := startZkCli(t, tg, tg.connect, "/zkcli")
	s.send(t, string(script))
	return s.outcome(t)
}

func (o cliOutcome) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n  %s\nevents:\n  %s\nstderr:\n  %s\n", o.exitCode,
		strings.Join(o.stdout, "\n  "), strings.Join(o.events, "\n  "), strings.Join(o.stderr, "\n  "))
}

// TestZkCli: zkCli.sh creates, lists, watches, sets and deletes; its
// output and watch events must be the same on the model as on ZooKeeper.
func TestZkCli(t *testing.T) {
	wantEvents := []string{
		"WatchedEvent state:SyncConnected type:None path:null",
		"WatchedEvent state:SyncConnected type:NodeChildrenChanged path:/zkcli",
		"WatchedEvent state:SyncConnected type:NodeDataChanged path:/zkcli/a",
	}
	sameOutcome(t, func(t *testing.T, tg target) string {
		out := runZkCli(t, tg)
		if !slices.Equal(out.events, wantEvents) {
			t.Errorf("%s: zkCli's watch events:\n  %s\nwant:\n  %s", tg.name, strings.Join(out.events, "\n  "), strings.Join(wantEvents, "\n  "))
		}
		if !slices.Contains(out.stderr, "Created /zkcli/seq-0000000002") || !slices.Contains(out.stdout, "[a, eph, seq-0000000001, seq-0000000002]") {
			t.Errorf("%s: zkCli did not create and list the sequential nodes:\n%s", tg.name, out)
		}
		return out.String()
	})
}

// TestZkCliReconnect: zkCli.sh sets a child and a data watch, its TCP
// connection is severed (a proxy in front of the server closes it), the
// client reconnects and re-registers the watches (setWatches), and later
// changes fire them — the same on the model as on ZooKeeper.
func TestZkCliReconnect(t *testing.T) {
	const (
		connected    = "WatchedEvent state:SyncConnected type:None path:null"
		disconnected = "WatchedEvent state:Disconnected type:None path:null"
	)
	wantEvents := []string{
		connected,
		disconnected,
		connected,
		"WatchedEvent state:SyncConnected type:NodeChildrenChanged path:/zkre",
		"WatchedEvent state:SyncConnected type:NodeDataChanged path:/zkre",
		"WatchedEvent state:SyncConnected type:NodeCreated path:/zkre-later",
	}
	sameOutcome(t, func(t *testing.T, tg target) string {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		proxy, err := realzk.NewProxy(ctx, strings.Split(tg.connect, ",")[0])
		if err != nil {
			t.Fatalf("%s: proxy: %v", tg.name, err)
		}
		defer proxy.Close()
		if err := deleteTree(dialZK(t, tg), "/zkre-later"); err != nil {
			t.Fatal(err)
		}
		s := startZkCli(t, tg, proxy.Addr(), "/zkre")
		// The second "[]" (of the plain ls) shows every watch is set.
		s.send(t, "create /zkre\nls -w /zkre\nget -w /zkre\nstat -w /zkre-later\nls /zkre\n")
		s.waitFor(t, "[]", 2)
		if n := proxy.Sever(); n != 1 {
			t.Fatalf("%s: the proxy severed %d connections, want 1", tg.name, n)
		}
		s.waitFor(t, connected, 2)
		s.send(t, "create /zkre/c\nset /zkre v\ncreate /zkre-later\ndelete /zkre/c\ndelete /zkre\ndelete /zkre-later\nquit\n")
		out := s.outcome(t)
		if !slices.Equal(out.events, wantEvents) {
			t.Errorf("%s: zkCli's watch events:\n  %s\nwant:\n  %s", tg.name, strings.Join(out.events, "\n  "), strings.Join(wantEvents, "\n  "))
		}
		return out.String()
	})
}
