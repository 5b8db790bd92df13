package realzk

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/model"
)

// TestServerStatus: srvr's Mode and Zxid lines, as ServerStatus reads them, on a real ensemble and on the
// model's: one leader, and every server reaches the zxid of a create made through one of them.
func TestServerStatus(t *testing.T) {
	modelSrv := model.NewServer(model.WithEnsemble(3), model.WithFourLetterWords("*"))
	t.Cleanup(func() { modelSrv.Close() })
	modelAddrs, err := modelSrv.ListenEnsemble(3)
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range []struct {
		name  string
		addrs []string
	}{{"real", Shared(t).Addrs()}, {"model", modelAddrs}} {
		conn, events, err := zk.Connect(tg.addrs[1:2], 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(testLogger{t}))
		if err != nil {
			t.Fatal(err)
		}
		waitState(t, events, zk.StateHasSession, 20*time.Second)
		path, err := conn.Create(fmt.Sprintf("/server-status-%d", time.Now().UnixNano()), nil, 0, zk.WorldACL(zk.PermAll))
		if err != nil {
			t.Fatal(err)
		}
		_, stat, err := conn.Exists(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := conn.Delete(path, -1); err != nil {
			t.Fatal(err)
		}
		conn.Close()
		leaders := 0
		for _, addr := range tg.addrs {
			deadline := time.Now().Add(10 * time.Second)
			for {
				st, err := ServerStatus(context.Background(), addr)
				if err != nil {
					t.Fatalf("%s: %v", tg.name, err)
				}
				if st.Zxid >= stat.Czxid {
					if st.Mode == ModeLeader {
						leaders++
					} else if st.Mode != ModeFollower {
						t.Errorf("%s: %s is %q, want leader or follower", tg.name, addr, st.Mode)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: %s stays at zxid %#x, below the create's %#x", tg.name, addr, st.Zxid, stat.Czxid)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		if leaders != 1 {
			t.Errorf("%s: %d leaders, want 1", tg.name, leaders)
		}
	}
}

// TestParseSrvr: an answer without Mode and Zxid (a server not serving, or one that refused the word) is an
// error that says what the server answered.
func TestParseSrvr(t *testing.T) {
	for answer, want := range map[string]string{
		"This ZooKeeper instance is not currently serving requests\n": "no mode and zxid in answer",
		"":                        "is srvr in 4lw.commands.whitelist?",
		"Zxid: 0xg\nMode: leader": `zxid "0xg"`,
	} {
		if _, err := parseSrvr("h:1", answer); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseSrvr(%q) = %v, want an error containing %q", answer, err, want)
		}
	}
	st, err := parseSrvr("h:1", "Zookeeper version: 3.8.0\nZxid: 0x10000002a\nMode: follower\nNode count: 5\n")
	if err != nil || st != (Status{Mode: ModeFollower, Zxid: 0x10000002a}) {
		t.Errorf("parseSrvr = %+v, %v", st, err)
	}
}
