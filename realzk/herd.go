package realzk

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/check"
	"github.com/zkmodel/zkmodel/recipe"
)

// HerdVariant names a lock the herd experiment runs.
type HerdVariant string

// The locks of the herd experiment.
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
)

// HerdVariants lists every variant, in the order RunHerd runs them.
var HerdVariants = []HerdVariant{HerdRecipe, HerdWatchParent, HerdZKLock}

// HerdConfig describes one row of the herd experiment: N clients contending
// with zero hold time for a fixed duration, for each variant in turn, then
// the floor.
type HerdConfig struct {
	// Addrs are the ensemble's client addresses; each client gets all of
	// them (go-zookeeper picks one at random).
	Addrs []string
	// Clients is N, the number of contending clients (sessions); at least 2.
	Clients int
	// Duration is how long each variant, and the floor, runs.
	Duration time.Duration
	// Variants to run; nil means HerdVariants.
	Variants []HerdVariant
	// SessionTimeout of the clients; 0 means 10 s.
	SessionTimeout time.Duration
	// Path is the znode under which the experiment makes its lock
	// directories; "" means "/realzk-herd".
	Path string
	// Drain makes every variant stop by letting each client finish its
	// current acquisition (no Lock is cancelled), and count until all have:
	// then every notification is one a release caused. Without it the
	// figures are taken at the end of Duration and the recipe's and
	// watch-parent's waiters are cancelled (zk.Lock cannot be, so it always
	// drains, uncounted).
	Drain bool
}

// HerdCell is what one variant did with N clients.
type HerdCell struct {
	Variant HerdVariant
	Clients int
	Elapsed time.Duration
	// Acquisitions are successful Lock calls, Releases successful Unlock
	// calls.
	Acquisitions, Releases int64
	// Notifications are the watch events the ensemble delivered to the
	// clients about nodes other than their own lock nodes: what waiters
	// were woken with.
	Notifications int64
}

// NotificationsPerRelease is Notifications / Releases (0 without releases).
func (c HerdCell) NotificationsPerRelease() float64 {
	if c.Releases == 0 {
		return 0
	}
	return float64(c.Notifications) / float64(c.Releases)
}

// AcquisitionsPerSecond is Acquisitions / Elapsed.
func (c HerdCell) AcquisitionsPerSecond() float64 {
	return perSecond(c.Acquisitions, c.Elapsed)
}

// HerdFloor is the floor of a row: the same N clients, in turn, doing what
// any ZooKeeper lock's handoff needs at least — one write (the release)
// followed by one read by the next client (learning of it) — one pair at a
// time. Its rate bounds handoffs per second from above.
type HerdFloor struct {
	Clients  int
	Elapsed  time.Duration
	Handoffs int64 // write-then-read pairs done
}

// HandoffsPerSecond is Handoffs / Elapsed.
func (f HerdFloor) HandoffsPerSecond() float64 { return perSecond(f.Handoffs, f.Elapsed) }

func perSecond(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// HerdRow is one N: a cell per variant, and the floor.
type HerdRow struct {
	Clients int
	Cells   []HerdCell
	Floor   HerdFloor
}

// herdClient is one session of the experiment, counting the watch
// notifications it receives.
type herdClient struct {
	conn *zk.Conn
	sink atomic.Pointer[atomic.Int64] // where notifications are counted; nil: not counted

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
// clients are stopped by draining.
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
	return nil, fmt.Errorf("herd: unknown variant %q (known: %v)", variant, HerdVariants)
}

// RunHerd runs one row of the herd experiment on the ensemble at
// cfg.Addrs: it connects cfg.Clients sessions, runs each variant on a lock
// directory of its own for cfg.Duration with every client looping Lock,
// Unlock (zero hold time), then measures the floor with the same clients,
// and closes them.
func RunHerd(ctx context.Context, cfg HerdConfig) (HerdRow, error) {
	if len(cfg.Addrs) == 0 {
		return HerdRow{}, errors.New("herd: no server addresses: set HerdConfig.Addrs")
	}
	if cfg.Clients < 2 {
		return HerdRow{}, fmt.Errorf("herd: %d clients: want at least 2 to contend", cfg.Clients)
	}
	if cfg.Duration <= 0 {
		return HerdRow{}, fmt.Errorf("herd: duration %v: want a positive duration", cfg.Duration)
	}
	if cfg.Variants == nil {
		cfg.Variants = HerdVariants
	}
	for _, v := range cfg.Variants {
		if !slices.Contains(HerdVariants, v) {
			return HerdRow{}, fmt.Errorf("herd: unknown variant %q (known: %v)", v, HerdVariants)
		}
	}
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = 10 * time.Second
	}
	if cfg.Path == "" {
		cfg.Path = "/realzk-herd"
	}

	clients, err := connectHerd(ctx, cfg)
	defer func() {
		for _, c := range clients {
			c.conn.Close()
		}
	}()
	if err != nil {
		return HerdRow{}, err
	}
	admin := clients[0].conn
	if err := createPath(admin, cfg.Path); err != nil {
		return HerdRow{}, err
	}
	var id [4]byte
	_, _ = rand.Read(id[:])
	run := fmt.Sprintf("%s/n%d-%s", cfg.Path, cfg.Clients, hex.EncodeToString(id[:]))
	if err := createPath(admin, run); err != nil {
		return HerdRow{}, err
	}
	defer deleteTreeQuietly(admin, run)

	row := HerdRow{Clients: cfg.Clients}
	for _, variant := range cfg.Variants {
		dir := fmt.Sprintf("%s/%s", run, dirName(variant))
		if err := createPath(admin, dir); err != nil {
			return row, err
		}
		cell, err := runHerdCell(ctx, cfg, clients, variant, dir)
		if err != nil {
			return row, err
		}
		row.Cells = append(row.Cells, cell)
	}
	row.Floor, err = runHerdFloor(ctx, cfg, clients, run+"/floor")
	return row, err
}

// dirName turns a variant's name into a znode name.
func dirName(v HerdVariant) string {
	name := []byte(v)
	for i, b := range name {
		if b == '.' {
			name[i] = '-'
		}
	}
	return string(name)
}

// connectHerd opens cfg.Clients sessions and waits until each has its
// session. It returns the clients opened so far on error too.
func connectHerd(ctx context.Context, cfg HerdConfig) ([]*herdClient, error) {
	clients := make([]*herdClient, 0, cfg.Clients)
	for i := range cfg.Clients {
		c := &herdClient{own: map[string]bool{}}
		conn, _, err := zk.Connect(cfg.Addrs, cfg.SessionTimeout, zk.WithLogInfo(false), zk.WithLogger(quietZKLogger{}), zk.WithEventCallback(c.onEvent))
		if err != nil {
			return clients, fmt.Errorf("herd: connect client %d to %v: %w", i, cfg.Addrs, err)
		}
		c.conn = conn
		clients = append(clients, c)
	}
	for i, c := range clients {
		for c.conn.State() != zk.StateHasSession {
			if ctx.Err() != nil {
				return clients, fmt.Errorf("herd: client %d has no session (state %v): %w", i, c.conn.State(), ctx.Err())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return clients, nil
}

// quietZKLogger drops go-zookeeper's log lines.
type quietZKLogger struct{}

func (quietZKLogger) Printf(string, ...any) {}

// runHerdCell runs one variant with every client on dir.
func runHerdCell(ctx context.Context, cfg HerdConfig, clients []*herdClient, variant HerdVariant, dir string) (HerdCell, error) {
	var notifications, acquisitions, releases atomic.Int64
	lockers := make([]herdLocker, len(clients))
	for i, c := range clients {
		var err error
		if lockers[i], err = newHerdLocker(variant, c, dir); err != nil {
			return HerdCell{}, err
		}
		c.sink.Store(&notifications)
	}
	defer func() {
		for _, c := range clients {
			c.sink.Store(nil)
		}
	}()

	lockCtx, cancelLocks := context.WithCancel(ctx)
	defer cancelLocks()
	stop := make(chan struct{})
	var (
		wg       sync.WaitGroup
		failMu   sync.Mutex
		failures []error
	)
	fail := func(err error) {
		failMu.Lock()
		defer failMu.Unlock()
		failures = append(failures, err)
	}
	start := time.Now()
	for i, l := range lockers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := l.Lock(lockCtx); err != nil {
					if lockCtx.Err() == nil {
						fail(fmt.Errorf("client %d: Lock: %w", i, err))
					}
					return
				}
				acquisitions.Add(1)
				unlockCtx, cancel := context.WithTimeout(ctx, time.Minute)
				err := l.Unlock(unlockCtx)
				cancel()
				if err != nil {
					fail(fmt.Errorf("client %d: Unlock: %w", i, err))
					return
				}
				releases.Add(1)
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	cell := HerdCell{Variant: variant, Clients: len(clients)}
	snapshot := func() {
		cell.Elapsed = time.Since(start)
		cell.Acquisitions, cell.Releases, cell.Notifications = acquisitions.Load(), releases.Load(), notifications.Load()
	}
	select {
	case <-time.After(cfg.Duration):
	case <-done:
	case <-ctx.Done():
	}
	close(stop)
	if !cfg.Drain {
		snapshot()
		if variant != HerdZKLock {
			cancelLocks()
		}
	}
	select {
	case <-done:
	case <-ctx.Done():
		return cell, fmt.Errorf("herd: %s with %d clients: the clients did not stop: %w", variant, len(clients), ctx.Err())
	}
	if cfg.Drain {
		snapshot()
	}
	if err := errors.Join(failures...); err != nil {
		return cell, fmt.Errorf("herd: %s with %d clients: %w", variant, len(clients), err)
	}
	return cell, nil
}

// runHerdFloor measures the floor on node: client k writes it, client k+1
// reads it, one pair at a time, for cfg.Duration.
func runHerdFloor(ctx context.Context, cfg HerdConfig, clients []*herdClient, node string) (HerdFloor, error) {
	if _, err := clients[0].conn.Create(node, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return HerdFloor{}, fmt.Errorf("herd: floor: create %s: %w", node, err)
	}
	floor := HerdFloor{Clients: len(clients)}
	start := time.Now()
	for k := 0; time.Since(start) < cfg.Duration; k++ {
		if err := ctx.Err(); err != nil {
			return floor, fmt.Errorf("herd: floor: %w", err)
		}
		writer, reader := clients[k%len(clients)].conn, clients[(k+1)%len(clients)].conn
		if _, err := writer.Set(node, []byte{byte(k)}, -1); err != nil {
			return floor, fmt.Errorf("herd: floor: set %s: %w", node, err)
		}
		if _, _, err := reader.Get(node); err != nil {
			return floor, fmt.Errorf("herd: floor: get %s: %w", node, err)
		}
		floor.Handoffs++
	}
	floor.Elapsed = time.Since(start)
	return floor, nil
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
