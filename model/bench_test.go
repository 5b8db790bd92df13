package model

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// BenchmarkMixedWorkload runs what a lock recipe does, on the default transport: every client creates an
// ephemeral-sequential node, lists the children, watches its predecessor with ExistsW, then deletes its node,
// which fires the successor's watch. One op is one client call; ops/s counts them.
//
//	go test -run '^$' -bench . -cpu 1 ./model
func BenchmarkMixedWorkload(b *testing.B) {
	const clients = 8
	srv := NewServer()
	admin, _, err := srv.Connect(10 * time.Second)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := admin.Create("/bench", nil, 0, worldACL); err != nil {
		b.Fatal(err)
	}
	conns := make([]*Conn, clients)
	events := make([]<-chan zk.Event, clients)
	for i := range conns {
		if conns[i], events[i], err = srv.Connect(10 * time.Second); err != nil {
			b.Fatal(err)
		}
	}
	nodes := make([]string, clients)
	watches := make([]<-chan zk.Event, clients)
	fired := 0
	b.ReportAllocs()
	b.ResetTimer()
	for ops := 0; ops < b.N; ops += 4 * clients {
		for i, c := range conns {
			if nodes[i], err = c.Create("/bench/lock-", nil, zk.FlagEphemeralSequential, worldACL); err != nil {
				b.Fatal(err)
			}
		}
		for _, c := range conns {
			if _, _, err := c.Children("/bench"); err != nil {
				b.Fatal(err)
			}
		}
		for i, c := range conns {
			ok, _, ch, err := c.ExistsW(nodes[(i+clients-1)%clients])
			if err != nil || !ok {
				b.Fatalf("ExistsW: %v, %v", ok, err)
			}
			watches[i] = ch
		}
		for i, c := range conns {
			if err := c.Delete(nodes[i], -1); err != nil {
				b.Fatal(err)
			}
		}
		for i, ch := range watches {
			if ev := <-ch; ev.Type != zk.EventNodeDeleted {
				b.Fatalf("watch event %+v", ev)
			}
			fired++
			drain(events[i])
		}
	}
	b.StopTimer()
	if fired == 0 {
		b.Fatal("no watch fired")
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}
