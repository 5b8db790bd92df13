package herd

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// BystanderStats is what the bystander sessions saw during a cell: the
// latency of their operations, measured from when each was due (the load is
// open-loop: an operation is sent when due whether or not the ones before it
// have been answered, so a slow server cannot hide its slowness by slowing
// the load down).
type BystanderStats struct {
	// Ops are the operations due during the cell, Errors those that failed
	// or were not answered within 10 s of the cell's end.
	Ops, Errors int64
	// P50, P99 and Max are percentiles of the latency of the operations
	// that succeeded.
	P50, P99, Max time.Duration
	// WatchEvents are the watch notifications the bystanders received (the
	// servers count them among theirs).
	WatchEvents int64
}

// bystanders are sessions doing ordinary work on paths of their own: each
// cycles through a get, a set and an exists with a watch (which the next set
// fires) on its own node, at a fixed rate.
type bystanders struct {
	clients []*zk.Conn
	sink    atomic.Pointer[bystanderSink]
	stop    chan struct{}
	wg      sync.WaitGroup
}

// bystanderSink collects the operations due during one cell.
type bystanderSink struct {
	mu          sync.Mutex
	latencies   []time.Duration
	ops, errors int64 // answered, and failed among them
	due         atomic.Int64
	inflight    sync.WaitGroup
	watchEvents atomic.Int64
}

// startBystanders connects x.Bystanders sessions, gives each a node under
// dir, and starts their load; nothing is recorded until begin.
func startBystanders(ctx context.Context, x Experiment, dir string) (*bystanders, error) {
	b := &bystanders{stop: make(chan struct{})}
	onEvent := func(ev zk.Event) {
		if ev.Type == zk.EventNodeDataChanged || ev.Type == zk.EventNodeDeleted || ev.Type == zk.EventNodeCreated {
			if s := b.sink.Load(); s != nil {
				s.watchEvents.Add(1)
			}
		}
	}
	for i := range x.Bystanders {
		conn, _, err := zk.Connect(x.Addrs, x.SessionTimeout, zk.WithLogInfo(false), zk.WithLogger(quietZKLogger{}), zk.WithEventCallback(onEvent))
		if err != nil {
			b.close()
			return nil, fmt.Errorf("herd: connect bystander %d to %v: %w", i, x.Addrs, err)
		}
		b.clients = append(b.clients, conn)
	}
	for i, conn := range b.clients {
		if err := awaitSession(ctx, conn); err != nil {
			b.close()
			return nil, fmt.Errorf("herd: bystander %d: %w", i, err)
		}
	}
	if err := createPath(b.clients[0], dir); err != nil {
		b.close()
		return nil, err
	}
	interval := time.Duration(float64(time.Second) * float64(x.Bystanders) / x.BystanderRate)
	for i, conn := range b.clients {
		node := fmt.Sprintf("%s/b%d", dir, i)
		if _, err := conn.Create(node, []byte("0"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			b.close()
			return nil, fmt.Errorf("herd: create bystander node %s: %w", node, err)
		}
		// Spread the bystanders' schedules over one interval.
		first := time.Now().Add(interval * time.Duration(i) / time.Duration(len(b.clients)))
		b.wg.Go(func() { b.load(conn, node, first, interval) })
	}
	return b, nil
}

// load runs one bystander's schedule: an operation every interval from
// first, each sent in its own goroutine when due.
func (b *bystanders) load(conn *zk.Conn, node string, first time.Time, interval time.Duration) {
	due := first
	for k := 0; ; k++ {
		t := time.NewTimer(time.Until(due))
		select {
		case <-b.stop:
			t.Stop()
			return
		case <-t.C:
		}
		sink := b.sink.Load()
		if sink != nil {
			sink.due.Add(1)
			sink.inflight.Add(1)
		}
		go func(due time.Time, op int) {
			var err error
			switch op {
			case 0:
				_, _, err = conn.Get(node)
			case 1:
				_, err = conn.Set(node, []byte("1"), -1)
			default:
				_, _, _, err = conn.ExistsW(node)
			}
			latency := time.Since(due)
			if sink == nil {
				return
			}
			sink.mu.Lock()
			sink.ops++
			if err != nil {
				sink.errors++
			} else {
				sink.latencies = append(sink.latencies, latency)
			}
			sink.mu.Unlock()
			sink.inflight.Done()
		}(due, k%3)
		due = due.Add(interval)
	}
}

// begin starts recording a cell.
func (b *bystanders) begin() *bystanderSink {
	s := &bystanderSink{}
	b.sink.Store(s)
	return s
}

// end stops recording s, waits up to 10 s for its operations still in
// flight (counting those not back as errors), and returns its figures.
func (b *bystanders) end(s *bystanderSink) BystanderStats {
	b.sink.CompareAndSwap(s, nil)
	settled := make(chan struct{})
	go func() { s.inflight.Wait(); close(settled) }()
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-settled:
	case <-t.C:
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	due := s.due.Load()
	return BystanderStats{Ops: due, Errors: s.errors + due - s.ops, WatchEvents: s.watchEvents.Load(),
		P50: Percentile(s.latencies, 50), P99: Percentile(s.latencies, 99), Max: Percentile(s.latencies, 100)}
}

// close stops the load and closes the sessions.
func (b *bystanders) close() {
	close(b.stop)
	b.wg.Wait()
	for _, c := range b.clients {
		c.Close()
	}
}
