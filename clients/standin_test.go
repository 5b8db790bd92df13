package clients

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

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

// standin is a cluster of zkmodel's zkServer.sh stand-in (dropin/bin/zkServer.sh) started as a harness starts
// ZooKeeper: one `zkServer.sh start-foreground zoo.cfg` process per server, the JVM flags in SERVER_JVMFLAGS.
type standin struct {
	t     *testing.T
	env   []string
	cfgs  []string
	addrs []string

	mu    sync.Mutex
	procs []*exec.Cmd
}

// startStandin writes the zoo.cfg of each of servers servers (clientPort, dataDir, tickTime, every
// four-letter word allowed, server.N lines and myid when more than one, then extra lines), starts them all,
// and returns once each serves (srvr gives its mode). Every process is killed when t ends.
func startStandin(ctx context.Context, t *testing.T, servers int, jvmFlags string, extra ...string) *standin {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("..", "dropin", "bin", "zkServer.sh"))
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	s := &standin{t: t, procs: make([]*exec.Cmd, servers),
		env: append(os.Environ(), "ZKMODEL_BIN="+buildZkmodel(ctx, t), "ZKMODEL_RUNDIR="+filepath.Join(base, "run"), "SERVER_JVMFLAGS="+jvmFlags)}
	ports := make([]int, 3*servers)
	var held []net.Listener // until all are chosen, so that none repeats
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		held = append(held, l)
	}
	for _, l := range held {
		l.Close()
	}
	for i := range servers {
		dir := filepath.Join(base, fmt.Sprintf("srv%d", i+1))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		lines := []string{"tickTime=500", "initLimit=10", "syncLimit=5", "dataDir=" + dir,
			"clientPort=" + strconv.Itoa(ports[3*i]), "4lw.commands.whitelist=*"}
		if servers > 1 {
			for j := range servers {
				lines = append(lines, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", j+1, ports[3*j+1], ports[3*j+2]))
			}
			if err := os.WriteFile(filepath.Join(dir, "myid"), []byte(strconv.Itoa(i+1)+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		cfg := filepath.Join(dir, "zoo.cfg")
		if err := os.WriteFile(cfg, []byte(strings.Join(append(lines, extra...), "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		s.cfgs = append(s.cfgs, cfg)
		s.addrs = append(s.addrs, fmt.Sprintf("127.0.0.1:%d", ports[3*i]))
	}
	t.Cleanup(func() {
		for i := range servers {
			_ = s.stop(i)
		}
	})
	for i := range servers {
		if err := s.launch(ctx, script, i); err != nil {
			t.Fatal(err)
		}
	}
	for i := range servers {
		if err := s.waitServing(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// launch starts server i's process.
func (s *standin) launch(ctx context.Context, script string, i int) error {
	cmd := exec.CommandContext(ctx, script, "start-foreground", s.cfgs[i])
	cmd.Env = s.env // no pipes: the daemon the first server starts would hold them open past a kill
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("stand-in server %d: start zkServer.sh: %w", i+1, err)
	}
	s.mu.Lock()
	s.procs[i] = cmd
	s.mu.Unlock()
	return nil
}

// waitServing returns once server i answers srvr with a mode.
func (s *standin) waitServing(ctx context.Context, i int) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		_, err := realzk.ServerMode(ctx, s.addrs[i])
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stand-in server %d (%s) does not serve: %w", i+1, s.addrs[i], err)
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
		return fmt.Errorf("stand-in server %d: kill: %w", i+1, err)
	}
	_ = cmd.Wait() // killed: its status says so
	return nil
}

// start runs server i again and returns once it serves.
func (s *standin) start(ctx context.Context, i int) error {
	script, err := filepath.Abs(filepath.Join("..", "dropin", "bin", "zkServer.sh"))
	if err != nil {
		return err
	}
	if err := s.launch(ctx, script, i); err != nil {
		return err
	}
	return s.waitServing(ctx, i)
}
