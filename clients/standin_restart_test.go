package clients

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkmodel/zkmodel/internal/rawzk"
	"github.com/zkmodel/zkmodel/realzk"
)

// TestStandInRestartTakesNewSettings: a standalone server run by `zkServer.sh start`, stopped by `stop` and
// started again with another JAAS file (and then with the same file rewritten) in SERVER_JVMFLAGS answers
// the same through Debian's zkServer.sh and through the stand-in: `start` while it runs is refused
// ("already running as process N.", status 1), `stop` ends the server (its port refuses), each start reads
// zoo.cfg, the JVM flags and the JAAS file afresh (the old users' logins fail, the new ones' succeed), and the
// data stays.
func TestStandInRestartTakesNewSettings(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*scenarioTimeout)
	t.Cleanup(cancel)
	// What Debian's zkServer.sh gives (measured: the real side runs first and is held to it too).
	const want = `start: "Starting zookeeper ... STARTED\n", exit status 0
start: "Starting zookeeper ... already running as process PID.\n", exit status 1
SASL login as alice: <nil>
/kept: "k" <nil>
stop: "Stopping zookeeper ... STOPPED\n", exit status 0
the port refuses connections: true
start: "Starting zookeeper ... STARTED\n", exit status 0
SASL login as alice: rawzk: SASL login as alice: zk: client authentication failed
SASL login as bob: <nil>
/kept: "k" <nil>
stop: "Stopping zookeeper ... STOPPED\n", exit status 0
start: "Starting zookeeper ... STARTED\n", exit status 0
SASL login as bob: rawzk: SASL login as bob: zk: client authentication failed
SASL login as carol: <nil>
stop: "Stopping zookeeper ... STOPPED\n", exit status 0
stop: "Stopping zookeeper ... no zookeeper to stop (could not find file DATADIR/zookeeper_server.pid)\n", exit status 0
pid file left: false
`
	for _, side := range standinSides {
		t.Run(side.name, func(t *testing.T) {
			if got := restartScenario(ctx, t, side.script); got != want {
				t.Errorf("%s printed\n%s\nwant\n%s", side.name, got, want)
			}
		})
	}
}

// restartScenario runs the scenario with script ("" for the stand-in) and returns what it saw, one fact a
// line, with pids and paths left out.
func restartScenario(ctx context.Context, t *testing.T, script string) string {
	t.Helper()
	base := t.TempDir()
	env := os.Environ()
	if script == "" {
		var err error
		if script, err = filepath.Abs(filepath.Join("..", "dropin", "bin", "zkServer.sh")); err != nil {
			t.Fatal(err)
		}
		env = append(env, "ZKMODEL_BIN="+buildZkmodel(ctx, t), "ZKMODEL_RUNDIR="+filepath.Join(base, "run"))
	} else {
		env = append(env, "JVMFLAGS="+realServerJVMFlags, "ZOO_LOG_DIR="+base)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)
	dataDir := filepath.Join(base, "data")
	cfg := filepath.Join(base, "zoo.cfg")
	if err := os.WriteFile(cfg, []byte(strings.Join([]string{"tickTime=500", "dataDir=" + dataDir, "clientPort=" + port,
		"clientPortAddress=127.0.0.1", "admin.enableServer=false", "4lw.commands.whitelist=*"}, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	jaasA, err := realzk.WriteJAAS(t.TempDir(), map[string]string{"alice": "alice-pw"})
	if err != nil {
		t.Fatal(err)
	}
	jaasB, err := realzk.WriteJAAS(t.TempDir(), map[string]string{"bob": "bob-pw"})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	pids := regexp.MustCompile(`process \d+`)
	run := func(cmd, jaas string) {
		t.Helper()
		c := exec.CommandContext(ctx, script, cmd, cfg)
		c.Env = append(env, "SERVER_JVMFLAGS=-Djava.security.auth.login.config="+jaas)
		stdout, err := c.Output()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatalf("zkServer.sh %s: %v", cmd, err)
		}
		text := strings.ReplaceAll(pids.ReplaceAllString(string(stdout), "process PID"), dataDir, "DATADIR")
		fmt.Fprintf(&out, "%s: %q, exit status %d\n", cmd, text, code)
	}
	t.Cleanup(func() {
		c := exec.Command(script, "stop", cfg)
		c.Env = env
		_ = c.Run()
	})
	serving := func() {
		t.Helper()
		wait, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		for {
			if _, err := realzk.ServerMode(wait, addr); err == nil {
				return
			}
			select {
			case <-wait.Done():
				t.Fatalf("the server on %s does not serve", addr)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	refuses := func() {
		t.Helper()
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err == nil {
			c.Close()
		}
		fmt.Fprintf(&out, "the port refuses connections: %v\n", err != nil)
	}
	login := func(user, password string) {
		t.Helper()
		lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		c, _, err := rawzk.ConnectDigestMD5(lctx, []string{addr}, 10*time.Second, nil, user, password)
		if err == nil {
			_ = c.Close(lctx)
		}
		fmt.Fprintf(&out, "SASL login as %s: %v\n", user, err)
	}
	kept := func() {
		t.Helper()
		conn, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(quietLogger{}))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.Create("/kept", []byte("k"), 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatalf("Create(/kept): %v", err)
		}
		data, _, err := conn.Get("/kept")
		fmt.Fprintf(&out, "/kept: %q %v\n", data, err)
	}
	run("start", jaasA)
	serving()
	run("start", jaasA)
	login("alice", "alice-pw")
	kept()
	run("stop", jaasA)
	refuses()
	run("start", jaasB) // another JAAS file
	serving()
	login("alice", "alice-pw")
	login("bob", "bob-pw")
	kept()
	run("stop", jaasB)
	if _, err := realzk.WriteJAAS(filepath.Dir(jaasB), map[string]string{"carol": "carol-pw"}); err != nil {
		t.Fatal(err)
	}
	run("start", jaasB) // the same file, rewritten
	serving()
	login("bob", "bob-pw")
	login("carol", "carol-pw")
	run("stop", jaasB)
	run("stop", jaasB)
	fmt.Fprintf(&out, "pid file left: %v\n", fileExists(filepath.Join(dataDir, "zookeeper_server.pid")))
	return out.String()
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
