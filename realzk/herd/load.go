package herd

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkmodel/zkmodel/realzk"
)

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
			answer, err := realzk.FourLetter(ctx, addr, "mntr")
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
