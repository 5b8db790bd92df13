package model_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/internal/rawzk"
	"github.com/zkmodel/zkmodel/jute"
	"github.com/zkmodel/zkmodel/model"
)

// TestLocalSessionsOnTheEnsemble: an emulated 3-server ensemble with WithLocalSessions (and
// WithLocalSessionsUpgrading) answers a wire client as 3.8 does (measured through
// clients.TestStandInLocalSessions): a new session is local to its server, spends no zxid and resumes on that
// server only; an ephemeral create gets EphemeralOnLocalSession (or, upgrading, makes the session global
// first, one more zxid, the same id); a new leader election ends every local session. Without
// WithLocalSessions every session is global. (s0's zk_local_sessions counts the session that reads the zxids too.)
func TestLocalSessionsOnTheEnsemble(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []model.Option
		want string
	}{
		{"upgrading", []model.Option{model.WithLocalSessions(), model.WithLocalSessionsUpgrading()},
			"connect zxids 0; create2 /e ephemeral 0 zxids 2, owner the session true; resume on s1: resumed; " +
				"a second one: resume on s1: expired, on s0: resumed; s0's zk_local_sessions 2; after an election: resume on s0: expired"},
		{"no upgrading", []model.Option{model.WithLocalSessions()},
			"connect zxids 0; create2 /e ephemeral -120 zxids 1; resume on s1: expired; " +
				"a second one: resume on s1: expired, on s0: resumed; s0's zk_local_sessions 3; after an election: resume on s0: expired"},
		{"global", nil,
			"connect zxids 1; create2 /e ephemeral 0 zxids 1, owner the session true; resume on s1: resumed; " +
				"a second one: resume on s1: resumed, on s0: resumed; s0's zk_local_sessions 0; after an election: resume on s0: resumed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := model.NewTestServer(t, append([]model.Option{model.WithEnsemble(3), model.WithFourLetterWords("mntr")}, tc.opts...)...)
			addrs, err := srv.ListenEnsemble(3)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			dial := func(member int, sid int64, passwd []byte) (*rawzk.Bare, jute.ConnectResponse) {
				b, resp, err := rawzk.DialBare(ctx, addrs[member], jute.ConnectRequest{TimeOut: 10000, SessionID: sid, Passwd: passwd})
				if err != nil {
					t.Fatalf("connect to s%d: %v", member, err)
				}
				return b, resp
			}
			resume := func(member int, resp jute.ConnectResponse) string {
				b, got := dial(member, resp.SessionID, resp.Passwd)
				b.Close()
				if got.TimeOut <= 0 {
					return "expired"
				}
				return "resumed"
			}
			w, _ := dial(0, 0, nil) // its replies carry the server's zxid
			defer w.Close()
			zxid := func() int64 {
				h, _, err := w.Call(jute.Request{Header: jute.RequestHeader{Type: jute.OpExists}, Path: "/"})
				if err != nil {
					t.Fatal(err)
				}
				return h.Zxid
			}
			var out []string
			z := zxid()
			b, resp := dial(0, 0, nil)
			out = append(out, fmt.Sprintf("connect zxids %d", zxid()-z))
			z = zxid()
			h, body, err := b.Call(jute.Request{Header: jute.RequestHeader{Type: jute.OpCreate2}, Path: "/e", ACL: zk.WorldACL(zk.PermAll), Flags: zk.FlagEphemeral})
			if err != nil {
				t.Fatal(err)
			}
			created := fmt.Sprintf("create2 /e ephemeral %d zxids %d", h.Err, zxid()-z)
			if h.Err == 0 {
				created += fmt.Sprintf(", owner the session %t", body.Stat.EphemeralOwner == resp.SessionID)
			}
			out = append(out, created)
			b.Close()
			out = append(out, "resume on s1: "+resume(1, resp))
			b2, resp2 := dial(0, 0, nil)
			b2.Close()
			out = append(out, fmt.Sprintf("a second one: resume on s1: %s, on s0: %s", resume(1, resp2), resume(0, resp2)))
			local := ""
			for _, l := range strings.Split(askWord(t, addrs[0], "mntr"), "\n") {
				if v, ok := strings.CutPrefix(l, "zk_local_sessions\t"); ok {
					local = v
				}
			}
			out = append(out, "s0's zk_local_sessions "+local)
			if err := srv.StopServer(2); err != nil { // the leader: s1 leads after an election
				t.Fatal(err)
			}
			out = append(out, "after an election: resume on s0: "+resume(0, resp2))
			if got := strings.Join(out, "; "); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
