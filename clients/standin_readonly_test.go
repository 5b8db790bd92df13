package clients

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/internal/pyclients"
	"github.com/zkmodel/zkmodel/internal/rawzk"
	"github.com/zkmodel/zkmodel/jute"
	"github.com/zkmodel/zkmodel/realzk"
)

// TestStandInReadOnlyMode: a 3-server cluster with -Dreadonlymode.enabled=true, through Debian's zkServer.sh
// and through the stand-in from the same zoo.cfg files, answers alike (readOnlyScenario says what is asked)
// when one server is left running alone: it is read-only (isro "ro"); a client that does not allow read-only,
// or resumes a session of the ensemble, sees the connection close; one that allows it gets a read-only session
// when localSessionsEnabled=true (reads served, every write NotReadOnly, -119), a bare NotReadOnly reply header
// otherwise. When the quorum is back the read-only connections close, the read-only session is expired, the
// ensemble's session resumes with its ephemeral node, and new sessions are read-write. A zoo.cfg line
// readonlymode.enabled=true does nothing (3.8 reads only the system property).
func TestStandInReadOnlyMode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*scenarioTimeout)
	t.Cleanup(cancel)
	// What Debian's zkServer.sh gives (measured; the real side runs first and is held to it too).
	const (
		refused = "connection closed without an answer"
		// mntr's keys (those of a follower but zk_peer_state and zk_quorum_size, in their own order) and srvr's
		// extra line on a read-only server.
		roWords  = "  mntr zk_server_state read-only, keys in order: 3c6d0770, 15 per-namespace keys: 71cf85db; srvr's second line \"READ-ONLY mode; serving only read-only clients\"\n"
		rwLine   = "session (the one asked for: false), readOnly byte false, exists /g 0, an ephemeral create 0"
		notServe = "quorum lost: isro null, srvr mode This ZooKeeper instance is not currently serving requests; G's connection closed: true\n" +
			"  mntr This ZooKeeper instance is not currently serving requests; srvr's second line \"\"\n" +
			"connect without readOnly: " + refused + "\n" +
			"connect with readOnly: " + refused + "\n"
		gRefused = "resume G with readOnly: " + refused + "\n" +
			"resume G without readOnly: " + refused + "\n"
		back = "resume G: session (the one asked for: true), readOnly byte false, exists /g 0, an ephemeral create 0\n" +
			"connect with readOnly: " + rwLine + "\n" +
			"connect without readOnly: " + rwLine + "\n"
		local = "quorum lost: isro ro, srvr mode read-only; G's connection closed: true\n" + roWords +
			"connect without readOnly: " + refused + "\n" +
			"connect with readOnly: session (the one asked for: false), readOnly byte true, exists /g 0, an ephemeral create -119\n" +
			"  the session id's top byte: 1 (G's: 1)\n" +
			"  getData /: 0\n  exists /x: -101\n  getChildren /: 0\n" +
			"  create /x: -119\n  create2 /x ephemeral: -119\n  setData /: -119\n  delete /g: -119\n  sync /: -119\n" +
			"  setACL /: -119\n  multi create: -119\n  multiRead getData: 0\n" +
			"resume it with readOnly on a new connection: session (the one asked for: true), readOnly byte true, exists /g 0, an ephemeral create -119\n" +
			"  the old connection closed: true\n" +
			"resume it without readOnly: " + refused + "\n" +
			"another read-only session's closeSession: 0 <nil>, then the connection closed: true; resuming it: refused (session expired)\n" +
			gRefused +
			"quorum back: isro rw\n" +
			"  the read-only connection closed: true\n" +
			"resume the read-only session with readOnly: refused (session expired)\n" +
			back
		global = "quorum lost: isro ro, srvr mode read-only; G's connection closed: true\n" + roWords +
			"connect without readOnly: " + refused + "\n" +
			"connect with readOnly: a NotReadOnly (-119) reply header; the connection closed within 1 s: false; then getData / 0 read reply: EOF\n" +
			gRefused + "quorum back: isro rw\n" + back
	)
	for _, sc := range []struct {
		name  string
		flags string
		extra []string
		want  string
	}{
		{"local sessions", "-Dreadonlymode.enabled=true", []string{"localSessionsEnabled=true", "localSessionsUpgradingEnabled=true"}, local},
		{"global sessions", "-Dreadonlymode.enabled=true", nil, global},
		// 3.8 reads no zoo.cfg key: the line becomes the system property zookeeper.readonlymode.enabled.
		{"zoo.cfg key", "", []string{"readonlymode.enabled=true", "localSessionsEnabled=true", "localSessionsUpgradingEnabled=true"},
			notServe + gRefused + "quorum back: isro rw\n" + back},
	} {
		for _, side := range standinSides {
			t.Run(sc.name+"/"+side.name, func(t *testing.T) {
				s := startTwoOfThree(ctx, t, clusterConfig{script: side.script, jvmFlags: sc.flags, extra: sc.extra})
				got := readOnlyScenario(ctx, t, s)
				if got != sc.want {
					t.Errorf("%s printed\n%s\nwant\n%s", side.name, got, sc.want)
				}
			})
		}
	}
}

// readOnlyScenario, with servers 1 and 2 of s started, makes a session G with an ephemeral node /g, stops server 2
// so that server 1 is left without a quorum, and reports, a line each, what a client sees there; then it
// starts server 2 again and reports what the clients see once the quorum is back.
func readOnlyScenario(ctx context.Context, t *testing.T, s *standin) string {
	t.Helper()
	var out strings.Builder
	addr := s.addrs[0]
	p, g, gresp := quorumSession(ctx, t, addr)
	defer g.Close()
	if code, err := g.Do(jute.Request{Header: jute.RequestHeader{Type: jute.OpCreate}, Path: "/g", ACL: zk.WorldACL(zk.PermAll), Flags: 1}); err != nil || code != 0 {
		t.Fatalf("create the ephemeral /g: %d %v", code, err)
	}
	if err := s.stop(1); err != nil {
		t.Fatal(err)
	}
	isro := waitWord(ctx, t, addr, "isro", "ro", 10*time.Second)
	fmt.Fprintf(&out, "quorum lost: isro %s, srvr mode %s; G's connection closed: %t\n", isro, srvrMode(ctx, addr), waitClosed(ctx, g))
	fmt.Fprintf(&out, "  %s\n", mntrState(ctx, addr))
	fmt.Fprintf(&out, "connect without readOnly: %s\n", p.outcome(false, 0, nil))
	b, resp, what := p.dial(true, 0, nil)
	fmt.Fprintf(&out, "connect with readOnly: %s\n", what)
	var resumed *rawzk.Bare
	if b != nil {
		defer b.Close()
		// A session id's top byte is the id of the server that made it (server 1 here, and G's too).
		fmt.Fprintf(&out, "  the session id's top byte: %d (G's: %d)\n", uint64(resp.SessionID)>>56, uint64(gresp.SessionID)>>56)
		acl := zk.WorldACL(zk.PermAll)
		for _, r := range []struct {
			name string
			req  jute.Request
		}{
			{"getData /", jute.Request{Header: jute.RequestHeader{Type: jute.OpGetData}, Path: "/"}},
			{"exists /x", jute.Request{Header: jute.RequestHeader{Type: jute.OpExists}, Path: "/x"}},
			{"getChildren /", jute.Request{Header: jute.RequestHeader{Type: jute.OpGetChildren2}, Path: "/"}},
			{"create /x", jute.Request{Header: jute.RequestHeader{Type: jute.OpCreate}, Path: "/x", ACL: acl}},
			{"create2 /x ephemeral", jute.Request{Header: jute.RequestHeader{Type: jute.OpCreate2}, Path: "/x", ACL: acl, Flags: 1}},
			{"setData /", jute.Request{Header: jute.RequestHeader{Type: jute.OpSetData}, Path: "/", Version: -1}},
			{"delete /g", jute.Request{Header: jute.RequestHeader{Type: jute.OpDelete}, Path: "/g", Version: -1}},
			{"sync /", jute.Request{Header: jute.RequestHeader{Type: jute.OpSync}, Path: "/"}},
			{"setACL /", jute.Request{Header: jute.RequestHeader{Type: jute.OpSetACL}, Path: "/", ACL: acl, Version: -1}},
			{"multi create", jute.Request{Header: jute.RequestHeader{Type: jute.OpMulti}, Ops: []jute.Request{{Header: jute.RequestHeader{Type: jute.OpCreate}, Path: "/y", ACL: acl}}}},
			{"multiRead getData", jute.Request{Header: jute.RequestHeader{Type: jute.OpMultiRead}, Ops: []jute.Request{{Header: jute.RequestHeader{Type: jute.OpGetData}, Path: "/"}}}},
		} {
			code, err := b.Do(r.req)
			if err != nil {
				fmt.Fprintf(&out, "  %s: %v\n", r.name, err)
				break
			}
			fmt.Fprintf(&out, "  %s: %d\n", r.name, code)
		}
		resumed, _, what = p.dial(true, resp.SessionID, resp.Passwd)
		fmt.Fprintf(&out, "resume it with readOnly on a new connection: %s\n", what)
		if resumed != nil {
			defer resumed.Close()
		}
		fmt.Fprintf(&out, "  the old connection closed: %t\n", waitClosed(ctx, b))
		fmt.Fprintf(&out, "resume it without readOnly: %s\n", p.outcome(false, resp.SessionID, resp.Passwd))
		if c, cresp, _ := p.dial(true, 0, nil); c != nil {
			code, err := c.Do(jute.Request{Header: jute.RequestHeader{Type: jute.OpCloseSession}})
			fmt.Fprintf(&out, "another read-only session's closeSession: %d %v, then the connection closed: %t; resuming it: %s\n",
				code, err, waitClosed(ctx, c), p.outcome(true, cresp.SessionID, cresp.Passwd))
			c.Close()
		}
	}
	fmt.Fprintf(&out, "resume G with readOnly: %s\n", p.outcome(true, gresp.SessionID, gresp.Passwd))
	fmt.Fprintf(&out, "resume G without readOnly: %s\n", p.outcome(false, gresp.SessionID, gresp.Passwd))
	if err := s.launch(ctx, 1); err != nil {
		t.Fatal(err)
	}
	isro = waitWord(ctx, t, addr, "isro", "rw", 60*time.Second)
	fmt.Fprintf(&out, "quorum back: isro %s\n", isro)
	if resumed != nil {
		fmt.Fprintf(&out, "  the read-only connection closed: %t\n", waitClosed(ctx, resumed))
		fmt.Fprintf(&out, "resume the read-only session with readOnly: %s\n", p.outcome(true, resp.SessionID, resp.Passwd))
	}
	fmt.Fprintf(&out, "resume G: %s\n", p.outcome(false, gresp.SessionID, gresp.Passwd))
	fmt.Fprintf(&out, "connect with readOnly: %s\n", p.outcome(true, 0, nil))
	fmt.Fprintf(&out, "connect without readOnly: %s\n", p.outcome(false, 0, nil))
	return out.String()
}

// startTwoOfThree writes the zoo.cfg files of a 3-server cluster (cfg.servers is ignored) and starts servers
// 1 and 2 through cfg.script; every process is killed when t ends.
func startTwoOfThree(ctx context.Context, t *testing.T, cfg clusterConfig) *standin {
	t.Helper()
	cfg.servers = 3
	s := writeCluster(ctx, t, cfg)
	t.Cleanup(func() {
		for i := range 3 {
			_ = s.stop(i)
		}
	})
	for i := range 2 {
		if err := s.launch(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// quorumSession waits for addr, one of two servers of three running, to serve read-write and returns a
// prober of it and a new session there.
func quorumSession(ctx context.Context, t *testing.T, addr string) (*prober, *rawzk.Bare, jute.ConnectResponse) {
	t.Helper()
	if isrw := waitWord(ctx, t, addr, "isro", "rw", 60*time.Second); isrw != "rw" {
		t.Fatalf("two servers of three started: isro answers %q, want rw", isrw)
	}
	p := &prober{ctx: ctx, addr: addr}
	b, resp, what := p.dial(false, 0, nil)
	if b == nil {
		t.Fatalf("a session on two servers of three: %s", what)
	}
	return p, b, resp
}

// waitClosed reports whether the server closes b's connection within 5 s.
func waitClosed(ctx context.Context, b *rawzk.Bare) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return b.WaitClosed(ctx)
}

// prober sends connect requests to one server and says what came back.
type prober struct {
	ctx    context.Context
	addr   string
	probes int // the ephemeral nodes /probe-N tried so far
}

// dial sends one connect request and returns the connection (nil when there is no session) and a line
// saying what came back: the session (whether it is the one asked for), the readOnly byte, whether /g
// exists and what an ephemeral create of a node of its own gets.
func (p *prober) dial(readOnly bool, session int64, passwd []byte) (*rawzk.Bare, jute.ConnectResponse, string) {
	ctx, cancel := context.WithTimeout(p.ctx, 20*time.Second)
	defer cancel()
	b, resp, err := rawzk.DialBare(ctx, p.addr, jute.ConnectRequest{TimeOut: 10000, SessionID: session, Passwd: passwd, HasReadOnly: true, ReadOnly: readOnly})
	if errors.Is(err, rawzk.ErrConnectNotReadOnly) {
		defer b.Close()
		wctx, wcancel := context.WithTimeout(p.ctx, time.Second)
		closed := b.WaitClosed(wctx)
		wcancel()
		code, derr := b.Do(jute.Request{Header: jute.RequestHeader{Type: jute.OpGetData}, Path: "/"})
		return nil, resp, fmt.Sprintf("%s; the connection closed within 1 s: %t; then getData / %d %v", describeConnectErr(err), closed, code, derr)
	}
	if err != nil {
		return nil, resp, describeConnectErr(err)
	}
	if resp.TimeOut <= 0 {
		b.Close()
		return nil, resp, "refused (session expired)"
	}
	g, err := b.Do(jute.Request{Header: jute.RequestHeader{Type: jute.OpExists}, Path: "/g"})
	if err != nil {
		g = -999
	}
	p.probes++
	code, err := b.Do(jute.Request{Header: jute.RequestHeader{Type: jute.OpCreate}, Path: fmt.Sprintf("/probe-%d", p.probes), ACL: zk.WorldACL(zk.PermAll), Flags: 1})
	if err != nil {
		code = -999
	}
	return b, resp, fmt.Sprintf("session (the one asked for: %t), readOnly byte %t, exists /g %d, an ephemeral create %d", resp.SessionID == session, resp.ReadOnly, g, code)
}

// outcome is dial's line, the connection closed.
func (p *prober) outcome(readOnly bool, session int64, passwd []byte) string {
	b, _, what := p.dial(readOnly, session, passwd)
	if b != nil {
		b.Close()
	}
	return what
}

func describeConnectErr(err error) string {
	switch {
	case errors.Is(err, rawzk.ErrConnectNotReadOnly):
		return "a NotReadOnly (-119) reply header"
	case errors.Is(err, io.EOF):
		return "connection closed without an answer"
	}
	return "error: " + err.Error()
}

// waitWord asks addr the four-letter word until it answers want (trimmed) or the wait ends, and returns the
// last answer.
func waitWord(ctx context.Context, t *testing.T, addr, word, want string, wait time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(wait)
	last := ""
	for {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		got, err := realzk.FourLetter(wctx, addr, word)
		cancel()
		last = strings.TrimSpace(got)
		if err != nil {
			last = "error: " + err.Error()
		}
		if last == want || time.Now().After(deadline) {
			return last
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// srvrMode is the Mode line of srvr's answer, or the first line when it has none.
func srvrMode(ctx context.Context, addr string) string {
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	got, err := realzk.FourLetter(wctx, addr, "srvr")
	if err != nil {
		return "error: " + err.Error()
	}
	for _, l := range strings.Split(got, "\n") {
		if m, ok := strings.CutPrefix(l, "Mode: "); ok {
			return m
		}
	}
	first, _, _ := strings.Cut(got, "\n")
	return strings.TrimSpace(first)
}

// TestStandInReadOnlyClients: kazoo (read_only=True) and zkCli.sh (-r) on the one server of three left running
// with -Dreadonlymode.enabled=true and localSessionsEnabled=true — through Debian's zkServer.sh, the stand-in
// from the same zoo.cfg files, and `zkmodel serve -readonly-mode -local-sessions` — all read, all get
// NotReadOnly for a write, and kazoo, still running when a second server starts, gets a new read-write
// session and writes.
func TestStandInReadOnlyClients(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*scenarioTimeout)
	t.Cleanup(cancel)
	needKazoo(t, "kazoo.client")
	// What Debian's zkServer.sh gives (measured; the real side runs first and is held to it too).
	const want = "zkCli -r get /ro: exit <nil>\n" +
		"  x\n" +
		"zkCli -r create /ro/cli: exit exit status 1\n" +
		"  Not a read-only call: /ro/cli\n" +
		"kazoo: connected: CONNECTED_RO\n" +
		"kazoo: get /ro: b'x'\n" +
		"kazoo: create: NotReadOnlyCallError\n" +
		"kazoo: set: NotReadOnlyCallError\n" +
		"kazoo: waiting\n" +
		"kazoo: read-write: CONNECTED, a new session: True, create done\n"
	for _, side := range standinSides {
		t.Run(side.name, func(t *testing.T) {
			s := startTwoOfThree(ctx, t, clusterConfig{script: side.script, jvmFlags: "-Dreadonlymode.enabled=true",
				extra: []string{"localSessionsEnabled=true", "localSessionsUpgradingEnabled=true"}})
			got := readOnlyClients(ctx, t, s.addrs[0], func() error { return s.stop(1) }, func() error { return s.launch(ctx, 1) })
			if got != want {
				t.Errorf("%s printed\n%s\nwant\n%s", side.name, got, want)
			}
		})
	}
	t.Run("zkmodel serve", func(t *testing.T) {
		fake, stop := startServe(ctx, t, "-addr", "127.0.0.1:0,127.0.0.1:0,127.0.0.1:0", "-control", "127.0.0.1:0",
			"-4lw-whitelist", "*", "-readonly-mode", "-local-sessions", "-clock", "wall") // read-only 2 s after the quorum is lost
		t.Cleanup(stop)
		stopServer, startServer := serveControl(ctx, fake.Control, "stop"), serveControl(ctx, fake.Control, "start")
		if err := stopServer(2); err != nil {
			t.Fatal(err)
		}
		addr, _, _ := strings.Cut(fake.Addr, ",")
		got := readOnlyClients(ctx, t, addr, func() error { return stopServer(1) }, func() error { return startServer(1) })
		if got != want {
			t.Errorf("zkmodel serve printed\n%s\nwant\n%s", got, want)
		}
	})
}

// readOnlyClients waits for addr, one of two servers of three running, to serve read-write and creates /ro;
// then it stops the other (stopSecond) and runs zkCli.sh and kazoo on addr, read-only, starting the other
// again (startSecond) while kazoo waits.
func readOnlyClients(ctx context.Context, t *testing.T, addr string, stopSecond, startSecond func() error) string {
	t.Helper()
	_, b, _ := quorumSession(ctx, t, addr)
	code, err := b.Do(jute.Request{Header: jute.RequestHeader{Type: jute.OpCreate}, Path: "/ro", Data: []byte("x"), ACL: zk.WorldACL(zk.PermAll)})
	b.Close()
	if err != nil || code != 0 {
		t.Fatalf("create /ro: %d %v", code, err)
	}
	if err := stopSecond(); err != nil {
		t.Fatal(err)
	}
	if isro := waitWord(ctx, t, addr, "isro", "ro", 30*time.Second); isro != "ro" {
		t.Fatalf("one server of three left: isro answers %q, want ro", isro)
	}
	var out strings.Builder
	for _, args := range [][]string{{"get", "/ro"}, {"create", "/ro/cli"}} {
		cmd := exec.CommandContext(ctx, zkCli, append([]string{"-server", addr, "-r"}, args...)...)
		got, err := cmd.CombinedOutput()
		fmt.Fprintf(&out, "zkCli -r %s: exit %v\n%s", strings.Join(args, " "), err, cliFacts(string(got)))
	}
	cmd := pyclients.Command(ctx, filepath.Join("python", "kazoo_readonly.py"), addr)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		fmt.Fprintf(&out, "kazoo: %s\n", lines.Text())
		if lines.Text() == "waiting" {
			if err := startSecond(); err != nil {
				t.Error(err)
			}
			stdin.Close()
		}
	}
	if err := cmd.Wait(); err != nil {
		fmt.Fprintf(&out, "kazoo: exit %v\n", err)
	}
	return out.String()
}

// cliFacts are the lines of zkCli.sh's output but its logger's, the address it connects to and its watcher's
// (the ConnectedReadOnly event, which its watcher thread prints, or not when the command ends the process first).
func cliFacts(out string) string {
	var b strings.Builder
	for _, l := range strings.Split(out, "\n") {
		if l == "" || strings.HasPrefix(l, "SLF4J:") || strings.HasPrefix(l, "Connecting to ") || l == "WATCHER::" ||
			strings.HasPrefix(l, "WatchedEvent ") {
			continue
		}
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}

// TestStandInReadOnlySASL: SASL logins on a read-only server (-Dreadonlymode.enabled=true, localSessionsEnabled,
// a JAAS file with user u, the SASL authProvider), with and without sessionRequireClientSASLAuth, through
// Debian's zkServer.sh and the stand-in from the same zoo.cfg files (readOnlySASL says what is asked): a read-only
// session logs in as on a read-write server (whoAmI sasl:u), a wrong password is AUTHFAILED (-115), or -124 when
// SASL is required, and the connection closes; when it is required an anonymous write gets -124, not
// NotReadOnly, and the connection closes; a logged-in session's write gets NotReadOnly.
func TestStandInReadOnlySASL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*scenarioTimeout)
	t.Cleanup(cancel)
	jaas, err := realzk.WriteJAAS(t.TempDir(), map[string]string{"u": "u-pw"})
	if err != nil {
		t.Fatal(err)
	}
	flags := "-Dreadonlymode.enabled=true -Djava.security.auth.login.config=" + jaas
	extra := []string{"localSessionsEnabled=true", "localSessionsUpgradingEnabled=true", "authProvider.1=" + saslAuthProvider}
	for _, sc := range []struct {
		name  string
		extra []string
		want  string
	}{
		{"SASL", nil, "anonymous: read-only session true, op 1: -119, op 4: 0, op 107: 0 ip:127.0.0.1\n" +
			"SASL u: read-only session true, login <nil>, op 1: -119, op 4: 0, op 107: 0 sasl:u ip:127.0.0.1\n" +
			"SASL u, a wrong password: read-only session true, login rawzk: SASL login as u: code -115, then the connection is closed\n"},
		{"sessionRequireClientSASLAuth", []string{"sessionRequireClientSASLAuth=true"},
			"anonymous: read-only session true, op 1: -124, then the connection is closed\n" +
				"SASL u: read-only session true, login <nil>, op 1: -119, op 4: 0, op 107: 0 sasl:u ip:127.0.0.1\n" +
				"SASL u, a wrong password: read-only session true, login rawzk: SASL login as u: code -124, then the connection is closed\n"},
	} {
		for _, side := range standinSides {
			t.Run(sc.name+"/"+side.name, func(t *testing.T) {
				s := startTwoOfThree(ctx, t, clusterConfig{script: side.script, jvmFlags: flags, extra: append(slices.Clone(extra), sc.extra...)})
				if got := readOnlySASL(ctx, t, s.addrs[0], func() error { return s.stop(1) }); got != sc.want {
					t.Errorf("%s printed\n%s\nwant\n%s", side.name, got, sc.want)
				}
			})
		}
	}
}

// readOnlySASL waits for addr, one of two servers of three running, to serve read-write, stops the other
// (stopSecond) and tries SASL logins on read-only sessions of addr, a line each.
func readOnlySASL(ctx context.Context, t *testing.T, addr string, stopSecond func() error) string {
	t.Helper()
	_, b, _ := quorumSession(ctx, t, addr)
	b.Close()
	if err := stopSecond(); err != nil {
		t.Fatal(err)
	}
	if isro := waitWord(ctx, t, addr, "isro", "ro", 30*time.Second); isro != "ro" {
		t.Fatalf("one server of three left: isro answers %q, want ro", isro)
	}
	var out strings.Builder
	for _, login := range []struct{ name, user, password string }{{"anonymous", "", ""}, {"SASL u", "u", "u-pw"}, {"SASL u, a wrong password", "u", "wrong"}} {
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		b, resp, err := rawzk.DialBare(cctx, addr, jute.ConnectRequest{TimeOut: 10000, HasReadOnly: true, ReadOnly: true})
		cancel()
		if err != nil {
			fmt.Fprintf(&out, "%s: connect %s\n", login.name, describeConnectErr(err))
			if b != nil {
				b.Close()
			}
			continue
		}
		fmt.Fprintf(&out, "%s: read-only session %t", login.name, resp.ReadOnly)
		if login.user != "" {
			fmt.Fprintf(&out, ", login %v", b.LoginDigestMD5(login.user, login.password))
		}
		for _, r := range []jute.Request{
			{Header: jute.RequestHeader{Type: jute.OpCreate}, Path: "/sasl", ACL: zk.WorldACL(zk.PermAll)},
			{Header: jute.RequestHeader{Type: jute.OpGetData}, Path: "/"},
			{Header: jute.RequestHeader{Type: jute.OpWhoAmI}},
		} {
			h, resp, err := b.Call(r)
			if err != nil { // EOF, or a broken pipe when the close came first: the connection closed
				out.WriteString(", then the connection is closed")
				break
			}
			fmt.Fprintf(&out, ", op %d: %d", r.Header.Type, h.Err)
			for _, ci := range resp.Clients {
				fmt.Fprintf(&out, " %s:%s", ci.AuthScheme, ci.User)
			}
		}
		out.WriteString("\n")
		b.Close()
	}
	return out.String()
}

// mntrState is mntr's zk_server_state line and its keys, in order (a digest of them), or the answer's first
// line when it has no zk_server_state; and srvr's second line.
func mntrState(ctx context.Context, addr string) string {
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	got, err := realzk.FourLetter(wctx, addr, "mntr")
	if err != nil {
		return "error: " + err.Error()
	}
	srvr, err := realzk.FourLetter(wctx, addr, "srvr")
	if err != nil {
		return "error: " + err.Error()
	}
	_, srvr, _ = strings.Cut(srvr, "\n")
	srvr, _, _ = strings.Cut(srvr, "\n")
	state := ""
	keys := fnv.New32a()
	var namespaces []string // in hash order on a real server, in path order on the model
	for _, l := range strings.Split(strings.TrimSpace(got), "\n") {
		k, v, _ := strings.Cut(l, "\t")
		switch {
		case k == "zk_server_state":
			state = v
		case strings.HasSuffix(k, "_per_namespace"):
			namespaces = append(namespaces, k)
			continue
		}
		io.WriteString(keys, k+"\n")
	}
	if state == "" {
		first, _, _ := strings.Cut(got, "\n")
		return fmt.Sprintf("mntr %s; srvr's second line %q", strings.TrimSpace(first), srvr)
	}
	slices.Sort(namespaces)
	nsKeys := fnv.New32a()
	io.WriteString(nsKeys, strings.Join(namespaces, "\n"))
	return fmt.Sprintf("mntr zk_server_state %s, keys in order: %08x, %d per-namespace keys: %08x; srvr's second line %q",
		state, keys.Sum32(), len(namespaces), nsKeys.Sum32(), srvr)
}
