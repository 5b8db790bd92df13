package realzk

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults of Config.
const (
	DefaultServers           = 3
	DefaultTickTime          = 100 * time.Millisecond
	DefaultMinSessionTimeout = 2 * DefaultTickTime // ZooKeeper's own rule: 2 ticks
	DefaultMaxSessionTimeout = 20 * time.Second
	DefaultHeapMB            = 512
	DefaultJava              = "/usr/bin/java"
)

// DefaultClassPath is the class path of Debian's zookeeper package:
// zookeeper.jar names the jars it needs in its manifest; slf4j-simple makes
// the server log to stderr, which the harness sends to a file per server.
var DefaultClassPath = []string{
	"/usr/share/java/zookeeper.jar",
	"/usr/share/java/slf4j-simple.jar",
}

// installHint ends every error about a missing Java or ZooKeeper.
const installHint = "install Debian's zookeeper package (make zookeeper), or set ZK_SERVERS=host:port,… to use a running ensemble"

// Config describes the ensemble Start brings up. The zero value is a
// 3-server ZooKeeper 3.8 ensemble with a 100 ms tick.
type Config struct {
	// Addrs, when set, makes Start attach to this running ensemble
	// (host:port client addresses) instead of starting servers. Such an
	// ensemble cannot be killed or restarted. See FromEnv.
	Addrs []string

	// Servers is the number of servers; 0 means DefaultServers. One server
	// runs in ZooKeeper's standalone mode.
	Servers int
	// TickTime is ZooKeeper's tickTime; 0 means DefaultTickTime. Sessions
	// expire in buckets of one tick.
	TickTime time.Duration
	// MinSessionTimeout and MaxSessionTimeout bound the session timeout the
	// servers negotiate: a client asking for less gets the minimum, one
	// asking for more the maximum. 0 means DefaultMinSessionTimeout (2
	// ticks) and DefaultMaxSessionTimeout (20 s).
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// HeapMB is each JVM's -Xmx in MiB; 0 means DefaultHeapMB. The heap grows only as it is used, but the
	// bound must leave room for the leader's committed log, which keeps the last 500 proposals with their
	// data: at 96 MiB a few creates of 1 MiB nodes (the conformance suite's size-limit rule) ran a server
	// out of heap, and its threads died mid-test.
	HeapMB int
	// Java is the java binary; "" means DefaultJava, then java on $PATH.
	Java string
	// ClassPath lists the jars to run; nil means DefaultClassPath.
	ClassPath []string
	// SystemProperties are passed to every server's JVM as -Dkey=value, in
	// key order: for example zookeeper.extendedTypesEnabled=true (TTL
	// nodes) or zookeeper.DigestAuthenticationProvider.superDigest=….
	// Keys must be non-empty and contain neither '=' nor whitespace.
	SystemProperties map[string]string
	// ExtraConfig is appended to every server's zoo.cfg, one key=value per
	// line, in key order: for example a shorter
	// znode.container.checkIntervalMs. The harness's own keys cannot be set
	// here.
	ExtraConfig map[string]string
	// FourLetterWords is every server's 4lw.commands.whitelist: comma-separated words, or "*" for all;
	// "" means "*". The harness itself needs srvr; ZooKeeper 3.8's own default is "srvr" alone.
	FourLetterWords string
	// Dir is where the ensemble's directory (realzk-*) is created; "" means
	// os.TempDir(). Stale directories of dead harness processes in it are
	// swept on Start.
	Dir string

	// noParentDeathSignal turns off Pdeathsig; only the teardown test uses
	// it, to leave an orphaned JVM for SweepStale to find.
	noParentDeathSignal bool
}

// withDefaults returns c with every zero field set to its default, or an
// error naming the first field that is out of range.
func (c Config) withDefaults() (Config, error) {
	if c.Servers == 0 {
		c.Servers = DefaultServers
	}
	if c.TickTime == 0 {
		c.TickTime = DefaultTickTime
	}
	if c.MinSessionTimeout == 0 {
		c.MinSessionTimeout = 2 * c.TickTime
	}
	if c.MaxSessionTimeout == 0 {
		c.MaxSessionTimeout = DefaultMaxSessionTimeout
	}
	if c.HeapMB == 0 {
		c.HeapMB = DefaultHeapMB
	}
	if c.ClassPath == nil {
		c.ClassPath = DefaultClassPath
	}
	switch {
	case c.Servers < 1 || c.Servers > 9:
		return c, fmt.Errorf("realzk config: Servers=%d: want 1 to 9", c.Servers)
	case c.TickTime < 10*time.Millisecond:
		return c, fmt.Errorf("realzk config: TickTime=%v: want at least 10ms", c.TickTime)
	case c.MinSessionTimeout < 2*c.TickTime:
		return c, fmt.Errorf("realzk config: MinSessionTimeout=%v: want at least 2 ticks (%v)", c.MinSessionTimeout, 2*c.TickTime)
	case c.MaxSessionTimeout < c.MinSessionTimeout:
		return c, fmt.Errorf("realzk config: MaxSessionTimeout=%v is below MinSessionTimeout=%v", c.MaxSessionTimeout, c.MinSessionTimeout)
	case strings.ContainsAny(c.FourLetterWords, "\r\n"):
		return c, fmt.Errorf("realzk config: FourLetterWords=%q: want one line, e.g. \"srvr,ruok\" or \"*\"", c.FourLetterWords)
	case c.HeapMB < 16:
		return c, fmt.Errorf("realzk config: HeapMB=%d: want at least 16", c.HeapMB)
	}
	for _, set := range []struct {
		name string
		m    map[string]string
	}{{"SystemProperties", c.SystemProperties}, {"ExtraConfig", c.ExtraConfig}} {
		for _, k := range slices.Sorted(maps.Keys(set.m)) {
			if k == "" || strings.ContainsAny(k, "= \t\r\n") || strings.ContainsAny(set.m[k], "\r\n") {
				return c, fmt.Errorf("realzk config: %s[%q]=%q: want a key without '=' or whitespace and a one-line value", set.name, k, set.m[k])
			}
			if set.name == "ExtraConfig" && harnessConfigKeys[k] {
				return c, fmt.Errorf("realzk config: ExtraConfig[%q]: the harness sets this key itself; use the Config field for it", k)
			}
		}
	}
	return c, nil
}

// harnessConfigKeys are the zoo.cfg keys writeServerFiles sets; ExtraConfig may not override them.
var harnessConfigKeys = map[string]bool{
	"tickTime": true, "initLimit": true, "syncLimit": true, "dataDir": true, "clientPort": true,
	"clientPortAddress": true, "minSessionTimeout": true, "maxSessionTimeout": true, "maxClientCnxns": true,
	"4lw.commands.whitelist": true, "admin.enableServer": true, "forceSync": true, "preAllocSize": true,
}

// server is one harness-started ZooKeeper server.
type server struct {
	myid         int // index + 1
	clientPort   int
	quorumPort   int
	electionPort int
	dataDir      string
	configPath   string
	logPath      string

	// Guarded by Ensemble.mu.
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd has been waited for
	killed bool          // the harness killed it (it did not exit on its own)
}

func (s *server) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.clientPort)) }

// running reports whether the server's JVM is up. Caller holds Ensemble.mu.
func (s *server) running() bool {
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// Ensemble is a ZooKeeper ensemble: one the harness started (and can kill,
// restart and tear down) or a running one it attached to (see Config.Addrs).
// Its methods are safe for concurrent use.
type Ensemble struct {
	cfg   Config
	java  string
	dir   string // "" for an attached ensemble
	addrs []string

	mu      sync.Mutex
	servers []*server // nil for an attached ensemble
	closed  bool
}

// ErrNotHarness is returned (wrapped) by the fault-injection methods of an
// ensemble the harness did not start.
var ErrNotHarness = errors.New("fault injection needs a harness-started ensemble: unset ZK_SERVERS (and leave Config.Addrs empty) so realzk starts its own servers")

// Start brings up the ensemble cfg describes and returns once it has a
// quorum: every server answers "srvr" with a mode and one of them leads.
// With cfg.Addrs set it instead checks that every address is reachable and
// returns an attached ensemble. On failure nothing is left running and the
// error carries the tail of the server logs.
func Start(ctx context.Context, cfg Config) (*Ensemble, error) {
	if len(cfg.Addrs) > 0 {
		return attach(ctx, cfg)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	java, err := findJava(cfg.Java)
	if err != nil {
		return nil, err
	}
	for _, jar := range cfg.ClassPath {
		if _, err := os.Stat(jar); err != nil {
			return nil, fmt.Errorf("ZooKeeper jar %s missing: %s", jar, installHint)
		}
	}
	if _, err := SweepStale(cfg.Dir); err != nil {
		return nil, fmt.Errorf("sweep stale ensembles: %w", err)
	}
	// Free ports are found by binding to port 0 and closing again, so another
	// process can grab one before the JVM binds it. That surfaces as "Address
	// already in use" in a server log; then try once more with fresh ports.
	e, err := startOnce(ctx, cfg, java)
	if err != nil && errors.Is(err, errPortTaken) {
		e, err = startOnce(ctx, cfg, java)
	}
	return e, err
}

var errPortTaken = errors.New("a port was taken by another process")

func startOnce(ctx context.Context, cfg Config, java string) (*Ensemble, error) {
	parent := cfg.Dir
	if parent == "" {
		parent = os.TempDir()
	}
	dir, err := os.MkdirTemp(parent, dirPrefix)
	if err != nil {
		return nil, fmt.Errorf("create ensemble directory: %w", err)
	}
	e := &Ensemble{cfg: cfg, java: java, dir: dir}
	if err := writeOwner(dir); err != nil {
		e.Close()
		return nil, err
	}
	ports, err := freePorts(3 * cfg.Servers)
	if err != nil {
		e.Close()
		return nil, err
	}
	for i := range cfg.Servers {
		s := &server{
			myid:         i + 1,
			clientPort:   ports[3*i],
			quorumPort:   ports[3*i+1],
			electionPort: ports[3*i+2],
			dataDir:      filepath.Join(dir, fmt.Sprintf("server%d", i+1)),
			configPath:   filepath.Join(dir, fmt.Sprintf("server%d.cfg", i+1)),
			logPath:      filepath.Join(dir, fmt.Sprintf("server%d.log", i+1)),
		}
		e.servers = append(e.servers, s)
		e.addrs = append(e.addrs, s.addr())
	}
	for _, s := range e.servers {
		if err := e.writeServerFiles(s); err != nil {
			e.Close()
			return nil, err
		}
	}
	e.mu.Lock()
	for i, s := range e.servers {
		if err := e.launch(s); err != nil {
			e.mu.Unlock()
			e.Close()
			return nil, fmt.Errorf("start server %d: %w", i, err)
		}
	}
	e.mu.Unlock()
	if err := e.WaitQuorum(ctx); err != nil {
		err = fmt.Errorf("start %d-server ensemble in %s: %w\n%s", cfg.Servers, dir, err, e.logTails(20))
		if e.portTaken() {
			err = fmt.Errorf("%w: %w", errPortTaken, err)
		}
		e.Close()
		return nil, err
	}
	return e, nil
}

func findJava(configured string) (string, error) {
	if configured != "" {
		if _, err := exec.LookPath(configured); err != nil {
			return "", fmt.Errorf("java %q not found: %w", configured, err)
		}
		return configured, nil
	}
	if _, err := os.Stat(DefaultJava); err == nil {
		return DefaultJava, nil
	}
	if path, err := exec.LookPath("java"); err == nil {
		return path, nil
	}
	return "", fmt.Errorf("java not found: %s", installHint)
}

// freePorts returns n distinct free TCP ports on 127.0.0.1. All listeners
// stay open until every port is picked, so the ports are distinct.
func freePorts(n int) ([]int, error) {
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// writeServerFiles writes s's data directory, myid and zoo.cfg.
func (e *Ensemble) writeServerFiles(s *server) error {
	if err := os.MkdirAll(s.dataDir, 0o755); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	if err := os.WriteFile(filepath.Join(s.dataDir, "myid"), []byte(strconv.Itoa(s.myid)+"\n"), 0o644); err != nil {
		return fmt.Errorf("write myid: %w", err)
	}
	tick := e.cfg.TickTime
	var b strings.Builder
	fmt.Fprintf(&b, "tickTime=%d\n", tick.Milliseconds())
	// A follower gets initLimit ticks to connect and sync and may lag
	// syncLimit ticks; both are generous so a loaded 2-core machine does not
	// drop followers.
	fmt.Fprintf(&b, "initLimit=%d\n", max(10, int((5*time.Second)/tick)))
	fmt.Fprintf(&b, "syncLimit=%d\n", max(5, int((2*time.Second)/tick)))
	fmt.Fprintf(&b, "dataDir=%s\n", s.dataDir)
	fmt.Fprintf(&b, "clientPort=%d\n", s.clientPort)
	b.WriteString("clientPortAddress=127.0.0.1\n")
	fmt.Fprintf(&b, "minSessionTimeout=%d\n", e.cfg.MinSessionTimeout.Milliseconds())
	fmt.Fprintf(&b, "maxSessionTimeout=%d\n", e.cfg.MaxSessionTimeout.Milliseconds())
	b.WriteString("maxClientCnxns=0\n")
	words := e.cfg.FourLetterWords
	if words == "" {
		words = "*"
	}
	fmt.Fprintf(&b, "4lw.commands.whitelist=%s\n", words)
	b.WriteString("admin.enableServer=false\n")
	// No fsync per transaction: a SIGKILLed JVM loses nothing the kernel
	// already has, and tests run much faster. 1 MiB log preallocation
	// instead of 64 MiB keeps the data directories small.
	b.WriteString("forceSync=no\n")
	b.WriteString("preAllocSize=1024\n")
	for _, k := range slices.Sorted(maps.Keys(e.cfg.ExtraConfig)) {
		fmt.Fprintf(&b, "%s=%s\n", k, e.cfg.ExtraConfig[k])
	}
	if len(e.servers) > 1 {
		for _, peer := range e.servers {
			fmt.Fprintf(&b, "server.%d=127.0.0.1:%d:%d\n", peer.myid, peer.quorumPort, peer.electionPort)
		}
	}
	if err := os.WriteFile(s.configPath, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("write zoo.cfg: %w", err)
	}
	return nil
}

// launch starts s's JVM. Caller holds e.mu.
func (e *Ensemble) launch(s *server) error {
	logFile, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open server log: %w", err)
	}
	defer logFile.Close() // the child has its own copy
	fmt.Fprintf(logFile, "=== realzk: starting server %d (myid %d) at %s\n", s.myid-1, s.myid, time.Now().Format(time.RFC3339Nano))
	args := []string{
		fmt.Sprintf("-Xmx%dm", e.cfg.HeapMB),
		"-Xss512k",
		"-XX:+UseSerialGC",
		"-XX:TieredStopAtLevel=1", // quick start-up; these servers carry little load
		"-XX:-UsePerfData",
		"-Djava.net.preferIPv4Stack=true",
		"-Dzookeeper.admin.enableServer=false",
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
		dirMarkerFlag + e.dir,
	}
	for _, k := range slices.Sorted(maps.Keys(e.cfg.SystemProperties)) {
		args = append(args, "-D"+k+"="+e.cfg.SystemProperties[k])
	}
	args = append(args,
		"-cp", strings.Join(e.cfg.ClassPath, ":"),
		"org.apache.zookeeper.server.quorum.QuorumPeerMain",
		s.configPath,
	)
	cmd := exec.Command(e.java, args...)
	cmd.Dir = e.dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if err := startProcess(cmd, !e.cfg.noParentDeathSignal); err != nil {
		return fmt.Errorf("run %s: %w", e.java, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait() // a killed JVM exits with an error; nothing to report
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited
	return nil
}

// Addrs returns the client addresses (host:port) of the servers, index i
// being server i.
func (e *Ensemble) Addrs() []string { return append([]string(nil), e.addrs...) }

// Servers returns the number of servers.
func (e *Ensemble) Servers() int { return len(e.addrs) }

// ConnectString returns the addresses joined by commas, the form ZK_SERVERS
// and ZooKeeper clients take.
func (e *Ensemble) ConnectString() string { return strings.Join(e.addrs, ",") }

// Harness reports whether realzk started this ensemble (and so can inject
// faults into it), rather than attaching to a running one.
func (e *Ensemble) Harness() bool { return e.dir != "" }

// Dir returns the directory holding the servers' data, configuration and
// logs ("" for an attached ensemble). Close removes it.
func (e *Ensemble) Dir() string { return e.dir }

func (e *Ensemble) checkIndex(i int) error {
	if i < 0 || i >= len(e.addrs) {
		return fmt.Errorf("server %d: no such server (the ensemble has servers 0 to %d)", i, len(e.addrs)-1)
	}
	return nil
}

// Mode asks server i for its mode ("leader", "follower", "standalone", …).
func (e *Ensemble) Mode(ctx context.Context, i int) (string, error) {
	if err := e.checkIndex(i); err != nil {
		return "", err
	}
	return ServerMode(ctx, e.addrs[i])
}

// Running reports whether server i's JVM is up (always true for an attached
// ensemble, whose servers the harness cannot see).
func (e *Ensemble) Running(i int) bool {
	if e.checkIndex(i) != nil {
		return false
	}
	if !e.Harness() {
		return true
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.servers[i].running()
}

// Leader returns the index of the server that currently leads, polling until
// one does or ctx ends. A standalone server counts as its own leader.
func (e *Ensemble) Leader(ctx context.Context) (int, error) {
	var lastErr error
	for {
		leader, err := e.leaderNow(ctx)
		if err == nil {
			return leader, nil
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("find the leader of %s: %w (last: %v)", e.ConnectString(), ctx.Err(), lastErr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (e *Ensemble) leaderNow(ctx context.Context) (int, error) {
	var errs []error
	for i, addr := range e.addrs {
		if !e.Running(i) {
			continue
		}
		mode, err := ServerMode(ctx, addr)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if mode == ModeLeader || mode == ModeStandalone {
			return i, nil
		}
	}
	return -1, fmt.Errorf("no server leads: %w", errors.Join(errs...))
}

// WaitQuorum waits until every running server answers "srvr" with a mode,
// exactly one of them leads (for an attached ensemble: every server) and, where
// the harness allows "mntr", the leader counts every other running server as a
// synced follower. It
// fails at once when a server exits unexpectedly or too few servers run to
// form a quorum.
func (e *Ensemble) WaitQuorum(ctx context.Context) error {
	var lastErr error
	for {
		err := e.quorumNow(ctx)
		if err == nil {
			return nil
		}
		var fatal *fatalError
		if errors.As(err, &fatal) {
			return fatal.err
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for a quorum on %s: %w (last: %v)", e.ConnectString(), ctx.Err(), lastErr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// fatalError marks a WaitQuorum failure that waiting cannot cure.
type fatalError struct{ err error }

func (f *fatalError) Error() string { return f.err.Error() }

func (e *Ensemble) quorumNow(ctx context.Context) error {
	running := 0
	if e.Harness() {
		e.mu.Lock()
		if e.closed {
			e.mu.Unlock()
			return &fatalError{errors.New("ensemble is closed")}
		}
		for i, s := range e.servers {
			if s.running() {
				running++
			} else if s.cmd != nil && !s.killed {
				e.mu.Unlock()
				return &fatalError{fmt.Errorf("server %d exited on its own; its log ends:\n%s", i, tail(e.logOf(s), 30))}
			}
		}
		e.mu.Unlock()
		if quorum := len(e.servers)/2 + 1; running < quorum {
			return &fatalError{fmt.Errorf("only %d of %d servers run; a quorum needs %d (Restart a killed server)", running, len(e.servers), quorum)}
		}
	}
	leaders, followers, leader := 0, 0, -1
	for i, addr := range e.addrs {
		if !e.Running(i) {
			continue
		}
		mode, err := ServerMode(ctx, addr)
		if err != nil {
			return fmt.Errorf("server %d: %w", i, err)
		}
		switch mode {
		case ModeLeader:
			leaders, leader = leaders+1, i
		case ModeStandalone:
			leaders++
		default:
			followers++
		}
	}
	if leaders != 1 {
		return fmt.Errorf("%d servers lead, want 1", leaders)
	}
	if leader >= 0 && e.Harness() && e.allowsWord("mntr") {
		// A follower that has just (re)joined answers "Mode: follower" before it has synced with the
		// leader; until the leader counts it, the ensemble is not whole (its mntr lacks the follower's
		// learner lines, for one).
		mntr, err := FourLetter(ctx, e.addrs[leader], "mntr")
		if err != nil {
			return fmt.Errorf("leader %d: %w", leader, err)
		}
		if want := fmt.Sprintf("zk_synced_followers\t%d\n", followers); !strings.Contains(mntr, want) {
			return fmt.Errorf("leader %d does not count its %d followers synced yet", leader, followers)
		}
	}
	return nil
}

// allowsWord reports whether the harness's servers answer the four-letter word (Config.FourLetterWords).
func (e *Ensemble) allowsWord(word string) bool {
	words := e.cfg.FourLetterWords
	return words == "" || words == "*" || slices.ContainsFunc(strings.Split(words, ","), func(w string) bool { return strings.TrimSpace(w) == word })
}

// Kill SIGKILLs server i's JVM and waits until it is gone. Its data stays;
// Restart brings it back.
func (e *Ensemble) Kill(i int) error {
	if !e.Harness() {
		return fmt.Errorf("kill server %d: %w", i, ErrNotHarness)
	}
	if err := e.checkIndex(i); err != nil {
		return fmt.Errorf("kill: %w", err)
	}
	e.mu.Lock()
	s := e.servers[i]
	if !s.running() {
		e.mu.Unlock()
		return fmt.Errorf("kill server %d: it is not running", i)
	}
	s.killed = true
	pid, exited := s.cmd.Process.Pid, s.exited
	e.mu.Unlock()
	if err := killGroup(pid); err != nil {
		return fmt.Errorf("kill server %d: %w", i, err)
	}
	select {
	case <-exited:
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("kill server %d: JVM %d still running 30s after SIGKILL", i, pid)
	}
}

// Restart starts the killed server i again on its old data directory and
// ports and waits until it has rejoined: the ensemble has a quorum with
// server i serving in it.
func (e *Ensemble) Restart(ctx context.Context, i int) error {
	if !e.Harness() {
		return fmt.Errorf("restart server %d: %w", i, ErrNotHarness)
	}
	if err := e.checkIndex(i); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return fmt.Errorf("restart server %d: ensemble is closed", i)
	}
	s := e.servers[i]
	if s.running() {
		e.mu.Unlock()
		return fmt.Errorf("restart server %d: it is still running (Kill it first)", i)
	}
	s.killed = false
	err := e.launch(s)
	e.mu.Unlock()
	if err != nil {
		return fmt.Errorf("restart server %d: %w", i, err)
	}
	if err := e.WaitQuorum(ctx); err != nil {
		return fmt.Errorf("restart server %d: %w", i, err)
	}
	return nil
}

// Heal restarts every killed server and waits for a quorum: it undoes the
// faults a test injected. For an attached ensemble it only waits for a
// quorum.
func (e *Ensemble) Heal(ctx context.Context) error {
	for i := range e.addrs {
		if e.Harness() && !e.Running(i) {
			if err := e.Restart(ctx, i); err != nil {
				return fmt.Errorf("heal: %w", err)
			}
		}
	}
	if err := e.WaitQuorum(ctx); err != nil {
		return fmt.Errorf("heal: %w", err)
	}
	return nil
}

// Close kills every JVM the harness started and removes the ensemble's
// directory. It is idempotent; for an attached ensemble it does nothing.
func (e *Ensemble) Close() error {
	if !e.Harness() {
		return nil
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	var errs []error
	var waits []chan struct{}
	for _, s := range e.servers {
		if s.running() {
			if err := killGroup(s.cmd.Process.Pid); err != nil {
				errs = append(errs, err)
			}
			waits = append(waits, s.exited)
		}
	}
	e.mu.Unlock()
	for _, exited := range waits {
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			errs = append(errs, errors.New("a JVM still runs 30s after SIGKILL"))
		}
	}
	if err := os.RemoveAll(e.dir); err != nil {
		errs = append(errs, fmt.Errorf("remove ensemble directory: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close ensemble: %w", err)
	}
	return nil
}

// pids returns the JVM pids of the running servers (for tests).
func (e *Ensemble) pids() []int {
	e.mu.Lock()
	defer e.mu.Unlock()
	var pids []int
	for _, s := range e.servers {
		if s.running() {
			pids = append(pids, s.cmd.Process.Pid)
		}
	}
	return pids
}

// LogPath returns the path of server i's log file ("" for an attached
// ensemble or a bad index). Every start of the server appends to it.
func (e *Ensemble) LogPath(i int) string {
	if !e.Harness() || e.checkIndex(i) != nil {
		return ""
	}
	return e.servers[i].logPath
}

// Logs returns server i's whole log ("" when there is none, e.g. after
// Close or for an attached ensemble).
func (e *Ensemble) Logs(i int) string {
	if !e.Harness() || e.checkIndex(i) != nil {
		return ""
	}
	return e.logOf(e.servers[i])
}

func (e *Ensemble) logOf(s *server) string {
	raw, err := os.ReadFile(s.logPath)
	if err != nil {
		return ""
	}
	return string(raw)
}

// logTails returns the last n lines of every server's log, labelled, for
// diagnostics.
func (e *Ensemble) logTails(n int) string {
	var b strings.Builder
	for i, s := range e.servers {
		log := e.logOf(s)
		if strings.Contains(log, "java.lang.OutOfMemoryError") {
			fmt.Fprintf(&b, "*** server %d ran out of Java heap (-Xmx%dm): its threads died and it restarted its peer; raise Config.HeapMB\n", i, e.cfg.HeapMB)
		}
		fmt.Fprintf(&b, "--- server %d log (%s), last %d lines:\n%s\n", i, s.logPath, n, tail(log, n))
	}
	return b.String()
}

// LogTails returns the last n lines of every server's log, each labelled
// with its server index: what to print when a test fails.
func (e *Ensemble) LogTails(n int) string {
	if !e.Harness() {
		return "(attached ensemble " + e.ConnectString() + ": its logs are not available to realzk)"
	}
	return e.logTails(n)
}

// KeepLogs copies every server's whole log into dir (created if missing) as server<myid>.log, for a
// failure to be read later; an attached ensemble has none to copy.
func (e *Ensemble) KeepLogs(dir string) error {
	if !e.Harness() {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("keep server logs: %w", err)
	}
	for _, s := range e.servers {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("server%d.log", s.myid)), []byte(e.logOf(s)), 0o644); err != nil {
			return fmt.Errorf("keep server logs: %w", err)
		}
	}
	return nil
}

func (e *Ensemble) portTaken() bool {
	for _, s := range e.servers {
		if strings.Contains(e.logOf(s), "Address already in use") {
			return true
		}
	}
	return false
}

func tail(text string, n int) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
