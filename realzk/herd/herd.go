package herd

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

	"github.com/zkmodel/zkmodel/internal/lockers"
	"github.com/zkmodel/zkmodel/internal/mutants"
	"github.com/zkmodel/zkmodel/realzk"
	"github.com/zkmodel/zkmodel/recipe"
)

// Variant names a lock the herd experiment runs, or the no-contention
// baseline.
type Variant string

// The locks of the herd experiment, and the baseline.
const (
	// Recipe is the product's lock (package recipe): each waiter watches
	// its predecessor only.
	Recipe Variant = "recipe"
	// WatchParent is check's "mutant-a-watch-parent": each waiter
	// watches the lock's children, so every change wakes every waiter.
	WatchParent Variant = "watch-parent"
	// ZKLock is go-zookeeper's own zk.Lock (it watches its predecessor
	// with GetW).
	ZKLock Variant = "zk.Lock"
	// Curator is Curator 5.4's InterProcessMutex, run by a Java driver
	// (N sessions in one JVM) that the experiment starts.
	Curator Variant = "curator"
	// Kazoo is kazoo 2.8's counterpart of a primitive beyond the mutex,
	// run by a Python driver (N sessions in one process).
	Kazoo Variant = "kazoo"
	// None is the baseline: the N sessions are connected but idle, and
	// only the bystanders work.
	None Variant = "none"
)

// Variants lists every lock, in the order the first round runs them
// (later rounds rotate it).
var Variants = []Variant{Recipe, WatchParent, ZKLock, Curator}

// Implementations lists the implementations of the primitives beyond the
// mutex: package recipe's, Curator's and kazoo's.
var Implementations = []Variant{Recipe, Curator, Kazoo}

// Experiment describes a herd experiment: for each N in Clients, N
// sessions contend for one lock with zero hold time, each variant (and the
// baseline) for Duration per round, the variants alternating round after
// round, while Bystanders sessions do ordinary work on unrelated paths at
// BystanderRate operations per second in all. Then, for each N in
// PrimitiveClients, N sessions contend for each primitive beyond the mutex in
// each of Implementations, every contender's connection going through a
// counting proxy (realzk.CountWire) that counts its requests and the notifications
// it receives.
type Experiment struct {
	// Addrs are the ensemble's client addresses; each session gets all of
	// them (go-zookeeper picks one at random). The servers' load is read
	// from them with mntr.
	Addrs []string
	// Clients are the numbers of contending sessions (N) for the mutex, each
	// at least 2; needed only when Primitives has Mutex.
	Clients []int
	// Duration of one cell (one variant, one N, one round); at least 100ms.
	Duration time.Duration
	// Rounds per N; every variant runs once per round. At least 1 (the
	// command wants 3).
	Rounds int
	// Variants of the mutex to run; nil means Variants. The baseline
	// always runs with them.
	Variants []Variant
	// Primitives to measure; nil means Primitives (all). Mutex runs
	// Variants with Clients, the others Implementations with PrimitiveClients.
	Primitives []Primitive
	// Implementations of the primitives beyond the mutex; nil means
	// Implementations.
	Implementations []Variant
	// PrimitiveClients are the numbers of contending sessions (N) for the
	// primitives beyond the mutex; nil means 10 and 50. Each is at least 2,
	// and more than Leases when the semaphore runs.
	PrimitiveClients []int
	// Leases of the semaphore; 0 means 2.
	Leases int
	// PrimitiveDuration is the duration of the cells beyond the mutex; 0
	// means Duration. At least 100ms.
	PrimitiveDuration time.Duration
	// WriterEvery spaces the read-write lock's writers: contender i takes
	// the write lock when i % WriterEvery == 0, the read lock otherwise; 0
	// means 4 (a quarter write; 1 makes every contender a writer).
	WriterEvery int
	// Bystanders is the number of bystander sessions (0 means 8);
	// BystanderRate their offered load in operations per second in all
	// (0 means 400).
	Bystanders    int
	BystanderRate float64
	// SessionTimeout of every session; 0 means realzk.DefaultMaxSessionTimeout.
	SessionTimeout time.Duration
	// Path under which the experiment works; "" means "/realzk-herd".
	Path string
	// Progress, when set, gets a line per cell.
	Progress io.Writer
}

// withDefaults validates x and fills in its defaults. It is all the
// checking the experiment does before connecting anywhere.
func (x Experiment) withDefaults() (Experiment, error) {
	if len(x.Addrs) == 0 {
		return x, errors.New("herd: no server addresses: set Experiment.Addrs")
	}
	if x.Primitives == nil {
		x.Primitives = Primitives
	}
	if err := checkList("primitive", x.Primitives, Primitives); err != nil {
		return x, err
	}
	mutex := slices.Contains(x.Primitives, Mutex)
	if mutex && len(x.Clients) == 0 {
		return x, errors.New("herd: no numbers of clients: set Experiment.Clients, e.g. 10,50,200,500")
	}
	for _, n := range x.Clients {
		if n < 2 {
			return x, fmt.Errorf("herd: %d clients: want at least 2 to contend", n)
		}
	}
	if x.Implementations == nil {
		x.Implementations = Implementations
	}
	beyond := len(x.Primitives) > 1 || !mutex
	if err := checkList("implementation", x.Implementations, Implementations); err != nil && beyond {
		return x, err
	}
	if x.PrimitiveClients == nil {
		x.PrimitiveClients = []int{10, 50}
	}
	if x.Leases == 0 {
		x.Leases = 2
	}
	if x.Leases < 1 {
		return x, fmt.Errorf("herd: %d leases: want at least 1", x.Leases)
	}
	if x.WriterEvery == 0 {
		x.WriterEvery = 4
	}
	if x.WriterEvery < 1 {
		return x, fmt.Errorf("herd: a writer every %d contenders: want at least 1 (1: every contender writes)", x.WriterEvery)
	}
	if beyond && len(x.PrimitiveClients) == 0 {
		return x, fmt.Errorf("herd: no numbers of clients for %v: set Experiment.PrimitiveClients, e.g. 10,50", x.Primitives)
	}
	for _, n := range x.PrimitiveClients {
		if !beyond {
			break
		}
		if n < 2 {
			return x, fmt.Errorf("herd: %d clients for the primitives: want at least 2 to contend", n)
		}
		if slices.Contains(x.Primitives, Semaphore) && n <= x.Leases {
			return x, fmt.Errorf("herd: %d clients for a semaphore of %d leases: want more clients than leases, or none waits", n, x.Leases)
		}
	}
	if x.Duration < 100*time.Millisecond {
		return x, fmt.Errorf("herd: cell duration %v: want at least 100ms", x.Duration)
	}
	if x.PrimitiveDuration == 0 {
		x.PrimitiveDuration = x.Duration
	}
	if x.PrimitiveDuration < 100*time.Millisecond {
		return x, fmt.Errorf("herd: cell duration %v for the primitives beyond the mutex: want at least 100ms", x.PrimitiveDuration)
	}
	if x.Rounds < 1 {
		return x, fmt.Errorf("herd: %d rounds: want at least 1", x.Rounds)
	}
	if x.Variants == nil {
		x.Variants = Variants
	}
	if err := checkList("variant", x.Variants, Variants); err != nil && mutex {
		return x, err
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
		x.SessionTimeout = realzk.DefaultMaxSessionTimeout
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

// checkList reports an empty list, an unknown name or a name given twice.
func checkList[T ~string](what string, list, known []T) error {
	if len(list) == 0 {
		return fmt.Errorf("herd: no %ss: want some of %v", what, known)
	}
	for i, v := range list {
		if !slices.Contains(known, v) {
			return fmt.Errorf("herd: unknown %s %q (known: %v)", what, v, known)
		}
		if slices.Contains(list[:i], v) {
			return fmt.Errorf("herd: %s %q given twice", what, v)
		}
	}
	return nil
}

// Validate checks x as Run would, without connecting.
func (x Experiment) Validate() error {
	_, err := x.withDefaults()
	return err
}

// Cell is what one variant (or the baseline) did with N clients in one
// round.
type Cell struct {
	// Primitive is what the cell measured; "" is Mutex.
	Primitive Primitive
	// Variant is the lock (for the mutex) or the implementation.
	Variant Variant
	Clients int
	Round   int
	Elapsed time.Duration
	// Acquisitions are Lock calls that succeeded within the cell, Releases
	// their successful Unlock calls (for a semaphore, leases acquired and
	// returned; for an election, leaderships won and resigned).
	Acquisitions, Releases int64
	// WriteAcquisitions and WriteReleases are the read-write lock's
	// acquisitions and releases of its write side, counted in Acquisitions
	// and Releases too.
	WriteAcquisitions, WriteReleases int64
	// Wire is what the counting proxies saw on the contenders' connections
	// during the cell (primitives beyond the mutex; zero for the mutex).
	Wire realzk.WireCounts
	// Notifications are the watch events the lock sessions received about
	// nodes other than their own lock nodes (what waiters were woken with),
	// counted by the Go clients; -1 where not counted (Curator, kazoo).
	Notifications int64
	// Requests are the requests the lock sessions sent (pings, auth and
	// connect requests excepted), counted by the Go clients on their
	// connections; -1 where not counted (Curator, kazoo).
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

	// clientsBefore are the Go clients' Requests and Notifications read
	// just before the proxies' counts at the end of the cell (Requests and
	// Notifications are read just after): the two bracket the proxies'.
	clientsBefore struct{ requests, notifications int64 }
}

// Metric is a figure derived from a cell.
type Metric int

// The figures of a cell.
const (
	MetricAcquisitionsPerSecond Metric = iota
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
	// The figures of the primitives beyond the mutex, from the counting
	// proxies: requests per acquisition, wake-ups (watch notifications) per
	// release, the read-write lock's wake-ups by what was released (a write
	// node, a read node), and the semaphore's wake-ups on its leases
	// directory per release and on its admission mutex per acquisition.
	MetricWireRequestsPerAcquisition
	MetricWakeupsPerRelease
	MetricWakeupsPerWriteRelease
	MetricWakeupsPerReadRelease
	MetricLeaseWakeupsPerRelease
	MetricMutexWakeupsPerAcquisition
)

// Value returns the figure m of c, or NaN when the cell has none (no data,
// not counted for this lock, no releases, or the baseline for a lock
// figure). Latencies are in milliseconds.
func (c Cell) Value(m Metric) float64 {
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
	lock := c.Variant != None
	beyond := c.primitive() != Mutex
	class := func(name string) int64 { return c.Wire.Classes[name] }
	only := func(p Primitive, n, d int64) float64 {
		if c.primitive() != p {
			return nan
		}
		return per(n, d)
	}
	switch m {
	case MetricWireRequestsPerAcquisition, MetricWakeupsPerRelease:
		if !beyond {
			return nan
		}
		if m == MetricWireRequestsPerAcquisition {
			return per(c.Wire.Requests, c.Acquisitions)
		}
		return per(c.Wire.Notifications, c.Releases)
	case MetricWakeupsPerWriteRelease:
		return only(RWLock, class(wakeExclusive), c.WriteReleases)
	case MetricWakeupsPerReadRelease:
		return only(RWLock, class(wakeRead), c.Releases-c.WriteReleases)
	case MetricLeaseWakeupsPerRelease:
		return only(Semaphore, class(wakeChildren), c.Releases)
	case MetricMutexWakeupsPerAcquisition:
		return only(Semaphore, class(wakeExclusive), c.Acquisitions)
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
		return ms(map[Metric]time.Duration{MetricBystanderP50: c.Bystanders.P50, MetricBystanderP99: c.Bystanders.P99, MetricBystanderMax: c.Bystanders.Max}[m])
	case MetricBystanderErrors:
		return float64(c.Bystanders.Errors)
	case MetricMaxOutstanding:
		return float64(c.Server.MaxOutstanding)
	case MetricMaxWatches:
		return float64(c.Server.MaxWatches)
	}
	return nan
}

// primitive is the cell's primitive, Mutex for "".
func (c Cell) primitive() Primitive {
	if c.Primitive == "" {
		return Mutex
	}
	return c.Primitive
}

// Results are the cells of an experiment, in the order they ran.
type Results struct {
	Clients  []int
	Variants []Variant // the mutex's locks, in the first round's order; none when the mutex did not run
	// Primitives are the primitives beyond the mutex that ran, Implementations
	// theirs, PrimitiveClients their numbers of contenders, Leases the
	// semaphore's, WriterEvery the read-write lock's spacing of writers.
	Primitives        []Primitive
	Implementations   []Variant
	PrimitiveClients  []int
	PrimitiveDuration time.Duration
	Leases            int
	WriterEvery       int
	Rounds            int
	Duration          time.Duration
	Bystanders        int
	BystanderRate     float64
	Servers           int
	SessionTimeout    time.Duration
	Cells             []Cell
}

// Spread returns metric m over the rounds of the mutex's variant v with n
// clients.
func (r Results) Spread(v Variant, n int, m Metric) Spread {
	return r.PrimitiveSpread(Mutex, v, n, m)
}

// PrimitiveSpread returns metric m over the rounds of primitive p's
// implementation v with n clients.
func (r Results) PrimitiveSpread(p Primitive, v Variant, n int, m Metric) Spread {
	var values []float64
	for _, c := range r.Cells {
		if c.primitive() == p && c.Variant == v && c.Clients == n {
			values = append(values, c.Value(m))
		}
	}
	return SpreadOf(values)
}

// roundOrder is the order of round r: the variants and the baseline,
// rotated by r, so that each takes every position in turn.
func roundOrder(variants []Variant, r int) []Variant {
	return rotate(append(slices.Clone(variants), None), r)
}

// rotate returns list rotated left by r.
func rotate[T any](list []T, r int) []T {
	k := r % len(list)
	return append(slices.Clone(list[k:]), list[:k]...)
}

// herdRun is what the phases of one experiment share.
type herdRun struct {
	x       Experiment
	res     *Results
	by      *bystanders
	admin   *zk.Conn // deletes what each cell leaves
	dir     string   // the run's directory
	drivers herdDrivers

	total, done int
	started     time.Time
}

func (h *herdRun) progress(format string, args ...any) {
	if h.x.Progress != nil {
		fmt.Fprintf(h.x.Progress, "herd: "+format+"\n", args...)
	}
}

// record adds a finished cell to the results, deletes its directory and
// says how far the experiment is.
func (h *herdRun) record(cell Cell, dir string) {
	h.res.Cells = append(h.res.Cells, cell)
	deleteTreeQuietly(h.admin, dir)
	h.done++
	eta := time.Duration(float64(time.Since(h.started)) / float64(h.done) * float64(h.total-h.done)).Round(time.Second)
	what := string(cell.Variant)
	if p := cell.primitive(); p != Mutex {
		what = string(p) + " " + what
	}
	h.progress("%3d/%d N=%-4d round %d %-18s %s (about %v left)", h.done, h.total, cell.Clients, cell.Round, what, cellSummary(cell), eta)
}

// Run runs x on the ensemble at x.Addrs. A cell that fails
// (a lock's error, a driver missing) is recorded with its Err and the
// experiment goes on; errors that leave nothing to measure (no connection)
// end it.
func Run(ctx context.Context, x Experiment) (Results, error) {
	x, err := x.withDefaults()
	if err != nil {
		return Results{}, err
	}
	mutex := slices.Contains(x.Primitives, Mutex)
	beyond := slices.DeleteFunc(slices.Clone(x.Primitives), func(p Primitive) bool { return p == Mutex })
	res := Results{Rounds: x.Rounds, Duration: x.Duration, Bystanders: x.Bystanders, BystanderRate: x.BystanderRate,
		Servers: len(x.Addrs), SessionTimeout: x.SessionTimeout}
	h := &herdRun{x: x, res: &res, started: time.Now()}
	if mutex {
		res.Clients, res.Variants = x.Clients, x.Variants
		h.total += len(x.Clients) * x.Rounds * (len(x.Variants) + 1)
	}
	if len(beyond) > 0 {
		res.Primitives, res.Implementations, res.PrimitiveClients = beyond, x.Implementations, x.PrimitiveClients
		res.Leases, res.WriterEvery, res.PrimitiveDuration = x.Leases, x.WriterEvery, x.PrimitiveDuration
		h.total += len(x.PrimitiveClients) * x.Rounds * len(beyond) * len(x.Implementations)
	}
	var id [4]byte
	_, _ = rand.Read(id[:])
	h.dir = fmt.Sprintf("%s/%s", x.Path, hex.EncodeToString(id[:]))

	if h.by, err = startBystanders(ctx, x, h.dir+"/bystanders"); err != nil {
		return res, err
	}
	defer h.by.close()
	h.admin = h.by.clients[0]
	defer deleteTreeQuietly(h.admin, h.dir)
	defer h.drivers.close()
	if mutex {
		if err := h.runMutex(ctx); err != nil {
			return res, err
		}
	}
	if len(beyond) > 0 {
		if err := h.runBeyond(ctx, beyond); err != nil {
			return res, err
		}
	}
	return res, nil
}

// runMutex runs the mutex's cells: for each N, the rounds of every variant
// and the baseline.
func (h *herdRun) runMutex(ctx context.Context) error {
	x := h.x
	for _, n := range x.Clients {
		h.progress("N=%d: connecting %d sessions", n, n)
		clients, err := connectHerd(ctx, x, x.Addrs, n)
		var sessions herdSessions
		if err == nil && slices.Contains(x.Variants, Curator) {
			sessions.start(ctx, h, Curator, x.Addrs, n)
		}
		for r := range x.Rounds {
			for _, v := range roundOrder(x.Variants, r) {
				if err != nil {
					break
				}
				dir := fmt.Sprintf("%s/n%d-r%d-%s", h.dir, n, r, dirName(v))
				err = h.cell(ctx, x, &sessions, clients, herdCellSpec{primitive: Mutex, variant: v}, n, r, dir)
			}
		}
		closeHerd(clients)
		sessions.close()
		if err != nil {
			return err
		}
	}
	return nil
}

// runBeyond runs the cells of the primitives beyond the mutex: for each N,
// the rounds of every primitive in every implementation, the
// implementations' order rotating from round to round. Every contender
// connects through counting proxies, one in front of each server.
func (h *herdRun) runBeyond(ctx context.Context, primitives []Primitive) error {
	x := h.x
	x.Duration = x.PrimitiveDuration
	proxies, err := startHerdProxies(ctx, x.Addrs)
	if err != nil {
		return err
	}
	defer proxies.close()
	for _, n := range x.PrimitiveClients {
		var clients []*herdClient
		if slices.Contains(x.Implementations, Recipe) {
			h.progress("N=%d: connecting %d sessions through the counting proxies", n, n)
			clients, err = connectHerd(ctx, x, proxies.addrs(), n)
		}
		var sessions herdSessions
		for _, v := range x.Implementations {
			if err == nil && v != Recipe {
				sessions.start(ctx, h, v, proxies.addrs(), n)
			}
		}
		for r := range x.Rounds {
			for _, p := range primitives {
				for _, v := range rotate(x.Implementations, r) {
					if err != nil {
						break
					}
					dir := fmt.Sprintf("%s/n%d-r%d-%s-%s", h.dir, n, r, p, dirName(v))
					err = h.cell(ctx, x, &sessions, clients, herdCellSpec{primitive: p, variant: v, proxies: proxies}, n, r, dir)
				}
			}
		}
		closeHerd(clients)
		sessions.close()
		if err != nil {
			return err
		}
	}
	return nil
}

// cell runs spec's cell of round r with n clients on dir and records it; it
// returns an error when ctx is done, which ends the experiment.
func (h *herdRun) cell(ctx context.Context, x Experiment, sessions *herdSessions, clients []*herdClient, spec herdCellSpec, n, r int, dir string) error {
	cell, err := sessions.runCell(ctx, h, x, clients, spec, dir)
	if err != nil {
		cell.Err = err.Error()
	}
	cell.Primitive, cell.Variant, cell.Clients, cell.Round = spec.primitive, spec.variant, n, r+1
	h.record(cell, dir)
	if ctx.Err() != nil {
		return fmt.Errorf("herd: %w", ctx.Err())
	}
	return nil
}

// herdSessions are the drivers running for one N, by implementation, and
// why those that are not did not start.
type herdSessions struct {
	running map[Variant]*driverSession
	failed  map[Variant]error
}

// start starts v's driver with n sessions on addrs; a failure is kept for
// the cells, which then have no data.
func (s *herdSessions) start(ctx context.Context, h *herdRun, v Variant, addrs []string, n int) {
	if s.running == nil {
		s.running, s.failed = map[Variant]*driverSession{}, map[Variant]error{}
	}
	d, err := h.drivers.get(ctx, v)
	if err == nil {
		s.running[v], err = d.start(ctx, addrs, n, h.x.SessionTimeout)
	}
	if err != nil {
		s.failed[v] = err
		h.progress("N=%d: %s cells will have no data: %v", n, v, err)
	}
}

// runCell runs one cell of x: spec's Go lock or recipe on clients, or a
// driver.
func (s *herdSessions) runCell(ctx context.Context, h *herdRun, x Experiment, clients []*herdClient, spec herdCellSpec, dir string) (Cell, error) {
	switch spec.variant {
	case Curator, Kazoo:
		if session := s.running[spec.variant]; session != nil {
			return runDriverCell(ctx, x, session, h.by, spec, dir)
		}
		if err := s.failed[spec.variant]; err != nil {
			return Cell{}, err
		}
		return Cell{}, fmt.Errorf("herd: the %s driver did not start", spec.variant)
	}
	return runGoCell(ctx, x, clients, h.by, spec, dir)
}

func (s *herdSessions) close() {
	for _, session := range s.running {
		session.close()
	}
}

// herdDrivers makes each driver once, on first use, and keeps why one could
// not be made.
type herdDrivers struct {
	made map[Variant]*herdDriver
	errs map[Variant]error
}

func (d *herdDrivers) get(ctx context.Context, v Variant) (*herdDriver, error) {
	if d.made == nil {
		d.made, d.errs = map[Variant]*herdDriver{}, map[Variant]error{}
	}
	if drv, ok := d.made[v]; ok {
		return drv, d.errs[v]
	}
	var drv *herdDriver
	var err error
	switch v {
	case Curator:
		drv, err = newCuratorDriver(ctx)
	case Kazoo:
		drv, err = newKazooDriver(ctx)
	default:
		err = fmt.Errorf("herd: %s has no driver", v)
	}
	d.made[v], d.errs[v] = drv, err
	return drv, err
}

func (d *herdDrivers) close() {
	for _, drv := range d.made {
		if drv != nil {
			drv.close()
		}
	}
}

// cellSummary is a cell's progress line.
func cellSummary(c Cell) string {
	if c.Err != "" {
		return "no data: " + c.Err
	}
	by := fmt.Sprintf("bystander p99 %.1fms", c.Value(MetricBystanderP99))
	if c.Variant == None {
		return by
	}
	if c.primitive() != Mutex {
		return fmt.Sprintf("%.0f acq/s, %.2f requests/acquisition, %.2f wake-ups/release, %s", c.Value(MetricAcquisitionsPerSecond),
			c.Value(MetricWireRequestsPerAcquisition), c.Value(MetricWakeupsPerRelease), by)
	}
	return fmt.Sprintf("%.0f acq/s, %.2f server notifications/release, %s", c.Value(MetricAcquisitionsPerSecond), c.Value(MetricServerNotificationsPerRelease), by)
}

// dirName turns a variant's name into a znode name.
func dirName(v Variant) string { return strings.ReplaceAll(string(v), ".", "-") }

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

// newHerdLocker makes spec's lock (or the recipe's primitive) on dir for
// client c, the i-th; writes says whether it is a read-write lock's writer.
func newHerdLocker(x Experiment, spec herdCellSpec, c *herdClient, i int, dir string) (l lockers.Locker, writes bool, err error) {
	path := spec.path(dir)
	switch spec.primitive {
	case RWLock:
		rw := recipe.NewRWLock(c.conn, path)
		if i%x.WriterEvery == 0 {
			return rw.WriteLock(), true, nil
		}
		return rw.ReadLock(), false, nil
	case Semaphore:
		return lockers.Semaphore(recipe.NewSemaphore(c.conn, path, x.Leases)), false, nil
	case Election:
		return lockers.Election(recipe.NewElection(c.conn, path), nil), false, nil
	}
	l, err = newMutex(spec.variant, c, path)
	return l, false, err
}

// newMutex makes variant's lock on dir for client c.
func newMutex(variant Variant, c *herdClient, dir string) (lockers.Locker, error) {
	switch variant {
	case Recipe:
		return recipe.NewLock(herdConn{Conn: c.conn, client: c}, dir), nil
	case WatchParent:
		return mutants.NewMutex(herdConn{Conn: c.conn, client: c}, dir, mutants.WatchParent, rand.Reader), nil
	case ZKLock:
		return lockers.ZKLock(zk.NewLock(c.conn, dir, zk.WorldACL(zk.PermAll))), nil
	}
	return nil, fmt.Errorf("herd: %q is not a Go lock (Go locks: %v)", variant, []Variant{Recipe, WatchParent, ZKLock})
}

// connectHerd opens n lock sessions and waits until each has its session.
// It returns the clients opened so far on error too.
func connectHerd(ctx context.Context, x Experiment, addrs []string, n int) ([]*herdClient, error) {
	clients := make([]*herdClient, 0, n)
	for i := range n {
		c := &herdClient{own: map[string]bool{}}
		conn, _, err := zk.Connect(addrs, x.SessionTimeout, zk.WithLogInfo(false), zk.WithLogger(quietZKLogger{}),
			zk.WithEventCallback(c.onEvent), zk.WithDialer(realzk.CountingDialer(&c.requests)))
		if err != nil {
			return clients, fmt.Errorf("herd: connect client %d to %v: %w", i, addrs, err)
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

func (h *handoffs) fill(c *Cell) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c.setHandoffs(h.samples)
}

// setHandoffs fills in the cell's handoff count and percentiles from samples.
func (c *Cell) setHandoffs(samples []time.Duration) {
	c.Handoffs, c.HandoffP50, c.HandoffP99 = len(samples), Percentile(samples, 50), Percentile(samples, 99)
}

// runGoCell runs one Go lock (or the baseline, or the recipe's primitive)
// with every client on dir for x.Duration: each client loops Lock, Unlock
// with zero hold time. Figures are taken at the end of the cell; then the
// recipe's and watch-parent's waiters are cancelled and zk.Lock's drained.
func runGoCell(ctx context.Context, x Experiment, clients []*herdClient, by *bystanders, spec herdCellSpec, dir string) (Cell, error) {
	variant := spec.variant
	cell := Cell{Primitive: spec.primitive, Variant: variant, Clients: len(clients), Notifications: -1, Requests: -1}
	if variant == None {
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
	var notifications, requests, acquisitions, releases, writeAcquisitions, writeReleases atomic.Int64
	locks := make([]lockers.Locker, len(clients))
	writers := make([]bool, len(clients))
	for i, c := range clients {
		var err error
		if locks[i], writers[i], err = newHerdLocker(x, spec, c, i, dir); err != nil {
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
	wire := spec.proxies.counts()
	start := time.Now()
	deadline := start.Add(x.Duration)
	for i, l := range locks {
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
					if writers[i] {
						writeAcquisitions.Add(1)
					}
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
					if writers[i] {
						writeReleases.Add(1)
					}
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
	cell.clientsBefore.requests, cell.clientsBefore.notifications = requests.Load(), notifications.Load()
	cell.Wire = spec.proxies.counts().Sub(wire)
	cell.Acquisitions, cell.Releases = acquisitions.Load(), releases.Load()
	cell.WriteAcquisitions, cell.WriteReleases = writeAcquisitions.Load(), writeReleases.Load()
	cell.Notifications, cell.Requests = notifications.Load(), requests.Load()
	cell.Server = load.end(ctx)
	cell.Bystanders = by.end(window)
	if spec.primitive == Mutex {
		hand.fill(&cell)
	}
	if variant != ZKLock {
		cancelLocks()
	}
	select {
	case <-stopped:
	case <-ctx.Done():
		return cell, fmt.Errorf("herd: %s with %d clients: the clients did not stop: %w", variant, len(clients), ctx.Err())
	}
	if err := errors.Join(failures...); err != nil {
		return cell, fmt.Errorf("herd: %s %s with %d clients: %w", spec.primitive, variant, len(clients), err)
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
