package clients

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/zkmodel/zkmodel/internal/zkcluster"
	"github.com/zkmodel/zkmodel/realzk"
)

// buildZkmodel builds cmd/zkmodel into a directory of t's and returns the binary's path.
func buildZkmodel(ctx context.Context, t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "zkmodel")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/zkmodel/zkmodel/cmd/zkmodel").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/zkmodel: %v\n%s", err, out)
	}
	return bin
}

// realZkServer is Debian's zkServer.sh (make zookeeper installs it).
const realZkServer = "/usr/share/zookeeper/bin/zkServer.sh"

// realServerJVMFlags are what Debian's zkServer.sh runs a real server's JVM with (JVMFLAGS): a quick
// start-up on loaded cores; they change no server behaviour.
const realServerJVMFlags = "-Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData"

// standin is a cluster started as a harness starts ZooKeeper: one `zkServer.sh start-foreground zoo.cfg`
// process per server, the JVM flags in SERVER_JVMFLAGS; the script is zkmodel's stand-in
// (dropin/bin/zkServer.sh) or Debian's real one.
type standin struct {
	t      *testing.T
	script string
	env    []string
	cfgs   []string
	addrs  []string

	mu    sync.Mutex
	procs []*exec.Cmd
}

// clusterConfig is what startCluster writes and runs.
type clusterConfig struct {
	// script is the zkServer.sh to run: "" means the stand-in, realZkServer Debian's ZooKeeper 3.8.
	script string
	// servers is the number of servers: 1 is a standalone server.
	servers int
	// jvmFlags is SERVER_JVMFLAGS.
	jvmFlags string
	// defaultWhitelist leaves 4lw.commands.whitelist out of zoo.cfg (3.8's default, srvr alone); otherwise
	// every word is allowed.
	defaultWhitelist bool
	// extra lines of every zoo.cfg.
	extra []string
	// serverExtra, when set, gives lines of server i's zoo.cfg alone (its own secure client port, say).
	serverExtra func(i int) []string
}

// startStandin starts a cluster of servers stand-in servers (see startCluster) with every four-letter word
// allowed.
func startStandin(ctx context.Context, t *testing.T, servers int, jvmFlags string, extra ...string) *standin {
	t.Helper()
	return startCluster(ctx, t, clusterConfig{servers: servers, jvmFlags: jvmFlags, extra: extra})
}

// startCluster writes the zoo.cfg of each of cfg.servers servers (clientPort, dataDir, tickTime, the
// four-letter words, server.N lines and myid when more than one, then cfg.extra), starts them all through
// cfg.script, and returns once each serves (srvr gives its mode). Every process is killed when t ends.
func startCluster(ctx context.Context, t *testing.T, cfg clusterConfig) *standin {
	t.Helper()
	s := writeCluster(ctx, t, cfg)
	t.Cleanup(func() {
		for i := range cfg.servers {
			_ = s.stop(i)
		}
	})
	for i := range cfg.servers {
		if err := s.launch(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	for i := range cfg.servers {
		if err := s.waitServing(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// writeCluster writes the zoo.cfg (and myid) files of cfg's servers and returns the cluster, none of them
// started.
func writeCluster(ctx context.Context, t *testing.T, cfg clusterConfig) *standin {
	t.Helper()
	script := cfg.script
	if script == "" {
		var err error
		if script, err = filepath.Abs(filepath.Join("..", "dropin", "bin", "zkServer.sh")); err != nil {
			t.Fatal(err)
		}
	}
	base := t.TempDir()
	s := &standin{t: t, script: script, procs: make([]*exec.Cmd, cfg.servers),
		env: append(os.Environ(), "SERVER_JVMFLAGS="+cfg.jvmFlags)}
	if cfg.script == "" {
		s.env = append(s.env, "ZKMODEL_BIN="+buildZkmodel(ctx, t), "ZKMODEL_RUNDIR="+filepath.Join(base, "run"))
	} else {
		s.env = append(s.env, "JVMFLAGS="+realServerJVMFlags, "ZOO_LOG_DIR="+base)
	}
	var lines []string
	if !cfg.defaultWhitelist {
		lines = append(lines, "4lw.commands.whitelist=*")
	}
	for i, srv := range zkcluster.Write(t, base, cfg.servers, append(lines, cfg.extra...)...) {
		s.cfgs = append(s.cfgs, srv.Cfg)
		s.addrs = append(s.addrs, srv.Addr())
		if cfg.serverExtra != nil {
			appendLines(t, srv.Cfg, cfg.serverExtra(i))
		}
	}
	return s
}

// appendLines appends lines to the file at path.
func appendLines(t *testing.T, path string, lines []string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		if _, err := fmt.Fprintln(f, l); err != nil {
			t.Fatal(err)
		}
	}
}

// launch starts server i's process.
func (s *standin) launch(ctx context.Context, i int) error {
	cmd := exec.CommandContext(ctx, s.script, "start-foreground", s.cfgs[i])
	cmd.Env = s.env // no pipes: the daemon the first server starts would hold them open past a kill
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("server %d: start %s: %w", i+1, s.script, err)
	}
	s.mu.Lock()
	s.procs[i] = cmd
	s.mu.Unlock()
	return nil
}

// waitServing returns once server i answers srvr with a mode.
func (s *standin) waitServing(ctx context.Context, i int) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second) // a real server's JVM on loaded cores
	defer cancel()
	for {
		_, err := realzk.ServerMode(ctx, s.addrs[i])
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("server %d (%s) does not serve: %w", i+1, s.addrs[i], err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop kills server i's process (SIGKILL, as go-zookeeper's harness stops a server) and waits for it.
func (s *standin) stop(i int) error {
	s.mu.Lock()
	cmd := s.procs[i]
	s.procs[i] = nil
	s.mu.Unlock()
	if cmd == nil {
		return nil
	}
	if err := cmd.Process.Kill(); err != nil {
		return fmt.Errorf("server %d: kill: %w", i+1, err)
	}
	_ = cmd.Wait() // killed: its status says so
	return nil
}

// start runs server i again and returns once it serves.
func (s *standin) start(ctx context.Context, i int) error {
	if err := s.launch(ctx, i); err != nil {
		return err
	}
	return s.waitServing(ctx, i)
}
