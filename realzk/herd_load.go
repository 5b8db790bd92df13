package realzk

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// countingDialer returns a go-zookeeper dialer whose connections count the
// requests written on them into the sink *sink points to (none while it is
// nil): every frame but the connect request opening a connection, pings and
// auth — what a counting Proxy counts as Requests.
func countingDialer(sink *atomic.Pointer[atomic.Int64]) func(network, address string, timeout time.Duration) (net.Conn, error) {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		conn, err := net.DialTimeout(network, address, timeout)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: conn, frames: frameScanner{keep: requestHeadLen, frame: func(index int, head []byte) {
			if s := sink.Load(); s != nil && classifyRequest(index, head) == frameRequest {
				s.Add(1)
			}
		}}}, nil
	}
}

// countingConn counts the request frames written on a connection.
type countingConn struct {
	net.Conn
	mu     sync.Mutex
	frames frameScanner
}

// Write counts the frames in p and passes it on.
func (c *countingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.frames.feed(p)
	c.mu.Unlock()
	return c.Conn.Write(p)
}

// ServerLoad is the servers' own account of a cell, from mntr, summed over
// the servers.
type ServerLoad struct {
	// PacketsReceived and PacketsSent are the client packets the servers
	// received and sent during the cell (zk_packets_received, _sent).
	PacketsReceived, PacketsSent int64
	// WatchEvents are the watches the servers triggered during the cell
	// (the sums of zk_*_watch_count: node created, deleted, changed,
	// children).
	WatchEvents int64
	// MaxOutstanding and MaxWatches are the largest sums of
	// zk_outstanding_requests and zk_watch_count seen (sampled twice a
	// second and at the ends).
	MaxOutstanding, MaxWatches int64
	// Errors counts mntr exchanges that failed (their samples are missing).
	Errors int
}

// mntrCounters are the mntr figures a cell needs, summed over servers.
type mntrCounters struct {
	received, sent, watchEvents, outstanding, watches int64
	errors                                            int
}

// readMntr asks every server for mntr and sums the figures.
func readMntr(ctx context.Context, addrs []string) mntrCounters {
	var (
		mu  sync.Mutex
		sum mntrCounters
		wg  sync.WaitGroup
	)
	for _, addr := range addrs {
		wg.Go(func() {
			answer, err := FourLetter(ctx, addr, "mntr")
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				sum.errors++
				return
			}
			for line := range strings.SplitSeq(answer, "\n") {
				key, value, ok := strings.Cut(strings.TrimSpace(line), "\t")
				if !ok {
					continue
				}
				n, err := strconv.ParseInt(value, 10, 64)
				if err != nil {
					continue
				}
				switch key {
				case "zk_packets_received":
					sum.received += n
				case "zk_packets_sent":
					sum.sent += n
				case "zk_outstanding_requests":
					sum.outstanding += n
				case "zk_watch_count":
					sum.watches += n
				case "zk_sum_node_created_watch_count", "zk_sum_node_deleted_watch_count",
					"zk_sum_node_changed_watch_count", "zk_sum_node_children_watch_count":
					sum.watchEvents += n
				}
			}
		})
	}
	wg.Wait()
	return sum
}

// serverLoad samples the servers during a cell.
type serverLoad struct {
	addrs  []string
	before mntrCounters
	stop   chan struct{}
	done   chan struct{}
	mu     sync.Mutex
	load   ServerLoad
}

// startServerLoad reads the counters at the start of a cell and samples the
// gauges until end.
func startServerLoad(ctx context.Context, addrs []string) *serverLoad {
	l := &serverLoad{addrs: addrs, before: readMntr(ctx, addrs), stop: make(chan struct{}), done: make(chan struct{})}
	l.sample(l.before)
	go func() {
		defer close(l.done)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				l.sample(readMntr(ctx, addrs))
			case <-l.stop:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return l
}

func (l *serverLoad) sample(m mntrCounters) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.load.Errors += m.errors
	if m.errors == 0 {
		l.load.MaxOutstanding = max(l.load.MaxOutstanding, m.outstanding)
		l.load.MaxWatches = max(l.load.MaxWatches, m.watches)
	}
}

// end reads the counters at the end of the cell and returns the load.
func (l *serverLoad) end(ctx context.Context) ServerLoad {
	after := readMntr(ctx, l.addrs)
	close(l.stop)
	<-l.done
	l.sample(after)
	l.mu.Lock()
	defer l.mu.Unlock()
	load := l.load
	load.PacketsReceived = after.received - l.before.received
	load.PacketsSent = after.sent - l.before.sent
	load.WatchEvents = after.watchEvents - l.before.watchEvents
	return load
}
