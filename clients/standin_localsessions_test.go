package clients

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/internal/rawzk"
	"github.com/zkmodel/zkmodel/jute"
	"github.com/zkmodel/zkmodel/realzk"
)

// TestStandInLocalSessions: a 3-server cluster with localSessionsEnabled=true, through Debian's zkServer.sh and
// through the stand-in from the same zoo.cfg files, answers alike (localSessionScenario says what is asked): a
// new session is local to its server (no zxid, mntr's zk_local_sessions, resumed on that server only, closed
// and expired without a transaction); its ephemeral creates make it global first with
// localSessionsUpgradingEnabled=true (one more zxid, the same id, then it resumes anywhere), and get
// EphemeralOnLocalSession (-120) without (a multi: SessionExpired, -112, for its ephemeral create), a zxid
// spent and nothing created. When the quorum is lost and back, local sessions are gone. Without
// localSessionsEnabled every session is global.
func TestStandInLocalSessions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*scenarioTimeout)
	t.Cleanup(cancel)
	// What Debian's zkServer.sh gives (measured; the real side runs first and is held to it too).
	const (
		localConnect = "connect to s1: readOnly byte false, the id's top byte 1, zxids spent 0\n" +
			"  mntr: s1 global_sessions 0, local_sessions 2; s2 global_sessions 0, local_sessions 0; s3 global_sessions 0, local_sessions 0\n"
		rw = "  getData /: 0 <nil>, zxids 0\n" +
			"  create /lp: 0 <nil>, zxids 1\n" +
			"  setData /lp: 0 <nil>, zxids 1\n" +
			"  sync /: 0 <nil>, zxids 0\n"
		resumed        = "resumed (the one asked for: true), exists / 0 <nil>"
		quorumBack     = "s2 and s3 stopped: s1's isro null; s2 started again: s1's isro rw\n"
		closeAndExpiry = "a third one's closeSession: 0 <nil>, zxids 0, connection closed true; resume on s1: expired\n" +
			"a fourth with a timeout of 1000 ms, its connection closed: 4 s later, resume on s1: expired\n"
		upgrading = localConnect + rw +
			"  multi create /lm ephemeral: 0 <nil>, zxids 2, op 1 err 0\n" +
			"  create2 /le ephemeral: 0 <nil>, zxids 1, owner the session true\n" +
			"  create /lp/s sequential ephemeral: 0 <nil>, zxids 1\n" +
			"  exists /lm 0, ephemeral true, /le 0, ephemeral true\n" +
			"  mntr: s1 global_sessions 1, local_sessions 1; s2 global_sessions 1, local_sessions 0; s3 global_sessions 1, local_sessions 0\n" +
			"resume it on s2: " + resumed + "\n" +
			"resume it on s1: " + resumed + "\n" +
			"a second session (reads only): resume on s1: " + resumed + "\n" +
			"  resume on s2: expired\n" +
			"  resume on s1 again: " + resumed + "\n" +
			closeAndExpiry +
			"mntr: s1 global_sessions 1, local_sessions 2; s2 global_sessions 1, local_sessions 0; s3 global_sessions 1, local_sessions 0\n" +
			quorumBack +
			"  resume a local session of s1 made before on s1: expired\n" +
			"  resume the first session on s1: " + resumed + "\n"
		noUpgrading = localConnect + rw +
			"  multi create /lm ephemeral: 0 <nil>, zxids 1, op -1 err -112\n" +
			"  create2 /le ephemeral: -120 <nil>, zxids 1\n" +
			"  create /lp/s sequential ephemeral: -120 <nil>, zxids 1\n" +
			"  exists /lm -101, /le -101\n" +
			"  mntr: s1 global_sessions 0, local_sessions 2; s2 global_sessions 0, local_sessions 0; s3 global_sessions 0, local_sessions 0\n" +
			"resume it on s2: expired\n" +
			"resume it on s1: " + resumed + "\n" +
			"a second session (reads only): resume on s1: " + resumed + "\n" +
			"  resume on s2: expired\n" +
			"  resume on s1 again: " + resumed + "\n" +
			closeAndExpiry +
			"mntr: s1 global_sessions 0, local_sessions 3; s2 global_sessions 0, local_sessions 0; s3 global_sessions 0, local_sessions 0\n" +
			quorumBack +
			"  resume a local session of s1 made before on s1: expired\n" +
			"  resume the first session on s1: expired\n"
		global = "connect to s1: readOnly byte false, the id's top byte 1, zxids spent 1\n" +
			"  mntr: s1 global_sessions 2, local_sessions 0; s2 global_sessions 2, local_sessions 0; s3 global_sessions 2, local_sessions 0\n" +
			"  getData /: 0 <nil>, zxids 0\n" +
			"  create /lp: 0 <nil>, zxids 1\n" +
			"  setData /lp: 0 <nil>, zxids 1\n" +
			"  sync /: 0 <nil>, zxids 0\n" +
			"  multi create /lm ephemeral: 0 <nil>, zxids 1, op 1 err 0\n" +
			"  create2 /le ephemeral: 0 <nil>, zxids 1, owner the session true\n" +
			"  create /lp/s sequential ephemeral: 0 <nil>, zxids 1\n" +
			"  exists /lm 0, ephemeral true, /le 0, ephemeral true\n" +
			"  mntr: s1 global_sessions 2, local_sessions 0; s2 global_sessions 2, local_sessions 0; s3 global_sessions 2, local_sessions 0\n" +
			"resume it on s2: " + resumed + "\n" +
			"resume it on s1: " + resumed + "\n" +
			"a second session (reads only): resume on s1: " + resumed + "\n" +
			"  resume on s2: " + resumed + "\n" +
			"  resume on s1 again: " + resumed + "\n" +
			"a third one's closeSession: 0 <nil>, zxids 1, connection closed true; resume on s1: expired\n" +
			"a fourth with a timeout of 1000 ms, its connection closed: 4 s later, resume on s1: expired\n" +
			"mntr: s1 global_sessions 3, local_sessions 0; s2 global_sessions 3, local_sessions 0; s3 global_sessions 3, local_sessions 0\n" +
			quorumBack +
			"  resume a local session of s1 made before on s1: " + resumed + "\n" +
			"  resume the first session on s1: " + resumed + "\n"
	)
	for _, sc := range []struct {
		name  string
		extra []string
		want  string
	}{
		{"upgrading", []string{"localSessionsEnabled=true", "localSessionsUpgradingEnabled=true"}, upgrading},
		{"no upgrading", []string{"localSessionsEnabled=true", "localSessionsUpgradingEnabled=false"}, noUpgrading},
		// Without localSessionsEnabled, upgrading changes nothing: every session is global.
		{"global sessions", []string{"localSessionsUpgradingEnabled=true"}, global},
	} {
		for _, side := range standinSides {
			t.Run(sc.name+"/"+side.name, func(t *testing.T) {
				s := startCluster(ctx, t, clusterConfig{script: side.script, servers: 3, extra: sc.extra})
				got := localSessionScenario(ctx, t, s)
				if got != sc.want {
					t.Errorf("%s printed\n%s\nwant\n%s", side.name, got, sc.want)
				}
			})
		}
	}
}

// localSessionScenario makes sessions on server 1 (a follower) of s, all three running, and reports a line
// each what they can do, what the servers' mntr counts and where the sessions may be resumed; a watcher
// session on server 1 too counts the zxids each request spends.
func localSessionScenario(ctx context.Context, t *testing.T, s *standin) string {
	t.Helper()
	var out strings.Builder
	dial := func(addr string, timeout int32, sid int64, pw []byte) (*rawzk.Bare, jute.ConnectResponse, error) {
		dctx, dcancel := context.WithTimeout(ctx, 30*time.Second)
		defer dcancel()
		return rawzk.DialBare(dctx, addr, jute.ConnectRequest{TimeOut: timeout, SessionID: sid, Passwd: pw, HasReadOnly: true})
	}
	resume := func(server int, resp jute.ConnectResponse) string {
		b, got, err := dial(s.addrs[server-1], 10000, resp.SessionID, resp.Passwd)
		switch {
		case err != nil:
			return describeConnectErr(err)
		case got.TimeOut <= 0:
			b.Close()
			return "expired"
		}
		defer b.Close()
		code, err := b.Do(jute.Request{Header: jute.RequestHeader{Type: jute.OpExists}, Path: "/"})
		return fmt.Sprintf("resumed (the one asked for: %t), exists / %d %v", got.SessionID == resp.SessionID, code, err)
	}
	w, _, err := dial(s.addrs[0], 10000, 0, nil) // on l's server, which has applied l's writes when it answers
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	exists := func(path string) string {
		h, resp, err := w.Call(jute.Request{Header: jute.RequestHeader{Type: jute.OpExists}, Path: path})
		if err != nil {
			t.Fatalf("exists %s: %v", path, err)
		}
		if h.Err != 0 {
			return fmt.Sprint(h.Err)
		}
		return fmt.Sprintf("0, ephemeral %t", resp.Stat.EphemeralOwner != 0)
	}
	zxid := func() int64 {
		h, _, err := w.Call(jute.Request{Header: jute.RequestHeader{Type: jute.OpExists}, Path: "/"})
		if err != nil {
			t.Fatalf("exists /: %v", err)
		}
		return h.Zxid
	}
	sessions := func() string {
		var parts []string
		for i, a := range s.addrs {
			mntr, err := realzk.FourLetter(ctx, a, "mntr")
			if err != nil {
				t.Fatalf("mntr: %v", err)
			}
			var ms []string
			for _, line := range strings.Split(mntr, "\n") {
				k, v, _ := strings.Cut(line, "\t")
				if k == "zk_global_sessions" || k == "zk_local_sessions" {
					ms = append(ms, strings.TrimPrefix(k, "zk_")+" "+v)
				}
			}
			parts = append(parts, fmt.Sprintf("s%d %s", i+1, strings.Join(ms, ", ")))
		}
		return strings.Join(parts, "; ")
	}
	// A first write: a fresh follower answers zxid 0 until it has applied one.
	if code, err := w.Do(jute.Request{Header: jute.RequestHeader{Type: jute.OpCreate}, Path: "/w", ACL: zk.WorldACL(zk.PermAll)}); err != nil || code != 0 {
		t.Fatalf("create /w: %d %v", code, err)
	}
	z0 := zxid()
	l, lresp, err := dial(s.addrs[0], 10000, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fmt.Fprintf(&out, "connect to s1: readOnly byte %t, the id's top byte %d, zxids spent %d\n", lresp.ReadOnly, uint64(lresp.SessionID)>>56, zxid()-z0)
	fmt.Fprintf(&out, "  mntr: %s\n", sessions())
	acl := zk.WorldACL(zk.PermAll)
	ephemeral := jute.Request{Header: jute.RequestHeader{Type: jute.OpCreate}, Path: "/lm", ACL: acl, Flags: 1}
	for _, r := range []struct {
		name string
		req  jute.Request
	}{
		{"getData /", jute.Request{Header: jute.RequestHeader{Type: jute.OpGetData}, Path: "/"}},
		{"create /lp", jute.Request{Header: jute.RequestHeader{Type: jute.OpCreate}, Path: "/lp", ACL: acl}},
		{"setData /lp", jute.Request{Header: jute.RequestHeader{Type: jute.OpSetData}, Path: "/lp", Version: -1}},
		{"sync /", jute.Request{Header: jute.RequestHeader{Type: jute.OpSync}, Path: "/"}},
		{"multi create /lm ephemeral", jute.Request{Header: jute.RequestHeader{Type: jute.OpMulti}, Ops: []jute.Request{ephemeral}}},
		{"create2 /le ephemeral", jute.Request{Header: jute.RequestHeader{Type: jute.OpCreate2}, Path: "/le", ACL: acl, Flags: 1}},
		{"create /lp/s sequential ephemeral", jute.Request{Header: jute.RequestHeader{Type: jute.OpCreate}, Path: "/lp/s", ACL: acl, Flags: 3}},
	} {
		z := zxid()
		h, resp, err := l.Call(r.req)
		fmt.Fprintf(&out, "  %s: %d %v, zxids %d", r.name, h.Err, err, zxid()-z)
		for _, res := range resp.Results {
			fmt.Fprintf(&out, ", op %d err %d", res.Type, res.Err)
		}
		if r.name == "create2 /le ephemeral" && h.Err == 0 {
			fmt.Fprintf(&out, ", owner the session %t", resp.Stat.EphemeralOwner == lresp.SessionID)
		}
		fmt.Fprintln(&out)
	}
	fmt.Fprintf(&out, "  exists /lm %s, /le %s\n", exists("/lm"), exists("/le"))
	fmt.Fprintf(&out, "  mntr: %s\n", sessions())
	l.Close()
	fmt.Fprintf(&out, "resume it on s2: %s\n", resume(2, lresp))
	fmt.Fprintf(&out, "resume it on s1: %s\n", resume(1, lresp))
	l2, l2resp, err := dial(s.addrs[0], 10000, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	l2.Close()
	fmt.Fprintf(&out, "a second session (reads only): resume on s1: %s\n", resume(1, l2resp))
	fmt.Fprintf(&out, "  resume on s2: %s\n", resume(2, l2resp))
	fmt.Fprintf(&out, "  resume on s1 again: %s\n", resume(1, l2resp))
	l3, l3resp, err := dial(s.addrs[0], 10000, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	z := zxid()
	code, err := l3.Do(jute.Request{Header: jute.RequestHeader{Type: jute.OpCloseSession}})
	fmt.Fprintf(&out, "a third one's closeSession: %d %v, zxids %d, connection closed %t; resume on s1: %s\n", code, err, zxid()-z, waitClosed(ctx, l3), resume(1, l3resp))
	l4, l4resp, err := dial(s.addrs[0], 1000, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&out, "a fourth with a timeout of %d ms, its connection closed: ", l4resp.TimeOut)
	l4.Close()
	time.Sleep(4 * time.Second)
	fmt.Fprintf(&out, "4 s later, resume on s1: %s\n", resume(1, l4resp))
	fmt.Fprintf(&out, "mntr: %s\n", sessions())
	// The quorum lost and back: a new leader election restarts every server's session tracker.
	l5, l5resp, err := dial(s.addrs[0], 10000, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	l5.Close()
	for _, i := range []int{1, 2} {
		if err := s.stop(i); err != nil {
			t.Fatal(err)
		}
	}
	isro := waitWord(ctx, t, s.addrs[0], "isro", "null", 30*time.Second)
	if err := s.launch(ctx, 1); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&out, "s2 and s3 stopped: s1's isro %s; s2 started again: s1's isro %s\n", isro, waitWord(ctx, t, s.addrs[0], "isro", "rw", 60*time.Second))
	fmt.Fprintf(&out, "  resume a local session of s1 made before on s1: %s\n", resume(1, l5resp))
	fmt.Fprintf(&out, "  resume the first session on s1: %s\n", resume(1, lresp))
	return out.String()
}
