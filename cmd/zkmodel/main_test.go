package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel"
)

// readStartup reads serve's startup line from r.
func readStartup(t *testing.T, r io.Reader) startupLine {
	t.Helper()
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		t.Fatalf("read the startup line: %v (got %q)", err, line)
	}
	var s startupLine
	if err := json.Unmarshal([]byte(line), &s); err != nil {
		t.Fatalf("startup line %q: %v", line, err)
	}
	return s
}

// serveInProcess runs the command in this process with args and returns
// its startup line; the cleanup stops it and checks it returned nil.
func serveInProcess(t *testing.T, args ...string) startupLine {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdoutR, stdoutW := io.Pipe()
	var stderr strings.Builder
	done := make(chan error, 1)
	go func() {
		err := run(ctx, append([]string{"serve"}, args...), stdoutW, &stderr)
		stdoutW.CloseWithError(fmt.Errorf("run returned: %v", err))
		done <- err
	}()
	s := readStartup(t, stdoutR)
	go io.Copy(io.Discard, stdoutR)
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
		if stderr.Len() > 0 {
			t.Logf("stderr:\n%s", stderr.String())
		}
	})
	return s
}

// quietLogger keeps go-zookeeper's chatter out of the test log.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// connect opens a go-zookeeper session to addr over TCP and waits for it.
func connect(t *testing.T, addr string) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	conn, events, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(quietLogger{}))
	if err != nil {
		t.Fatalf("connect %s: %v", addr, err)
	}
	t.Cleanup(conn.Close)
	waitState(t, events, zk.StateHasSession)
	return conn, events
}

// waitState reads events until one in state want arrives.
func waitState(t *testing.T, events <-chan zk.Event, want zk.State) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("event channel closed while waiting for %v", want)
			}
			if ev.State == want {
				return
			}
		case <-timeout:
			t.Fatalf("no %v within 30s", want)
		}
	}
}

// call makes an HTTP request to the control endpoint and returns the
// status and body.
func call(t *testing.T, method, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return resp.StatusCode, string(body)
}

// sessions returns GET /sessions.
func sessions(t *testing.T, control string) []sessionInfo {
	t.Helper()
	code, body := call(t, "GET", control+"/sessions")
	if code != http.StatusOK {
		t.Fatalf("GET /sessions: %d %s", code, body)
	}
	var list []sessionInfo
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatalf("GET /sessions: %v in %q", err, body)
	}
	return list
}

func TestCommandLineErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "give a command: the commands are serve (zkmodel serve [flags]: the model on TCP with an HTTP control endpoint; zkmodel serve -h lists its flags), zkserver (zkmodel zkserver {start|start-foreground|stop|status|restart|print-cmd|version} [zoo.cfg]: ZooKeeper's server script on the model, which dropin/bin/zkServer.sh runs), merge (zkmodel merge REPORT.json…: one verdict from the parts of a checker search split with -check.shard) and version (zkmodel version: the module's version)"},
		{[]string{"version", "extra"}, `version takes no arguments, got ["extra"]`},
		{[]string{"run"}, `unknown command "run": the commands are serve (`},
		{[]string{"serve", "-addr", "2181"}, `-addr "2181": want host:port`},
		{[]string{"serve", "-addr", ":2181"}, `-addr ":2181": give a host`},
		{[]string{"serve", "-control", "127.0.0.1:99999"}, `-control "127.0.0.1:99999": port "99999": want a number from 0 to 65535`},
		{[]string{"serve", "-seed", "x"}, `invalid value "x" for flag -seed`},
		{[]string{"serve", "-tick", "0s"}, "-tick 0s: want at least 1ms"},
		{[]string{"serve", "-nope"}, "flag provided but not defined: -nope"},
		{[]string{"serve", "extra"}, `unexpected argument "extra"`},
		{[]string{"serve", "-addr", "256.0.0.1:0"}, "-addr 256.0.0.1:0"},
		{[]string{"serve", "-super-digest", "super:secret"}, `-super-digest "super:secret": want user:base64(sha1(user:password))`},
		{[]string{"serve", "-super-digest", ":" + zk.DigestACL(zk.PermAll, "super", "secret")[0].ID[6:]}, "want user:base64"},
		{[]string{"serve", "-container-check-interval", "0s"}, "-container-check-interval 0s: want at least 1ms"},
		{[]string{"serve", "-4lw-whitelist", "srvr,kill"}, `-4lw-whitelist "srvr,kill": "kill" is no four-letter word of ZooKeeper 3.8: give * or some of conf,cons,`},
	} {
		var stdout, stderr strings.Builder
		err := run(context.Background(), tc.args, &stdout, &stderr)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q) = %v, want a usage error containing %q", tc.args, err, tc.want)
		}
		if stdout.Len() > 0 {
			t.Errorf("run(%q) printed %q before failing", tc.args, stdout.String())
		}
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"serve", "-h"}} {
		var stdout strings.Builder
		if err := run(context.Background(), args, &stdout, io.Discard); err != nil {
			t.Errorf("run(%q) = %v, want nil", args, err)
		}
		for _, want := range []string{"POST /expire?session=", "POST /drop?session=", "POST /advance?by=", "GET  /dump", "GET  /sessions", "-control host:port", "-seed", "-4lw-whitelist", "zkmodel zkserver {start|start-foreground|"} {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("run(%q) printed no %q in:\n%s", args, want, stdout.String())
			}
		}
	}
}

// A port in use is a clear error (no usage error: it names the port and what to do; exit status 2), and
// neither port is left listening.
func TestPortInUse(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	free := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().String()
	}
	for _, flagName := range []string{"addr", "control"} {
		other := free()
		args := []string{"serve", "-addr", other, "-control", taken.Addr().String()}
		if flagName == "addr" {
			args = []string{"serve", "-addr", taken.Addr().String(), "-control", other}
		}
		err := run(context.Background(), args, io.Discard, io.Discard)
		host, port, _ := net.SplitHostPort(taken.Addr().String())
		want := fmt.Sprintf("-%s %s: port %s is in use on %s, by another process (a ZooKeeper or zkmodel serve left running?): stop that process, or give -%s a free port (%s:0 picks one)",
			flagName, taken.Addr(), port, host, flagName, host)
		var e exitError
		ok := errors.As(err, &e)
		if errors.Is(err, errUsage) || !ok || e.code != 2 || err.Error() != want {
			t.Errorf("run(%q) = %v, want exit status 2 and no usage error but\n%s", args, err, want)
		}
		l, err := net.Listen("tcp", other)
		if err != nil {
			t.Errorf("after the failed start, %s is still taken: %v", other, err)
			continue
		}
		l.Close()
	}
}

// The control endpoint lists, severs and expires a real client's session
// and moves the clock.
// TestServeOptions: the super user, TTL nodes and the container manager's interval reach the model.
func TestServeOptions(t *testing.T) {
	digest := zk.DigestACL(zk.PermAll, "super", "secret")[0].ID
	s := serveInProcess(t, "-addr", "127.0.0.1:0", "-super-digest", digest, "-extended-types", "-container-check-interval", "1s")
	conn, _ := connect(t, s.Addr)
	if _, err := conn.Create("/private", []byte("x"), 0, zk.DigestACL(zk.PermAll, "owner", "pw")); err != nil {
		t.Fatalf("create /private: %v", err)
	}
	if _, _, err := conn.Get("/private"); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("get /private without auth: %v, want zk.ErrNoAuth", err)
	}
	if err := conn.AddAuth("digest", []byte("super:secret")); err != nil {
		t.Fatal(err)
	}
	if data, _, err := conn.Get("/private"); err != nil || string(data) != "x" {
		t.Fatalf("get /private as super: %q, %v", data, err)
	}
	if _, err := conn.CreateTTL("/ttl", nil, zk.FlagTTL, zk.WorldACL(zk.PermAll), time.Second); err != nil {
		t.Fatalf("CreateTTL with -extended-types: %v", err)
	}
	if code, body := call(t, "POST", s.Control+"/advance?by=3s"); code != http.StatusOK {
		t.Fatalf("POST /advance: %d %s", code, body)
	}
	if ok, _, err := conn.Exists("/ttl"); err != nil || ok {
		t.Fatalf("exists /ttl 3 s after its 1 s TTL, with passes every 1 s: %v, %v; want gone", ok, err)
	}
}

func TestControl(t *testing.T) {
	s := serveInProcess(t, "-addr", "127.0.0.1:0", "-control", "127.0.0.1:0", "-seed", "7", "-tick", "100ms")
	if s.Seed != 7 || s.Tick != "100ms" || !strings.HasPrefix(s.Control, "http://127.0.0.1:") {
		t.Fatalf("startup line %+v", s)
	}
	conn, events := connect(t, s.Addr)
	if _, err := conn.Create("/e", []byte("x"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create /e: %v", err)
	}
	id := fmt.Sprintf("%#x", conn.SessionID())
	list := sessions(t, s.Control)
	if want := []sessionInfo{{ID: id, TimeoutMS: 2000, Ephemerals: 1, Connections: 1}}; !slices.Equal(list, want) {
		t.Fatalf("GET /sessions = %+v, want %+v", list, want)
	}

	// Drop: the client reconnects and keeps its session and its ephemeral.
	if code, body := call(t, "POST", s.Control+"/drop?session="+id); code != http.StatusOK || !strings.Contains(body, `"dropped":1`) {
		t.Fatalf("POST /drop: %d %s", code, body)
	}
	waitState(t, events, zk.StateDisconnected)
	waitState(t, events, zk.StateHasSession)
	if got := fmt.Sprintf("%#x", conn.SessionID()); got != id {
		t.Errorf("after /drop the session is %s, want the same %s", got, id)
	}
	if ok, _, err := conn.Exists("/e"); err != nil || !ok {
		t.Errorf("after /drop, exists /e = %v, %v; want true", ok, err)
	}

	// Advance: the clock moves; a connected session survives it.
	code, body := call(t, "POST", s.Control+"/advance?by=1500ms")
	if code != http.StatusOK || !strings.Contains(body, `"now":"2026-01-01T00:00:01.5Z"`) {
		t.Fatalf("POST /advance: %d %s", code, body)
	}
	if list := sessions(t, s.Control); len(list) != 1 || list[0].ID != id {
		t.Errorf("after /advance, GET /sessions = %+v, want %s still alive", list, id)
	}

	// Expire: the ephemeral goes and the client learns of the expiry.
	if code, body := call(t, "POST", s.Control+"/expire?session="+id); code != http.StatusOK {
		t.Fatalf("POST /expire: %d %s", code, body)
	}
	waitState(t, events, zk.StateExpired)
	code, dump := call(t, "GET", s.Control+"/dump")
	if code != http.StatusOK || strings.Contains(dump, "node /e ") || !strings.Contains(dump, "node /zookeeper ") {
		t.Errorf("GET /dump after /expire: %d\n%s", code, dump)
	}

	for _, tc := range []struct {
		method, path string
		code         int
		want         string
	}{
		{"POST", "/expire?session=" + id, http.StatusNotFound, "no live session " + id},
		{"POST", "/expire?session=zz", http.StatusBadRequest, `session "zz": want a session id`},
		{"POST", "/expire", http.StatusBadRequest, `session "": want a session id`},
		{"POST", "/drop?session=0x5", http.StatusNotFound, "session 0x5 has no open connection"},
		{"POST", "/advance?by=-1s", http.StatusBadRequest, `by="-1s": want a positive Go duration`},
		{"POST", "/advance", http.StatusBadRequest, `by="": want a positive Go duration`},
		{"GET", "/expire?session=" + id, http.StatusMethodNotAllowed, "GET /expire: /expire takes POST, its parameters in the URL's query, no body: POST /expire?session=0x… expires a session"},
		{"GET", "/nothing", http.StatusNotFound, "GET /nothing: no such endpoint; the control endpoint answers:\nGET /sessions"},
	} {
		code, body := call(t, tc.method, s.Control+tc.path)
		if code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("%s %s = %d %q, want %d with %q", tc.method, tc.path, code, body, tc.code, tc.want)
		}
	}
}

// TestControlWrongMethod: each route of the control endpoint, asked with the other method, answers 405 with an
// Allow header and a sentence giving the method and parameters to use; asked with its own method, it is no
// 404 or 405 (controlRoutes names the routes the mux has).
func TestControlWrongMethod(t *testing.T) {
	s := serveInProcess(t, "-addr", "127.0.0.1:0")
	for _, route := range controlRoutes {
		wrong := map[string]string{"GET": "POST", "POST": "GET"}[route.method]
		req, err := http.NewRequest(wrong, s.Control+route.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := fmt.Sprintf("zkmodel: %s %s: %s takes %s, its parameters in the URL's query, no body: %s\n", wrong, route.path, route.path, route.method, route.usage)
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != route.method || string(body) != want {
			t.Errorf("%s %s = %d (Allow %q) %q, want 405 (Allow %s) %q", wrong, route.path, resp.StatusCode, resp.Header.Get("Allow"), body, route.method, want)
		}
		if code, body := call(t, route.method, s.Control+route.path); code == http.StatusNotFound && strings.Contains(body, "no such endpoint") || code == http.StatusMethodNotAllowed {
			t.Errorf("%s %s = %d %q: controlRoutes names a route the endpoint does not have", route.method, route.path, code, body)
		}
	}
}

// observe runs the same client script on a fresh server with the given
// seed, pausing pause of wall time between steps, and returns what the
// server answered and its dump.
func observe(t *testing.T, seed string, pause time.Duration) string {
	s := serveInProcess(t, "-addr", "127.0.0.1:0", "-seed", seed)
	conn, _ := connect(t, s.Addr)
	var b strings.Builder
	fmt.Fprintf(&b, "session %#x\n", conn.SessionID())
	acl := zk.WorldACL(zk.PermAll)
	steps := []func() (any, error){
		func() (any, error) { return conn.Create("/a", []byte("1"), 0, acl) },
		func() (any, error) { return conn.Create("/a/n-", nil, zk.FlagSequence|zk.FlagEphemeral, acl) },
		func() (any, error) { return conn.Set("/a", []byte("2"), 0) },
		func() (any, error) { return conn.Create("/a/b", nil, 0, acl) },
		func() (any, error) { c, st, err := conn.Children("/a"); return fmt.Sprint(c, *st), err },
		func() (any, error) { d, st, err := conn.Get("/a"); return fmt.Sprint(string(d), *st), err },
	}
	for i, step := range steps {
		time.Sleep(pause)
		v, err := step()
		if st, ok := v.(*zk.Stat); ok {
			v = *st
		}
		fmt.Fprintf(&b, "step %d: %v %v\n", i, v, err)
	}
	_, dump := call(t, "GET", s.Control+"/dump")
	b.WriteString(dump)
	return b.String()
}

// The server's answers depend on the seed and the requests, not on wall
// time: the same script with and without pauses gets byte-identical
// answers (stats, ctime/mtime from the virtual clock, session ids) and
// leaves an identical state; another seed gives other session ids.
func TestAnswersIgnoreWallTime(t *testing.T) {
	quick := observe(t, "3", 0)
	slow := observe(t, "3", 300*time.Millisecond)
	if quick != slow {
		t.Errorf("answers changed with wall time:\n--- no pauses\n%s--- 300ms pauses\n%s", quick, slow)
	}
	if other := observe(t, "4", 0); other == quick {
		t.Errorf("seeds 3 and 4 gave the same session ids and answers:\n%s", other)
	}
}

// The built binary serves, and exits 0 on SIGTERM and on SIGINT.
func TestBinarySignals(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "zkmodel")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		cmd := exec.Command(bin, "serve", "-addr", "127.0.0.1:0")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill() }) // in case the test fails before the signal; harmless after Wait
		s := readStartup(t, stdout)
		conn, _ := connect(t, s.Addr)
		if _, err := conn.Create("/alive", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Errorf("create /alive on the binary: %v", err)
		}
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Errorf("after %v: %v, want exit status 0; stderr:\n%s", sig, err, stderr.String())
		}
		conn.Close()
	}
}

// TestVersionCommand: zkmodel version prints the module's version, the one CHANGELOG.md's latest entry names.
func TestVersionCommand(t *testing.T) {
	var stdout strings.Builder
	if err := run(context.Background(), []string{"version"}, &stdout, io.Discard); err != nil {
		t.Fatal(err)
	}
	if got, want := stdout.String(), "zkmodel "+zkmodel.Version+"\n"; got != want || !strings.HasPrefix(zkmodel.Version, "v") {
		t.Errorf("zkmodel version printed %q, want %q", got, want)
	}
}
