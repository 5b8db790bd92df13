package realzk

// The behaviours of a real ZooKeeper 3.8 that the model leaves out on purpose (docs/fidelity.md, "Known
// differences"): quotas. These tests pin what the real server does, so that docs/fidelity.md's description
// of it stays true when the Debian package moves on. (Read-only mode, once pinned here, is modelled now:
// clients.TestStandInReadOnlyMode runs it on both.)

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/internal/rawzk"
	"github.com/zkmodel/zkmodel/jute"
)

// TestRealQuotas pins ZooKeeper 3.8's quotas, which the model does not keep: the limits a client (zkCli's
// setquota) writes under /zookeeper/quota are soft unless the server runs with zookeeper.enforceQuota=true;
// then a create or setData past a hard limit fails with QuotaExceeded (code -125, which go-zookeeper v1.0.4
// has no error value for), and the count includes the quota's own node.
func TestRealQuotas(t *testing.T) {
	for _, enforce := range []bool{false, true} {
		t.Run(fmt.Sprintf("enforceQuota=%t", enforce), func(t *testing.T) {
			e := ForTestWith(t, Config{Servers: 1, SystemProperties: map[string]string{"zookeeper.enforceQuota": fmt.Sprint(enforce)}})
			ctx := testContext(t, time.Minute)
			c, _ := connect(t, e.Addrs(), 10*time.Second)
			for _, p := range []string{"/q", "/zookeeper/quota/q"} {
				if _, err := c.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
					t.Fatalf("create %s: %v", p, err)
				}
			}
			// As zkCli's "setquota -N 3 /q" writes them: at most 3 nodes under /q, /q included.
			if _, err := c.Create("/zookeeper/quota/q/zookeeper_limits", []byte("count=-1,bytes=-1;countHardLimit=3;byteHardLimit=-1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatalf("create limits: %v", err)
			}
			if _, err := c.Create("/zookeeper/quota/q/zookeeper_stats", []byte("count=1,bytes=0"), 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatalf("create stats: %v", err)
			}
			raw, _, err := rawzk.DialBare(ctx, e.Addrs()[0], jute.ConnectRequest{TimeOut: 10000, HasReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			var codes []int32
			for _, name := range []string{"a", "b", "c"} {
				code, err := raw.Do(jute.Request{Header: jute.RequestHeader{Type: jute.OpCreate}, Path: "/q/" + name, ACL: zk.WorldACL(zk.PermAll)})
				if err != nil {
					t.Fatal(err)
				}
				codes = append(codes, code)
			}
			want := []int32{0, 0, 0}
			if enforce {
				want = []int32{0, 0, -125} // /q, /q/a, /q/b make 3
			}
			if fmt.Sprint(codes) != fmt.Sprint(want) {
				t.Errorf("creating /q/a, /q/b, /q/c under a 3-node hard quota: codes %v, want %v", codes, want)
			}
			stats, _, err := c.Get("/zookeeper/quota/q/zookeeper_stats")
			if err != nil {
				t.Fatal(err)
			}
			wantStats := fmt.Sprintf("count=%d,bytes=0", 1+countOK(codes))
			if !bytes.Equal(stats, []byte(wantStats)) {
				t.Errorf("zookeeper_stats %q, want %q: the server counts what is under the quota", stats, wantStats)
			}
		})
	}
}

func countOK(codes []int32) int {
	n := 0
	for _, c := range codes {
		if c == 0 {
			n++
		}
	}
	return n
}
