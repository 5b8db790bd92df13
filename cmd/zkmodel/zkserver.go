package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zkmodel/zkmodel/dropin"
	"github.com/zkmodel/zkmodel/internal/keystore"
	"github.com/zkmodel/zkmodel/model"
)

// This file is `zkmodel zkserver`, the command behind dropin/bin/zkServer.sh: ZooKeeper's server script's
// commands (start-foreground, start, stop, status, restart, print-cmd, version) on the emulated ensemble
// that zkserver-daemon (zkserver_daemon.go) keeps for each cluster. See package dropin for the design.

const zkserverUsage = "usage: zkServer.sh {start|start-foreground|stop|version|restart|status|print-cmd} [zoo.cfg]"

// exitError is an error with the exit status the command ends with.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

// runZKServer is `zkmodel zkserver CMD [CFG]`.
func runZKServer(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || len(args) > 2 {
		return exitError{2, errors.New(zkserverUsage)}
	}
	cfgPath := configPath(args[1:])
	if args[0] == "version" {
		fmt.Fprintf(stdout, "Apache ZooKeeper, version %s (zkmodel's stand-in for zkServer.sh)\n", zkVersion)
		return nil
	}
	fmt.Fprintf(stderr, "Using config: %s\n", cfgPath)
	cfg, err := dropin.LoadConfig(cfgPath, os.Getenv("SERVER_JVMFLAGS")+" "+os.Getenv("JVMFLAGS"))
	if errors.Is(err, dropin.ErrCannotStart) {
		// ZooKeeper logs "Unable to start server" and exits 1 (ExitCode.UNEXPECTED_ERROR).
		return exitError{1, err}
	}
	if err != nil {
		// ZooKeeper logs "Invalid config, exiting abnormally" and exits 2 (ExitCode.INVALID_INVOCATION).
		return exitError{2, fmt.Errorf("invalid config, exiting abnormally: %w", err)}
	}
	// The script makes the dataDir before it runs any command (mkdir -p), for its pid file.
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return exitError{1, fmt.Errorf("make the dataDir: %w", err)}
	}
	switch args[0] {
	case "start-foreground":
		return startForeground(ctx, cfg, stdout, stderr)
	case "start":
		return startBackground(ctx, cfg, cfgPath, stdout)
	case "stop":
		return stopBackground(cfg, stdout)
	case "restart":
		if err := stopBackground(cfg, stdout); err != nil {
			return err
		}
		return startBackground(ctx, cfg, cfgPath, stdout)
	case "status":
		return status(ctx, cfg, stdout)
	case "print-cmd":
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("print-cmd: %w", err)
		}
		fmt.Fprintf(stdout, "%q zkserver start-foreground %q\n", exe, cfg.File)
		return nil
	}
	return exitError{2, errors.New(zkserverUsage)}
}

// zkVersion is the ZooKeeper version the model behaves as.
const zkVersion = "3.8.0"

// configPath is the zoo.cfg the script would use: the argument, or $ZOOCFGDIR/$ZOOCFG, or conf/zoo.cfg
// beside the script's bin directory (ZKMODEL_HOME, which the script sets).
func configPath(args []string) string {
	if len(args) == 1 && args[0] != "" {
		return args[0]
	}
	name := os.Getenv("ZOOCFG")
	if name == "" {
		name = "zoo.cfg"
	}
	dir := os.Getenv("ZOOCFGDIR")
	if dir == "" {
		dir = filepath.Join(os.Getenv("ZKMODEL_HOME"), "conf")
	}
	return filepath.Join(dir, name)
}

// runDir is where the daemons' sockets, locks and logs live.
func runDir() (string, error) {
	dir := os.Getenv("ZKMODEL_RUNDIR")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "zkmodel-zkserver")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("the stand-in's run directory: %w", err)
	}
	return dir, nil
}

// clusterFiles are one cluster's daemon files.
type clusterFiles struct{ socket, lock, log string }

func filesOf(cfg dropin.Config) (clusterFiles, error) {
	dir, err := runDir()
	if err != nil {
		return clusterFiles{}, err
	}
	base := filepath.Join(dir, cfg.ClusterID())
	return clusterFiles{socket: base + ".sock", lock: base + ".lock", log: base + ".log"}, nil
}

// attachRequest is what a member's process tells the daemon; attachReply is the answer.
type attachRequest struct {
	Member  int    `json:"member"`            // index among the cluster's members
	Addr    string `json:"addr,omitempty"`    // client address to serve on (attach)
	DataDir string `json:"dataDir,omitempty"` // the member's dataDir (the daemon watches it)
	PID     int    `json:"pid,omitempty"`
	Status  bool   `json:"status,omitempty"` // only ask for the member's mode
	// Tick and Settings are the server's tickTime and its settingsArgs (attach): the daemon applies the
	// settings, and refuses a tickTime other than its own.
	Tick     time.Duration `json:"tick,omitempty"`
	Settings []string      `json:"settings,omitempty"`
}

type attachReply struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	Mode  string `json:"mode,omitempty"`
	// Backend is the member's wire address at the daemon, where the process carries its clients.
	Backend string `json:"backend,omitempty"`
	PID     int    `json:"pid,omitempty"` // the daemon's
}

// startForeground runs the configured server until the process is killed or signalled: it attaches to (or
// starts) its cluster's daemon and holds the connection open.
func startForeground(ctx context.Context, cfg dropin.Config, stdout, stderr io.Writer) error {
	files, err := filesOf(cfg)
	if err != nil {
		return err
	}
	// Listen first, so that a port in use is refused before the member starts; accept once it has.
	l, err := net.Listen("tcp", cfg.ClientAddr)
	if err != nil {
		return fmt.Errorf("server.%d: listen for clients on %s: %w (is another server running on it?)", cfg.MyID, cfg.ClientAddr, err)
	}
	defer l.Close()
	secure, err := listenSecure(cfg)
	if err != nil {
		return err
	}
	if secure != nil {
		defer secure.Close()
	}
	conn, err := dialDaemon(ctx, cfg, files)
	if err != nil {
		return err
	}
	defer conn.Close()
	reply, err := ask(conn, attachRequest{Member: cfg.Index(), Addr: cfg.ClientAddr, DataDir: cfg.DataDir, PID: os.Getpid(),
		Tick: cfg.TickTime, Settings: settingsArgs(cfg)})
	if err != nil {
		return fmt.Errorf("start server.%d: %w", cfg.MyID, err)
	}
	role := "standalone"
	if !cfg.Standalone() {
		role = fmt.Sprintf("server.%d (member %d of %d)", cfg.MyID, cfg.Index()+1, len(cfg.Members))
	}
	g := newGateway(nil, []string{reply.Backend, reply.Backend}, stderr)
	g.startServing(0, l)
	defer g.closeAll()
	if secure != nil {
		g.startServing(1, secure) // TLS clients, carried to the same member
	}
	fmt.Fprintf(stdout, "%s INFO  [main] zkmodel: binding to port %s\n", logTime(), cfg.ClientAddr)
	fmt.Fprintf(stdout, "%s INFO  [main] zkmodel: %s serving; cluster daemon pid %d, log %s\n", logTime(), role, reply.PID, files.log)

	gone := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, conn)
		gone <- err
	}()
	select {
	case <-ctx.Done(): // SIGTERM or SIGINT: the member stops as the connection closes
		fmt.Fprintf(stdout, "%s INFO  [main] zkmodel: shutting down\n", logTime())
		g.closeListeners()
		return nil
	case err := <-gone:
		return fmt.Errorf("the cluster's daemon went away (%v): see %s", err, files.log)
	}
}

func logTime() string { return time.Now().Format("2006-01-02 15:04:05,000") }

// ask sends one request line and reads one reply line.
func ask(conn net.Conn, req attachRequest) (attachReply, error) {
	b, _ := json.Marshal(req) // cannot fail: plain fields
	if _, err := conn.Write(append(b, '\n')); err != nil {
		return attachReply{}, fmt.Errorf("talk to the cluster's daemon: %w", err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n') // the daemon writes nothing more on this connection
	if err != nil {
		return attachReply{}, fmt.Errorf("read the cluster daemon's answer: %w", err)
	}
	var r attachReply
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		return attachReply{}, fmt.Errorf("the cluster daemon's answer %q: %w", line, err)
	}
	if !r.OK {
		return r, errors.New(r.Error)
	}
	return r, nil
}

// dialDaemon connects to the cluster's daemon, starting it first (under the cluster's lock, so that members
// starting at once start one daemon) when none answers.
func dialDaemon(ctx context.Context, cfg dropin.Config, files clusterFiles) (net.Conn, error) {
	if c, err := net.Dial("unix", files.socket); err == nil {
		return c, nil
	}
	lock, err := os.OpenFile(files.lock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the cluster's lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return nil, fmt.Errorf("lock %s: %w", files.lock, err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if c, err := net.Dial("unix", files.socket); err == nil {
		return c, nil // another member started it meanwhile
	}
	os.Remove(files.socket) // a dead daemon's
	exited, err := spawnDaemon(cfg, files)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		if c, err := net.Dial("unix", files.socket); err == nil {
			return c, nil
		}
		select {
		case err := <-exited:
			return nil, fmt.Errorf("the cluster's daemon exited at start (%v): see %s", err, files.log)
		case <-ctx.Done():
			return nil, fmt.Errorf("the cluster's daemon did not listen on %s: %w (see %s)", files.socket, ctx.Err(), files.log)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// ensembleMembers turns a zoo.cfg's server.N lines into the model's configuration of them.
func ensembleMembers(members []dropin.Member) []model.EnsembleMember {
	out := make([]model.EnsembleMember, len(members))
	for i, m := range members {
		out[i] = model.EnsembleMember{ID: int64(m.ID), Host: m.Host, QuorumPort: m.PeerPort, ElectionPort: m.ElectionPort, Observer: m.Observer}
		if h, p, err := net.SplitHostPort(m.ClientAddr); err == nil {
			out[i].ClientHost = h
			out[i].ClientPort, _ = strconv.Atoi(p) // dropin checked it
		}
	}
	return out
}

// spawnDaemon starts `zkmodel zkserver-daemon` for cfg's cluster in a session of its own, with its output in
// the log file: never the caller's stdout or stderr, whose pipes a harness waits on until they close.
func spawnDaemon(cfg dropin.Config, files clusterFiles) (<-chan error, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("start the cluster's daemon: %w", err)
	}
	logf, err := os.OpenFile(files.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the cluster daemon's log: %w", err)
	}
	defer logf.Close()
	members := max(len(cfg.Members), 1)
	args := []string{"zkserver-daemon", "-socket", files.socket, "-members", strconv.Itoa(members),
		"-tick", cfg.TickTime.String(), "-cluster", cfg.ClusterKey()}
	if len(cfg.Members) > 0 {
		servers, err := json.Marshal(ensembleMembers(cfg.Members))
		if err != nil {
			return nil, fmt.Errorf("start the cluster's daemon: encode its servers: %w", err)
		}
		args = append(args, "-servers", string(servers))
	}
	cmd := exec.Command(exe, append(args, settingsArgs(cfg)...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the cluster's daemon: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	return exited, nil
}

// settingsArgs are the daemon flags of the settings a real server reads afresh each time it starts (its
// zoo.cfg's and its JVM flags'): every member's process sends them when it attaches, and the daemon applies
// them (model.Server.ApplySettings), so that a server started again with a new JAAS file, say, has it.
func settingsArgs(cfg dropin.Config) []string {
	var args []string
	if cfg.FourLetterWords != "" {
		args = append(args, "-4lw-whitelist", cfg.FourLetterWords)
	}
	if cfg.MinSessionTimeout > 0 {
		args = append(args, "-min-session-timeout", cfg.MinSessionTimeout.String())
	}
	if cfg.MaxSessionTimeout > 0 {
		args = append(args, "-max-session-timeout", cfg.MaxSessionTimeout.String())
	}
	if cfg.SuperDigest != "" {
		args = append(args, "-super-digest", cfg.SuperDigest)
	}
	if cfg.ExtendedTypes {
		args = append(args, "-extended-types")
	}
	if cfg.SASLLogins { // a JAAS file without the server's section: no SASL server, as on 3.8
		args = append(args, "-jaas", cfg.JAASFile, "-jaas-section", cfg.SASLSection)
	}
	if cfg.SASLSuperUser != "" {
		args = append(args, "-sasl-superuser", cfg.SASLSuperUser)
	}
	if cfg.SASLACLs {
		args = append(args, "-sasl-acls")
	}
	if cfg.ContainerCheckInterval > 0 {
		args = append(args, "-container-check-interval", cfg.ContainerCheckInterval.String())
	}
	if cfg.ReconfigEnabled {
		args = append(args, "-reconfig")
	}
	if cfg.SkipACL {
		args = append(args, "-skip-acl")
	}
	if cfg.SecureClientAddr != "" {
		args = append(args, "-x509")
	}
	if cfg.ReadOnlyMode {
		args = append(args, "-readonly-mode")
	}
	if cfg.LocalSessions {
		args = append(args, "-local-sessions")
	}
	if cfg.LocalSessionsUpgrading {
		args = append(args, "-local-sessions-upgrading")
	}
	if len(cfg.EnforceAuthSchemes) > 0 {
		args = append(args, "-enforce-auth", strings.Join(cfg.EnforceAuthSchemes, ","))
	}
	return args
}

// pidFile is where `start` records the background server's pid, as zkServer.sh does.
func pidFile(cfg dropin.Config) string { return filepath.Join(cfg.DataDir, "zookeeper_server.pid") }

// startBackground is `start`: start-foreground in the background, its output in dataDir/zookeeper.out.
func startBackground(ctx context.Context, cfg dropin.Config, cfgPath string, stdout io.Writer) error {
	fmt.Fprint(stdout, "Starting zookeeper ... ")
	if pid, err := readPID(cfg); err == nil && syscall.Kill(pid, 0) == nil {
		fmt.Fprintf(stdout, "already running as process %d.\n", pid)
		return exitError{1, fmt.Errorf("already running as process %d", pid)}
	}
	exe, err := os.Executable()
	if err != nil {
		return exitError{1, err}
	}
	out, err := os.OpenFile(filepath.Join(cfg.DataDir, "zookeeper.out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(stdout, "FAILED TO START")
		return exitError{1, err}
	}
	defer out.Close()
	cmd := exec.Command(exe, "zkserver", "start-foreground", cfgPath)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stdout, "SERVER DID NOT START")
		return exitError{1, err}
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if err := os.WriteFile(pidFile(cfg), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		fmt.Fprintln(stdout, "FAILED TO WRITE PID")
		return exitError{1, err}
	}
	// Started once the daemon has the member running.
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		if mode, err := memberMode(cfg); err == nil && mode != "stopped" {
			fmt.Fprintln(stdout, "STARTED")
			return nil
		}
		select {
		case err := <-exited:
			fmt.Fprintln(stdout, "FAILED TO START")
			return exitError{1, fmt.Errorf("the server exited (%v): see %s", err, out.Name())}
		case <-ctx.Done():
			fmt.Fprintln(stdout, "FAILED TO START")
			return exitError{1, fmt.Errorf("the server did not start within 20s: see %s", out.Name())}
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func readPID(cfg dropin.Config) (int, error) {
	b, err := os.ReadFile(pidFile(cfg))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// stopBackground is `stop`: it signals the pid in the pid file, as zkServer.sh does, and waits (bounded)
// until the member has stopped.
func stopBackground(cfg dropin.Config, stdout io.Writer) error {
	fmt.Fprint(stdout, "Stopping zookeeper ... ")
	pid, err := readPID(cfg)
	if err != nil {
		fmt.Fprintf(stdout, "no zookeeper to stop (could not find file %s)\n", pidFile(cfg))
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGTERM) // a process that is gone already is stopped
	os.Remove(pidFile(cfg))
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Fprintln(stdout, "STOPPED")
	return nil
}

// memberMode asks the cluster's daemon for the configured member's mode.
func memberMode(cfg dropin.Config) (string, error) {
	files, err := filesOf(cfg)
	if err != nil {
		return "", err
	}
	conn, err := net.DialTimeout("unix", files.socket, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	r, err := ask(conn, attachRequest{Member: cfg.Index(), Status: true})
	if err != nil {
		return "", err
	}
	return r.Mode, nil
}

// status is `status`: as zkServer.sh prints it, "Mode: …" and 0 when the server serves, "Error contacting
// service. It is probably not running." and 1 otherwise.
func status(_ context.Context, cfg dropin.Config, stdout io.Writer) error {
	host, port, _ := net.SplitHostPort(cfg.ClientAddr)
	fmt.Fprintf(stdout, "Client port found: %s. Client address: %s. Client SSL: false.\n", port, host)
	mode, err := memberMode(cfg)
	if err != nil || mode == "stopped" || mode == "not serving" {
		fmt.Fprintln(stdout, "Error contacting service. It is probably not running.")
		return exitError{1, errors.New("not running")}
	}
	fmt.Fprintf(stdout, "Mode: %s\n", mode)
	return nil
}

// listenSecure listens on the secure client port, if the configuration has one: TLS with its ssl.* settings
// (crypto/tls; the stores read by internal/keystore), as 3.8's Netty connection factory serves it.
func listenSecure(cfg dropin.Config) (net.Listener, error) {
	if cfg.SecureClientAddr == "" {
		return nil, nil
	}
	tlsCfg, err := keystore.ServerConfig(cfg.TLS)
	if err != nil {
		return nil, fmt.Errorf("server.%d: secure client port %s: %w", cfg.MyID, cfg.SecureClientAddr, err)
	}
	l, err := net.Listen("tcp", cfg.SecureClientAddr)
	if err != nil {
		return nil, fmt.Errorf("server.%d: listen for TLS clients on %s: %w (is another server running on it?)", cfg.MyID, cfg.SecureClientAddr, err)
	}
	return tls.NewListener(l, tlsCfg), nil
}
