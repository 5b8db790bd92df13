package realzk

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/check"
	"github.com/zkmodel/zkmodel/recipe"
)

// HerdVariant names a lock the herd experiment runs, or the no-contention
// baseline.
type HerdVariant string

// The locks of the herd experiment, and the baseline.
const (
	// HerdRecipe is the product's lock (package recipe): each waiter watches
	// its predecessor only.
	HerdRecipe HerdVariant = "recipe"
	// HerdWatchParent is check's "mutant-a-watch-parent": each waiter
	// watches the lock's children, so every change wakes every waiter.
	HerdWatchParent HerdVariant = "watch-parent"
	// HerdZKLock is go-zookeeper's own zk.Lock (it watches its predecessor
	// with GetW).
	HerdZKLock HerdVariant = "zk.Lock"
	// HerdCurator is Curator 5.4's InterProcessMutex, run by a Java driver
	// (N sessions in one JVM) that the experiment starts.
	HerdCurator HerdVariant = "curator"
	// HerdNone is the baseline: the N sessions are connected but idle, and
	// only the bystanders work.
	HerdNone HerdVariant = "none"
)

// HerdVariants lists every lock, in the order the first round runs them
// (later rounds rotate it).
var HerdVariants = []HerdVariant{HerdRecipe, HerdWatchParent, HerdZKLock, HerdCurator}

// HerdExperiment describes a herd experiment: for each N in Clients, N
// sessions contend for one lock with zero hold time, each variant (and the
// baseline) for Duration per round, the variants alternating round after
// round, while Bystanders sessions do ordinary work on unrelated paths at
// BystanderRate operations per second in all.
type HerdExperiment struct {
	// Addrs are the ensemble's client addresses; each session gets all of
	// them (go-zookeeper picks one at random). The servers' load is read
	// from them with mntr.
	Addrs []string
	// Clients are the numbers of contending sessions (N), each at least 2.
	Clients []int
	// Duration of one cell (one variant, one N, one round); at least 100ms.
	Duration time.Duration
	// Rounds per N; every variant runs once per round. At least 1 (the
	// command wants 3).
	Rounds int
	// Variants to run; nil means HerdVariants. The baseline always runs.
	Variants []HerdVariant
	// Bystanders is the number of bystander sessions (0 means 8);
	// BystanderRate their offered load in operations per second in all
	// (0 means 400).
	Bystanders    int
	BystanderRate float64
	// SessionTimeout of every session; 0 means DefaultMaxSessionTimeout.
	SessionTimeout time.Duration
	// Path under which the experiment works; "" means "/realzk-herd".
	Path string
	// Progress, when set, gets a line per cell.
	Progress io.Writer
}

// withDefaults validates x and fills in its defaults. It is all the
// checking the experiment does before connecting anywhere.
func (x HerdExperiment) withDefaults() (HerdExperiment, error) {
	if len(x.Addrs) == 0 {
		return x, errors.New("herd: no server addresses: set HerdExperiment.Addrs")
	}
	if len(x.Clients) == 0 {
		return x, errors.New("herd: no numbers of clients: set HerdExperiment.Clients, e.g. 10,50,200,500")
	}
	for _, n := range x.Clients {
		if n < 2 {
			return x, fmt.Errorf("herd: %d clients: want at least 2 to contend", n)
		}
	}
	if x.Duration < 100*time.Millisecond {
		return x, fmt.Errorf("herd: cell duration %v: want at least 100ms", x.Duration)
	}
	if x.Rounds < 1 {
		return x, fmt.Errorf("herd: %d rounds: want at least 1", x.Rounds)
	}
	if x.Variants == nil {
		x.Variants = HerdVariants
	}
	if len(x.Variants) == 0 {
		return x, fmt.Errorf("herd: no variants: want some of %v", HerdVariants)
	}
	for i, v := range x.Variants {
		if !slices.Contains(HerdVariants, v) {
			return x, fmt.Errorf("herd: unknown variant %q (known: %v)", v, HerdVariants)
		}
		if slices.Contains(x.Variants[:i], v) {
			return x, fmt.Errorf("herd: variant %q given twice", v)
		}
	}
	if x.Bystanders == 0 {
		x.Bystanders = 8
	}
	if x.BystanderRate == 0 {
		x.BystanderRate = 400
	}
	if x.Bystanders < 1 {
		return x, fmt.Errorf("herd: %d bystanders: want at least 1", x.Bystanders)
	}
	if math.IsNaN(x.BystanderRate) || x.BystanderRate < 1 || x.BystanderRate > 100000 {
		return x, fmt.Errorf("herd: bystander rate %v/s: want between 1 and 100000 operations per second", x.BystanderRate)
	}
	if x.SessionTimeout == 0 {
		x.SessionTimeout = DefaultMaxSessionTimeout
	}
	if x.SessionTimeout < 0 {
		return x, fmt.Errorf("herd: session timeout %v: want a positive duration", x.SessionTimeout)
	}
	if x.Path == "" {
		x.Path = "/realzk-herd"
	}
	if !strings.HasPrefix(x.Path, "/") || strings.HasSuffix(x.Path, "/") {
		return x, fmt.Errorf("herd: path %q: want an absolute ZooKeeper path such as /realzk-herd", x.Path)
	}
	return x, nil
}

// Validate checks x as RunHerdExperiment would, without connecting.
func (x HerdExperiment) Validate() error {
	_, err := x.withDefaults()
	return err
}

// HerdCell is what one variant (or the baseline) did with N clients in one
// round.
type HerdCell struct {
	Variant HerdVariant
	Clients int
	Round   int
	Elapsed time.Duration
	// Acquisitions are Lock calls that succeeded within the cell, Releases
	// their successful Unlock calls.
	Acquisitions, Releases int64
	// Notifications are the watch events the lock sessions received about
	// nodes other than their own lock nodes (what waiters were woken with),
	// counted by the clients; -1 where not counted (Curator).
	Notifications int64
	// Requests are the requests the lock sessions sent (pings and connect
	// requests excepted), counted on their connections; -1 where not
	// counted (Curator).
	Requests int64
	// HandoffP50 and HandoffP99 are percentiles of the time from a release
	// (Unlock called) to the next acquisition (Lock returned), over
	// Handoffs handoffs.
	HandoffP50, HandoffP99 time.Duration
	Handoffs               int
	// Bystanders is what the bystander sessions saw during the cell.
	Bystanders BystanderStats
	// Server is the servers' own account of the cell.
	Server ServerLoad
	// Err says why the cell has no data ("" when it has).
	Err string
}

// HerdMetric is a figure derived from a cell.
type HerdMetric int

// The figures of a cell.
const (
	MetricAcquisitionsPerSecond HerdMetric = iota
	MetricNotificationsPerRelease
	MetricServerNotificationsPerRelease
	MetricRequestsPerAcquisition
	MetricServerPacketsPerAcquisition
	MetricServerPacketsSentPerRelease
	MetricHandoffP50
	MetricHandoffP99
	MetricBystanderP50
	MetricBystanderP99
	MetricBystanderMax
	MetricBystanderErrors
	MetricMaxOutstanding
	MetricMaxWatches
)

// Value returns the figure m of c, or NaN when the cell has none (no data,
// not counted for this lock, no releases, or the baseline for a lock
// figure). Latencies are in milliseconds.
func (c HerdCell) Value(m HerdMetric) float64 {
	nan := math.NaN()
	if c.Err != "" {
		return nan
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	per := func(n, d int64) float64 {
		if n < 0 || d <= 0 {
			return nan
		}
		return float64(n) / float64(d)
	}
	lock := c.Variant != HerdNone
	switch m {
	case MetricAcquisitionsPerSecond:
		if !lock || c.Elapsed <= 0 {
			return nan
		}
		return float64(c.Acquisitions) / c.Elapsed.Seconds()
	case MetricNotificationsPerRelease:
		return per(c.Notifications, c.Releases)
	case MetricServerNotificationsPerRelease:
		return per(c.Server.WatchEvents-c.Bystanders.WatchEvents, c.Releases)
	case MetricRequestsPerAcquisition:
		return per(c.Requests, c.Acquisitions)
	case MetricServerPacketsPerAcquisition:
		return per(c.Server.PacketsReceived-c.Bystanders.Ops, c.Acquisitions)
	case MetricServerPacketsSentPerRelease:
		return per(c.Server.PacketsSent-c.Bystanders.Ops, c.Releases)
	case MetricHandoffP50, MetricHandoffP99:
		if !lock || c.Handoffs == 0 {
			return nan
		}
		if m == MetricHandoffP50 {
			return ms(c.HandoffP50)
		}
		return ms(c.HandoffP99)
	case MetricBystanderP50, MetricBystanderP99, MetricBystanderMax:
		if c.Bystanders.Ops == 0 {
			return nan
		}
		return ms(map[HerdMetric]time.Duration{MetricBystanderP50: c.Bystanders.P50, MetricBystanderP99: c.Bystanders.P99, MetricBystanderMax: c.Bystanders.Max}[m])
	case MetricBystanderErrors:
		return float64(c.Bystanders.Errors)
	case MetricMaxOutstanding:
		return float64(c.Server.MaxOutstanding)
	case MetricMaxWatches:
		return float64(c.Server.MaxWatches)
	}
	return nan
}

// HerdResults are the cells of an experiment, in the order they ran.
type HerdResults struct {
	Clients        []int
	Variants       []HerdVariant // the locks, in the first round's order
	Rounds         int
	Duration       time.Duration
	Bystanders     int
	BystanderRate  float64
	Servers        int
	SessionTimeout time.Duration
	Cells          []HerdCell
}

// Spread returns metric m over the rounds of variant v with n clients.
func (r HerdResults) Spread(v HerdVariant, n int, m HerdMetric) Spread {
	var values []float64
	for _, c := range r.Cells {
		if c.Variant == v && c.Clients == n {
			values = append(values, c.Value(m))
		}
	}
	return SpreadOf(values)
}

// roundOrder is the order of round r: the variants and the baseline,
// rotated by r, so that each takes every position in turn.
func roundOrder(variants []HerdVariant, r int) []HerdVariant {
	all := append(slices.Clone(variants), HerdNone)
	k := r % len(all)
	return append(all[k:], all[:k]...)
}

// RunHerdExperiment runs x on the ensemble at x.Addrs. A cell that fails
// (a lock's error, the Curator driver missing) is recorded with its Err and
// the experiment goes on; errors that leave nothing to measure (no
// connection) end it.
func RunHerdExperiment(ctx context.Context, x HerdExperiment) (HerdResults, error) {
	x, err := x.withDefaults()
	if err != nil {
		return HerdResults{}, err
	}
	res := HerdResults{Clients: x.Clients, Variants: x.Variants, Rounds: x.Rounds, Duration: x.Duration,
		Bystanders: x.Bystanders, BystanderRate: x.BystanderRate, Servers: len(x.Addrs), SessionTimeout: x.SessionTimeout}
	progress := func(format string, args ...any) {
		if x.Progress != nil {
			fmt.Fprintf(x.Progress, "herd: "+format+"\n", args...)
		}
	}
	var id [4]byte
	_, _ = rand.Read(id[:])
	run := fmt.Sprintf("%s/%s", x.Path, hex.EncodeToString(id[:]))

	by, err := startBystanders(ctx, x, run+"/bystanders")
	if err != nil {
		return res, err
	}
	defer by.close()
	admin := by.clients[0]
	defer deleteTreeQuietly(admin, run)

	var curator *curatorDriver
	var curatorErr error
	defer func() {
		if curator != nil {
			curator.close()
		}
	}()
	if slices.Contains(x.Variants, HerdCurator) {
		curator, curatorErr = newCuratorDriver(ctx)
		if curatorErr != nil {
			progress("Curator cells will have no data: %v", curatorErr)
		}
	}

	total, done := len(x.Clients)*x.Rounds*(len(x.Variants)+1), 0
	started := time.Now()
	for _, n := range x.Clients {
		progress("N=%d: connecting %d sessions", n, n)
		clients, err := connectHerd(ctx, x, n)
		if err != nil {
			closeHerd(clients)
			return res, err
		}
		var session *curatorSession
		if curator != nil && curatorErr == nil {
			session, err = curator.start(ctx, x.Addrs, n, x.SessionTimeout)
			if err != nil {
				progress("N=%d: Curator cells will have no data: %v", n, err)
			}
		}
		for r := range x.Rounds {
			for _, v := range roundOrder(x.Variants, r) {
				dir := fmt.Sprintf("%s/n%d-r%d-%s", run, n, r, dirName(v))
				var cell HerdCell
				switch {
				case v == HerdCurator && session == nil:
					cell = HerdCell{Err: "the Curator driver did not start"}
					if curatorErr != nil {
						cell.Err = curatorErr.Error()
					} else if err != nil {
						cell.Err = err.Error()
					}
				case v == HerdCurator:
					cell, err = runCuratorCell(ctx, x, session, by, dir)
				default:
					cell, err = runGoCell(ctx, x, clients, by, v, dir)
				}
				if err != nil {
					cell.Err = err.Error()
				}
				cell.Variant, cell.Clients, cell.Round = v, n, r+1
				res.Cells = append(res.Cells, cell)
				deleteTreeQuietly(admin, dir)
				done++
				eta := time.Duration(float64(time.Since(started)) / float64(done) * float64(total-done)).Round(time.Second)
				progress("%3d/%d N=%-4d round %d %-12s %s (about %v left)", done, total, n, r+1, v, cellSummary(cell), eta)
				if ctx.Err() != nil {
					closeHerd(clients)
					if session != nil {
						session.close()
					}
					return res, fmt.Errorf("herd: %w", ctx.Err())
				}
			}
		}
		closeHerd(clients)
		if session != nil {
			session.close()
		}
	}
	return res, nil
}

// cellSummary is a cell's progress line.
func cellSummary(c HerdCell) string {
	if c.Err != "" {
		return "no data: " + c.Err
	}
	by := fmt.Sprintf("bystander p99 %.1fms", c.Value(MetricBystanderP99))
	if c.Variant == HerdNone {
		return by
	}
	return fmt.Sprintf("%.0f acq/s, %.2f server notifications/release, %s", c.Value(MetricAcquisitionsPerSecond), c.Value(MetricServerNotificationsPerRelease), by)
}

// dirName turns a variant's name into a znode name.
func dirName(v HerdVariant) string { return strings.ReplaceAll(string(v), ".", "-") }

// herdClient is one lock session of the experiment, counting the watch
// notifications it receives and the requests it sends.
type herdClient struct {
	conn     *zk.Conn
	sink     atomic.Pointer[atomic.Int64] // where notifications are counted; nil: not counted
	requests atomic.Pointer[atomic.Int64] // where requests are counted; nil: not counted

	mu  sync.Mutex
	own map[string]bool // lock nodes this client created whose watch has not fired
}

// onEvent is the client's zk.WithEventCallback: go-zookeeper passes every
// watch notification from the server through it.
func (c *herdClient) onEvent(ev zk.Event) {
	switch ev.Type {
	case zk.EventNodeCreated, zk.EventNodeDeleted, zk.EventNodeDataChanged, zk.EventNodeChildrenChanged:
	default:
		return // session states, and EventNotWatching made up by the client
	}
	c.mu.Lock()
	own := c.own[ev.Path]
	delete(c.own, ev.Path)
	c.mu.Unlock()
	if own {
		return // a lock watching its own node: the releaser, not a waiter
	}
	if sink := c.sink.Load(); sink != nil {
		sink.Add(1)
	}
}

// herdConn is a client's connection as the recipe and the watch-parent
// lock see it: it notes the nodes they create, so their own-node watches
// are not counted.
type herdConn struct {
	*zk.Conn
	client *herdClient
}

// Create passes the call on and notes the node it made.
func (c herdConn) Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	node, err := c.Conn.Create(path, data, flags, acl)
	if err == nil && flags&zk.FlagEphemeral != 0 {
		c.client.mu.Lock()
		c.client.own[node] = true
		c.client.mu.Unlock()
	}
	return node, err
}

// herdLocker is what the experiment needs of a lock.
type herdLocker interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
}

// zkLock adapts go-zookeeper's zk.Lock, which takes no context: Lock
// returns only when the lock is held or the connection fails, so its
// waiters are drained, not cancelled, at the end of a cell.
type zkLock struct{ lock *zk.Lock }

func (l zkLock) Lock(context.Context) error   { return l.lock.Lock() }
func (l zkLock) Unlock(context.Context) error { return l.lock.Unlock() }

// newHerdLocker makes variant's lock on dir for client c.
func newHerdLocker(variant HerdVariant, c *herdClient, dir string) (herdLocker, error) {
	switch variant {
	case HerdRecipe:
		return recipe.NewLock(herdConn{Conn: c.conn, client: c}, dir), nil
	case HerdWatchParent:
		v, err := check.VariantByName("mutant-a-watch-parent")
		if err != nil {
			return nil, fmt.Errorf("herd: %w", err)
		}
		return v.Factory(herdConn{Conn: c.conn, client: c}, dir), nil
	case HerdZKLock:
		return zkLock{zk.NewLock(c.conn, dir, zk.WorldACL(zk.PermAll))}, nil
	}
	return nil, fmt.Errorf("herd: %q is not a Go lock (Go locks: %v)", variant, []HerdVariant{HerdRecipe, HerdWatchParent, HerdZKLock})
}

// connectHerd opens n lock sessions and waits until each has its session.
// It returns the clients opened so far on error too.
func connectHerd(ctx context.Context, x HerdExperiment, n int) ([]*herdClient, error) {
	clients := make([]*herdClient, 0, n)
	for i := range n {
		c := &herdClient{own: map[string]bool{}}
		conn, _, err := zk.Connect(x.Addrs, x.SessionTimeout, zk.WithLogInfo(false), zk.WithLogger(quietZKLogger{}),
			zk.WithEventCallback(c.onEvent), zk.WithDialer(countingDialer(&c.requests)))
		if err != nil {
			return clients, fmt.Errorf("herd: connect client %d to %v: %w", i, x.Addrs, err)
		}
		c.conn = conn
		clients = append(clients, c)
	}
	for i, c := range clients {
		if err := awaitSession(ctx, c.conn); err != nil {
			return clients, fmt.Errorf("herd: client %d: %w", i, err)
		}
	}
	return clients, nil
}

// awaitSession waits until conn has its session.
func awaitSession(ctx context.Context, conn *zk.Conn) error {
	for conn.State() != zk.StateHasSession {
		if ctx.Err() != nil {
			return fmt.Errorf("no session (state %v): %w", conn.State(), ctx.Err())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

func closeHerd(clients []*herdClient) {
	for _, c := range clients {
		c.conn.Close()
	}
}

// quietZKLogger drops go-zookeeper's log lines.
type quietZKLogger struct{}

func (quietZKLogger) Printf(string, ...any) {}

// handoffs records the time from each release to the next acquisition.
type handoffs struct {
	mu          sync.Mutex
	lastRelease time.Time
	samples     []time.Duration
}

// acquired notes an acquisition at now; it counts only while in the cell.
func (h *handoffs) acquired(now time.Time, inCell bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if inCell && !h.lastRelease.IsZero() {
		h.samples = append(h.samples, now.Sub(h.lastRelease))
	}
}

// releasing notes that the holder calls Unlock now.
func (h *handoffs) releasing(now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastRelease = now
}

func (h *handoffs) fill(c *HerdCell) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c.setHandoffs(h.samples)
}

// setHandoffs fills in the cell's handoff count and percentiles from samples.
func (c *HerdCell) setHandoffs(samples []time.Duration) {
	c.Handoffs, c.HandoffP50, c.HandoffP99 = len(samples), Percentile(samples, 50), Percentile(samples, 99)
}

// runGoCell runs one Go lock (or the baseline) with every client on dir
// for x.Duration: each client loops Lock, Unlock with zero hold time.
// Figures are taken at the end of the cell; then the recipe's and
// watch-parent's waiters are cancelled and zk.Lock's drained.
func runGoCell(ctx context.Context, x HerdExperiment, clients []*herdClient, by *bystanders, variant HerdVariant, dir string) (HerdCell, error) {
	cell := HerdCell{Variant: variant, Clients: len(clients), Notifications: -1, Requests: -1}
	if variant == HerdNone {
		load := startServerLoad(ctx, x.Addrs)
		window := by.begin()
		start := time.Now()
		if err := sleep(ctx, x.Duration); err != nil {
			return cell, err
		}
		cell.Elapsed = time.Since(start)
		cell.Server = load.end(ctx)
		cell.Bystanders = by.end(window)
		return cell, nil
	}
	if err := createPath(clients[0].conn, dir); err != nil {
		return cell, err
	}
	var notifications, requests, acquisitions, releases atomic.Int64
	lockers := make([]herdLocker, len(clients))
	for i, c := range clients {
		var err error
		if lockers[i], err = newHerdLocker(variant, c, dir); err != nil {
			return cell, err
		}
		c.sink.Store(&notifications)
		c.requests.Store(&requests)
	}
	defer func() {
		for _, c := range clients {
			c.sink.Store(nil)
			c.requests.Store(nil)
		}
	}()

	lockCtx, cancelLocks := context.WithCancel(ctx)
	defer cancelLocks()
	var (
		wg       sync.WaitGroup
		failMu   sync.Mutex
		failures []error
		hand     handoffs
	)
	fail := func(err error) {
		failMu.Lock()
		defer failMu.Unlock()
		failures = append(failures, err)
	}
	load := startServerLoad(ctx, x.Addrs)
	window := by.begin()
	start := time.Now()
	deadline := start.Add(x.Duration)
	for i, l := range lockers {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				if err := l.Lock(lockCtx); err != nil {
					if lockCtx.Err() == nil {
						fail(fmt.Errorf("client %d: Lock: %w", i, err))
					}
					return
				}
				now := time.Now()
				inCell := now.Before(deadline)
				hand.acquired(now, inCell)
				if inCell {
					acquisitions.Add(1)
				}
				hand.releasing(time.Now())
				unlockCtx, cancel := context.WithTimeout(ctx, time.Minute)
				err := l.Unlock(unlockCtx)
				cancel()
				if err != nil {
					fail(fmt.Errorf("client %d: Unlock: %w", i, err))
					return
				}
				if inCell {
					releases.Add(1)
				}
			}
		})
	}
	stopped := make(chan struct{})
	go func() { wg.Wait(); close(stopped) }()
	if err := sleep(ctx, x.Duration); err != nil {
		return cell, err
	}
	cell.Elapsed = time.Since(start)
	cell.Acquisitions, cell.Releases = acquisitions.Load(), releases.Load()
	cell.Notifications, cell.Requests = notifications.Load(), requests.Load()
	cell.Server = load.end(ctx)
	cell.Bystanders = by.end(window)
	hand.fill(&cell)
	if variant != HerdZKLock {
		cancelLocks()
	}
	select {
	case <-stopped:
	case <-ctx.Done():
		return cell, fmt.Errorf("herd: %s with %d clients: the clients did not stop: %w", variant, len(clients), ctx.Err())
	}
	if err := errors.Join(failures...); err != nil {
		return cell, fmt.Errorf("herd: %s with %d clients: %w", variant, len(clients), err)
	}
	return cell, nil
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// createPath creates path and its missing parents (persistent, empty).
func createPath(conn *zk.Conn, path string) error {
	for i := 1; i <= len(path); i++ {
		if i < len(path) && path[i] != '/' {
			continue
		}
		if _, err := conn.Create(path[:i], nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("herd: create %s: %w", path[:i], err)
		}
	}
	return nil
}

// deleteTreeQuietly deletes path and what is under it, as far as it can.
func deleteTreeQuietly(conn *zk.Conn, path string) {
	children, _, err := conn.Children(path)
	if err != nil {
		return
	}
	for _, child := range children {
		deleteTreeQuietly(conn, path+"/"+child)
	}
	_ = conn.Delete(path, -1)
}
