package clients

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkmodel/zkmodel/realzk"
)

// reconfigSuper is the super user of the reconfig targets, as user:password.
const reconfigSuper = "super:reconfig-secret"

// reconfigTarget is a 3-server ensemble that takes reconfigs from reconfigSuper.
type reconfigTarget struct {
	name  string
	addrs []string // the servers' client addresses; server i's id is i+1
	// stop stops server i (SIGKILL on real, the control endpoint's /stop on the model); start starts it
	// again and returns once it serves.
	stop, start func(i int) error
}

// reconfigTargets starts a real 3-server ZooKeeper 3.8 with reconfigEnabled=true and `zkmodel serve -reconfig`
// with three servers (the built binary), both with reconfigSuper as their super user and every four-letter
// word allowed; both are closed when the test ends.
func reconfigTargets(ctx context.Context, t *testing.T) []reconfigTarget {
	t.Helper()
	user, password, _ := strings.Cut(reconfigSuper, ":")
	digest := zk.DigestACL(zk.PermAll, user, password)[0].ID
	real, err := realzk.Start(ctx, realzk.Config{ExtraConfig: map[string]string{"reconfigEnabled": "true"},
		SystemProperties: map[string]string{realzk.SuperDigestProperty: digest}})
	if err != nil {
		t.Fatalf("start a real ensemble with reconfigEnabled=true: %v", err)
	}
	t.Cleanup(func() {
		if err := real.Close(); err != nil {
			t.Errorf("close the real ensemble: %v", err)
		}
	})
	fake, stop := startServe(ctx, t, "-addr", "127.0.0.1:0,127.0.0.1:0,127.0.0.1:0", "-control", "127.0.0.1:0",
		"-reconfig", "-super-digest", digest, "-4lw-whitelist", "*")
	t.Cleanup(stop)
	// The stand-in as go-zookeeper's harness starts it: zoo.cfg with reconfigEnabled, the super digest in
	// SERVER_JVMFLAGS, a server stopped by SIGKILL and started by running zkServer.sh again.
	standin := startStandin(ctx, t, 3, "-D"+realzk.SuperDigestProperty+"="+digest, "reconfigEnabled=true")
	return []reconfigTarget{
		{"real, reconfigEnabled=true", real.Addrs(), real.Kill, func(i int) error { return real.Restart(ctx, i) }},
		{"zkmodel serve -reconfig", strings.Split(fake.Addr, ","), serveControl(ctx, fake.Control, "stop"), serveControl(ctx, fake.Control, "start")},
		{"zkServer.sh stand-in, reconfigEnabled=true", standin.addrs, standin.stop, func(i int) error { return standin.start(ctx, i) }},
	}
}

// TestReconfig: kazoo's reconfig and go-zookeeper's IncrementalReconfig and Reconfig get the same from
// `zkmodel serve -reconfig` and from the zkServer.sh stand-in as from a real 3-server ZooKeeper 3.8 with reconfigEnabled=true (what each prints
// holds no port, id or version, so that both sides print alike; the real side runs first, so its answers are
// what the model's are held to).
func TestReconfig(t *testing.T) {
	needKazoo(t, "kazoo.client")
	ctx, cancel := context.WithTimeout(context.Background(), 2*scenarioTimeout)
	t.Cleanup(cancel) // after the targets' own cleanups: serve is stopped by SIGTERM, not killed by ctx
	targets := reconfigTargets(ctx, t)
	same := func(t *testing.T, want string, scenario func(tg reconfigTarget) string) {
		t.Helper()
		for _, tg := range targets {
			got := scenario(tg)
			t.Logf("%s (%s):\n%s", tg.name, strings.Join(tg.addrs, ","), got)
			if got != want {
				t.Errorf("%s printed\n%s\nwant\n%s", tg.name, got, want)
			}
		}
	}
	// kazoo: NoAuth without the super user, BadArguments for malformed servers (even without it), a
	// marshalling error for a server id that is not a number, BadVersion from a wrong version, the new
	// configuration in the reply, the membership restored.
	t.Run("kazoo", func(t *testing.T) {
		const want = "reconfig without super auth: NoAuthError\nmalformed joining without super auth: BadArgumentsError\n" +
			"servers: 3, all participants: True\nversion is the mzxid: True\njoining garbage: BadArgumentsError\n" +
			"leaving x: MarshallingError\nfrom a wrong version: BadVersionError\nleaving all but one: BadArgumentsError\n" +
			"joined: '0.0.0.0:40100', the reply's stat is the node's: True, version -1: True\nleft: back as before: True\n" +
			"whole: the same servers: True\nwhole garbage: BadArgumentsError\n"
		same(t, want, func(tg reconfigTarget) string {
			out, err := exec.CommandContext(ctx, python, filepath.Join("python", "kazoo_reconfig.py"), strings.Join(tg.addrs, ","), reconfigSuper).Output()
			if err != nil {
				t.Errorf("kazoo_reconfig.py on %s: %v\n%s", tg.name, err, out)
			}
			return string(out)
		})
	})
	// go-zookeeper, on the same ensembles after kazoo restored them: a follower removed and joined again,
	// the quorum counted over the new participants only.
	t.Run("go-zookeeper", func(t *testing.T) {
		const want = "join without super auth: zk: not authenticated\n" +
			"a whole garbage configuration without super auth: invalid arguments\n" +
			"leave a follower from a wrong version: zk: version conflict\n" +
			"leave a follower: ok, the reply is /zookeeper/config: true\n" +
			"/zookeeper/config: 2 servers, the follower's line gone: true\n" +
			"conf on the leader: 2 servers, the follower's line gone: true\n" +
			"srvr on the removed follower: Mode: follower\n" +
			"leave the other follower for a server that does not run: code -13 (NEWCONFIGNOQUORUM)\n" +
			"leave the other follower too: invalid arguments\n" +
			"/zookeeper/config unchanged by the refused ones: true\n" +
			"the other follower stops: the leader and the removed follower serve no more\n" +
			"it starts again: srvr modes follower,follower,leader\n" +
			"the follower joins again without a client address: invalid arguments\n" +
			"the follower joins again: ok, /zookeeper/config lists it and the others as at first: true\n" +
			"the whole configuration again: ok, /zookeeper/config as at first: true\n"
		same(t, want, func(tg reconfigTarget) string { return goZookeeperReconfig(ctx, t, tg) })
	})
}

// goZookeeperReconfig reconfigures tg through go-zookeeper, connected to its leader alone (which every
// configuration keeps), and returns what it saw, one fact a line.
func goZookeeperReconfig(ctx context.Context, t *testing.T, tg reconfigTarget) string {
	t.Helper()
	var b strings.Builder
	outcome := func(what string, err error) {
		switch {
		case err == nil:
			fmt.Fprintf(&b, "%s: ok\n", what)
		case err.Error() == fmt.Sprintf("unknown error: %v", zk.ErrCode(-13)):
			fmt.Fprintf(&b, "%s: code -13 (NEWCONFIGNOQUORUM)\n", what) // go-zookeeper names no error for it
		default:
			fmt.Fprintf(&b, "%s: %v\n", what, err)
		}
	}
	leader, follower, other := -1, -1, -1
	for i, addr := range tg.addrs {
		mode, err := realzk.ServerMode(ctx, addr)
		if err != nil {
			t.Fatalf("%s: srvr on server %d: %v", tg.name, i, err)
		}
		switch {
		case mode == "leader":
			leader = i
		case follower < 0:
			follower = i
		default:
			other = i
		}
	}
	if leader < 0 || other < 0 {
		t.Fatalf("%s: no leader and two followers among %q", tg.name, tg.addrs)
	}
	conn, events, err := zk.Connect([]string{tg.addrs[leader]}, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(quietLogger{}))
	if err != nil {
		t.Fatalf("%s: connect: %v", tg.name, err)
	}
	defer conn.Close()
	for session := false; !session; {
		select {
		case ev := <-events:
			session = ev.State == zk.StateHasSession
		case <-ctx.Done():
			t.Fatalf("%s: no session with the leader (%s): %v", tg.name, tg.addrs[leader], ctx.Err())
		}
	}
	config := func() ([]string, *zk.Stat) {
		t.Helper()
		if _, err := conn.Sync("/zookeeper/config"); err != nil {
			t.Fatalf("%s: sync: %v", tg.name, err)
		}
		data, st, err := conn.Get("/zookeeper/config")
		if err != nil {
			t.Fatalf("%s: get /zookeeper/config: %v", tg.name, err)
		}
		return serverLines(string(data)), st
	}
	before, st := config()
	if len(before) != 3 {
		t.Fatalf("%s: /zookeeper/config lists %q, want three servers", tg.name, before)
	}
	line := func(i int) string {
		return before[slices.IndexFunc(before, func(l string) bool { return strings.HasPrefix(l, fmt.Sprintf("server.%d=", i+1)) })]
	}
	id := func(i int) string { return fmt.Sprint(i + 1) }
	const phantom = "server.120=127.0.0.1:40120:40121;40122" // a server neither ensemble runs

	_, err = conn.IncrementalReconfig([]string{phantom}, nil, -1)
	outcome("join without super auth", err)
	_, err = conn.Reconfig([]string{"garbage"}, -1)
	outcome("a whole garbage configuration without super auth", err)
	user, password, _ := strings.Cut(reconfigSuper, ":")
	if err := conn.AddAuth("digest", []byte(user+":"+password)); err != nil {
		t.Fatalf("%s: addAuth: %v", tg.name, err)
	}
	_, err = conn.IncrementalReconfig(nil, []string{id(follower)}, st.Mzxid+1)
	outcome("leave a follower from a wrong version", err)

	rst, err := conn.IncrementalReconfig(nil, []string{id(follower)}, st.Mzxid)
	removed, st2 := config()
	if err != nil {
		outcome("leave a follower", err)
	} else {
		fmt.Fprintf(&b, "leave a follower: ok, the reply is /zookeeper/config: %v\n", *rst == *st2)
	}
	fmt.Fprintf(&b, "/zookeeper/config: %d servers, the follower's line gone: %v\n", len(removed), !slices.Contains(removed, line(follower)))
	conf, err := realzk.FourLetter(ctx, tg.addrs[leader], "conf")
	if err != nil {
		t.Fatalf("%s: conf on the leader: %v", tg.name, err)
	}
	confServers := serverLines(conf)
	fmt.Fprintf(&b, "conf on the leader: %d servers, the follower's line gone: %v\n", len(confServers), !slices.Contains(confServers, line(follower)))
	mode, err := realzk.ServerMode(ctx, tg.addrs[follower])
	if err != nil {
		mode = err.Error()
	}
	fmt.Fprintf(&b, "srvr on the removed follower: Mode: %s\n", mode)

	_, err = conn.IncrementalReconfig([]string{phantom}, []string{id(other)}, -1)
	outcome("leave the other follower for a server that does not run", err)
	_, err = conn.IncrementalReconfig(nil, []string{id(other)}, -1)
	outcome("leave the other follower too", err)
	after, st3 := config()
	fmt.Fprintf(&b, "/zookeeper/config unchanged by the refused ones: %v\n", slices.Equal(after, removed) && st3.Mzxid == st2.Mzxid)

	// Two participants are left: without the other follower no majority runs, and the removed follower,
	// which still runs, does not count.
	if err := tg.stop(other); err != nil {
		t.Fatalf("%s: stop server %d: %v", tg.name, other, err)
	}
	for _, i := range []int{leader, follower} {
		for !strings.Contains(srvr(ctx, t, tg.addrs[i]), "not currently serving") {
			time.Sleep(100 * time.Millisecond) // a real leader notices within about 0.5 s
		}
	}
	b.WriteString("the other follower stops: the leader and the removed follower serve no more\n")
	if err := tg.start(other); err != nil {
		t.Fatalf("%s: start server %d again: %v", tg.name, other, err)
	}
	var modes []string
	for _, addr := range tg.addrs {
		mode := ""
		for mode == "" { // until it serves
			if mode = strings.TrimPrefix(firstLine(srvr(ctx, t, addr), "Mode: "), "Mode: "); mode == "" {
				time.Sleep(100 * time.Millisecond)
			}
		}
		modes = append(modes, mode)
	}
	slices.Sort(modes)
	fmt.Fprintf(&b, "it starts again: srvr modes %s\n", strings.Join(modes, ","))

	// A joining server's line needs a client address: the real ensemble's lines have none (realzk's zoo.cfg
	// gives clientPort alone), the model's have theirs.
	bare, _, _ := strings.Cut(line(follower), ";")
	_, err = conn.IncrementalReconfig([]string{bare}, nil, -1)
	outcome("the follower joins again without a client address", err)
	rejoin := bare + ";" + tg.addrs[follower]
	if _, err := conn.IncrementalReconfig([]string{rejoin}, nil, -1); err != nil {
		outcome("the follower joins again", err)
	} else {
		got, _ := config()
		fmt.Fprintf(&b, "the follower joins again: ok, /zookeeper/config lists it and the others as at first: %v\n",
			len(got) == 3 && slices.Contains(got, rejoin) && slices.Contains(got, line(leader)) && slices.Contains(got, line(other)))
	}
	if _, err := conn.Reconfig(before, -1); err != nil {
		outcome("the whole configuration again", err)
	} else {
		got, _ := config()
		fmt.Fprintf(&b, "the whole configuration again: ok, /zookeeper/config as at first: %v\n", slices.Equal(got, before))
	}
	return b.String()
}

// serverLines returns the server.N lines of a configuration (/zookeeper/config's data, or conf's answer).
func serverLines(text string) []string {
	var out []string
	for l := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(l, "server.") {
			out = append(out, l)
		}
	}
	return out
}

// srvr returns the srvr answer of the server at addr ("" while it refuses connections); the test fails
// when ctx ends.
func srvr(ctx context.Context, t *testing.T, addr string) string {
	t.Helper()
	if ctx.Err() != nil {
		t.Fatalf("srvr on %s: %v", addr, ctx.Err())
	}
	answer, _ := realzk.FourLetter(ctx, addr, "srvr")
	return answer
}

// firstLine returns the first line of text that starts with prefix, or "".
func firstLine(text, prefix string) string {
	for l := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}
