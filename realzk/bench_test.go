package realzk

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// BenchmarkStart measures starting a 3-server ensemble until it has a
// quorum, and tearing it down.
func BenchmarkStart(b *testing.B) {
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
		e, err := Start(ctx, Config{})
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		if err := e.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLeaderFailover measures, for a client connected to the leader
// with every server in its list, the time from SIGKILLing the leader to the
// client's first successful write (reported as ms/failover), and the time
// until the killed server has rejoined.
func BenchmarkLeaderFailover(b *testing.B) {
	e := Shared(b)
	observer, _ := connect(b, e.Addrs(), 4*time.Second)
	base := testPath(b, observer)
	var failover time.Duration
	for i := 0; b.Loop(); i++ {
		ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
		leader, err := e.Leader(ctx)
		if err != nil {
			b.Fatal(err)
		}
		addrs := append([]string{e.Addrs()[leader]}, append(e.Addrs()[:leader:leader], e.Addrs()[leader+1:]...)...)
		conn, events, err := zk.Connect(addrs, 4*time.Second, zk.WithHostProvider(&orderedHosts{servers: addrs}), zk.WithLogInfo(false))
		if err != nil {
			b.Fatal(err)
		}
		waitState(b, events, zk.StateHasSession, 20*time.Second)
		go func() {
			for range events {
			}
		}()
		killed := time.Now()
		if err := e.Kill(leader); err != nil {
			b.Fatal(err)
		}
		for j := 0; ; j++ {
			if _, err := conn.Create(fmt.Sprintf("%s/n%d-%d", base, i, j), nil, 0, zk.WorldACL(zk.PermAll)); err == nil {
				break
			}
			if ctx.Err() != nil {
				b.Fatal("no write succeeded after the leader kill")
			}
			time.Sleep(5 * time.Millisecond)
		}
		failover += time.Since(killed)
		conn.Close()
		if err := e.Restart(ctx, leader); err != nil {
			b.Fatal(err)
		}
		cancel()
	}
	b.ReportMetric(float64(failover.Milliseconds())/float64(b.N), "ms/failover")
}
