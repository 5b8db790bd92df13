package check

import (
	crand "crypto/rand"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/check/shard"
	"github.com/zkmodel/zkmodel/internal/lockers"
	"github.com/zkmodel/zkmodel/model"
	"github.com/zkmodel/zkmodel/recipe"
)

// Locker is what the checker exercises: a lock on one path. A Locker that also has
// `Lost() <-chan struct{}` is told of loss through it: the workload checks it before writing.
//
// It is internal/lockers' Locker, which the project's adapters (NewSemaphoreLocker, NewElectionLocker) return:
// Lock blocks until the lock is held or ctx is done, Unlock releases it, Token is the hold's fencing token.
type Locker = lockers.Locker

// RWLocker is what the checker exercises of a read-write lock (Config.Primitive ReadWrite): Lock and Unlock
// are the write side, and RLocker returns the read side, as sync.RWMutex's RLocker does. RLocker must return
// the same read side every time it is called on one RWLocker. Either side may have Lost(), as a Locker may.
type RWLocker interface {
	Locker
	RLocker() Locker
}

// Primitive is the kind of recipe a Factory makes, which decides the workload's roles and the properties a
// run is judged by (see the package documentation).
type Primitive uint8

// The primitives.
const (
	Mutex     Primitive = iota // a mutual-exclusion lock (the default)
	ReadWrite                  // a read-write lock: the Factory's Locker is an RWLocker
	Semaphore                  // a counting semaphore of Config.Leases leases: Lock acquires a lease, Unlock releases it
	Election                   // leader election: Lock campaigns until the client leads, Unlock resigns
)

var primitiveNames = []string{"mutex", "rwlock", "semaphore", "election"}

// String names the primitive as traces do: "mutex", "rwlock", "semaphore" or "election".
func (p Primitive) String() string {
	if int(p) < len(primitiveNames) {
		return primitiveNames[p]
	}
	return fmt.Sprintf("primitive(%d)", uint8(p))
}

// ParsePrimitive is the inverse of Primitive.String.
func ParsePrimitive(s string) (Primitive, error) {
	for i, n := range primitiveNames {
		if n == s {
			return Primitive(i), nil
		}
	}
	return 0, fmt.Errorf("check: unknown primitive %q (known: %s)", s, strings.Join(primitiveNames, ", "))
}

// Factory makes one client's Locker on the given connection and lock path. It is called once per client per
// run, inside the run. It must be deterministic: take randomness from RandFor(conn), not crypto/rand, or runs
// will not replay.
type Factory func(conn recipe.Conn, path string) Locker

// Fault is a set of fault kinds the scheduler may inject.
type Fault uint16

// The fault kinds.
const (
	FaultLoseRequest Fault = 1 << iota // a request is lost with its connection: not applied, caller sees ErrConnectionClosed
	FaultLoseReply                     // a reply is lost with its connection: applied, caller sees ErrConnectionClosed
	FaultDisconnect                    // a connection drops with whatever was in flight; the client reconnects later
	FaultExpire                        // the server expires a session
	FaultAdvance                       // the virtual clock jumps past the session timeout (disconnected sessions expire, deadlines pass)
	FaultCancel                        // a waiter's context is cancelled
	FaultStopServer                    // a server of the ensemble stops (the runs have 3); it starts again later

	// AllFaults enables every fault kind.
	AllFaults = FaultLoseRequest | FaultLoseReply | FaultDisconnect | FaultExpire | FaultAdvance | FaultCancel | FaultStopServer
)

var faultNames = []struct {
	f    Fault
	name string
}{{FaultLoseRequest, "lose-request"}, {FaultLoseReply, "lose-reply"}, {FaultDisconnect, "disconnect"}, {FaultExpire, "expire"}, {FaultAdvance, "advance"}, {FaultCancel, "cancel"}, {FaultStopServer, "stop"}}

// String lists the fault kinds, e.g. "lose-request,expire", or "none".
func (f Fault) String() string {
	var names []string
	for _, n := range faultNames {
		if f&n.f != 0 {
			names = append(names, n.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ",")
}

// ParseFaults is the inverse of Fault.String.
func ParseFaults(s string) (Fault, error) {
	if s == "none" || s == "" {
		return 0, nil
	}
	var f Fault
	for _, part := range strings.Split(s, ",") {
		found := false
		for _, n := range faultNames {
			if n.name == strings.TrimSpace(part) {
				f |= n.f
				found = true
			}
		}
		if !found {
			return 0, fmt.Errorf("check: unknown fault kind %q (known: lose-request, lose-reply, disconnect, expire, advance, cancel, stop)", part)
		}
	}
	return f, nil
}

// Config says what to explore. Zero fields take the defaults shown.
type Config struct {
	Name     string        // the variant's name, used in trace file names (default "lock")
	Clients  int           // K, the number of clients contending (default 3)
	Rounds   int           // lock/unlock rounds per client (default 2)
	Steps    int           // scheduler decisions before the faults stop and the run is drained (default 120)
	Faults   Fault         // fault kinds to inject (default: none; use AllFaults)
	MaxFault int           // at most this many faults per run (default 4)
	Deadline time.Duration // odd-numbered clients' Lock calls time out after this much virtual time (default 30s; <0 disables)
	Checks   int           // interleavings to explore (default 100; rapid's -rapid.checks overrides it when set)
	Seed     uint64        // rapid's seed (default 0: rapid picks one, or -rapid.seed)
	TraceDir string        // where failure traces go (default: zkmodel-traces in the OS's temporary directory; -check.traces overrides)
	Progress io.Writer     // if set, a progress line every second while exploring
	Shrink   time.Duration // how long rapid may spend shrinking a failure (default 20s; -rapid.shrinktime overrides)

	// Primitive is what the Factory makes (default Mutex): it decides the roles of the workload and the
	// properties (see the package documentation).
	Primitive Primitive
	// Leases is a Semaphore's number of leases, at most that many valid holders at once (default 2; only
	// for Semaphore).
	Leases int

	// Exhaustive makes Run and RunZK enumerate every schedule instead of sampling Checks of them: every
	// sequence of Steps scheduler decisions (at most MaxFault of them faults), each followed by the fair
	// drain, for Clients clients of Rounds rounds. A pass then holds for every such schedule. On a failure
	// the trace is the shortest failing schedule (iterative deepening over Steps). See exhaustive.go.
	Exhaustive bool
	// NoReduction turns off the exhaustive mode's reductions — the depth-bounded search's sleep sets, the
	// preemption-bounded search's state cache — for comparison: the same verdicts, more schedules.
	NoReduction bool
	// Preemptions, when positive, makes the exhaustive search one of complete runs under a preemption bound,
	// as CHESS's: every schedule to quiescence (no Steps cut-off) that preempts a runnable client at most
	// this many times, with at most MaxFault faults anywhere (see preemption.go). Unpreempted asks for none;
	// 0 keeps the search of every sequence of Steps decisions, each followed by a fair drain.
	Preemptions int
	// DPOR makes a preemption-bounded exhaustive search (Preemptions set) reduce by dynamic partial-order
	// reduction — bounded POR, which explores at each decision point only the clients that races in the runs
	// so far call for (see dpor.go) — instead of by the state cache. The same verdicts; fewer schedules
	// where clients' steps mostly commute, more where the cache merges much. It runs as one search (not
	// split among workers or -check.shard parts). -check.dpor sets it.
	DPOR bool
	// Budget, if positive, stops an exhaustive search after this much wall time; the Report then says the
	// bound was not exhausted.
	Budget time.Duration

	// Strategy chooses the schedules: Random, PCT(d), Portfolio(d) or Exhaustive (default: Random, or
	// Exhaustive when Exhaustive is set; -check.strategy and -check.pct.depth override it).
	Strategy Strategy
	// Parallel is how many workers run schedules at once, each in a synctest bubble of its own (default
	// GOMAXPROCS; -check.parallel overrides it). The verdict, the runs counted and the failing run reported
	// are the same whatever it is: the first failure in the search's order is the one reported.
	Parallel int

	// NodeIDOrders makes an exhaustive search (Exhaustive) search every order of the clients' node ids:
	// RandFor draws each client's ids from a stream of its own, which puts the names of the clients' nodes
	// in one order, so a lock that orders nodes by name (not by sequence number) would be searched under that
	// order only. With NodeIDOrders the search runs once for every permutation of the clients' streams
	// (Clients! orders, the clients' own order first), the counts are summed, and the failure reported is the
	// first in (order, tree order); its trace records the order ("id-order:") and replays. Only for Run
	// (RunZK's go-zookeeper names its protected nodes from one stream per run, read in schedule order: no
	// per-client stream to permute), at most maxOrderedClients clients, and not with -check.shard.
	NodeIDOrders bool

	// idStreams, when set, gives client i+1 the id stream (RandFor) of client idStreams[i], so that the
	// clients' node ids come in another order than their numbers give; zero entries: each client its own.
	// NodeIDOrders sets it for each order in turn, and a trace's "id-order:" for its replay.
	idStreams [maxOrderedClients]uint8

	// looseProjection, off by default, leaves the changes of the tree out of what the state cache keeps in
	// order across clients (statecache.go), so that it merges a lock taken before or after another client's
	// change of the tree: measured for docs/exhaustive.md, "What DPOR could save"; make prove's counts are
	// the cache's without it.
	looseProjection bool
}

// maxOrderedClients is how many clients' id streams Config.idStreams can reorder, and so the most clients
// Config.NodeIDOrders takes: 6! = 720 searches of the bound.
const maxOrderedClients = 6

// idStream is the id stream client id draws from: its own number unless cfg reorders them.
func (c Config) idStream(id int) int {
	if id >= 1 && id <= maxOrderedClients && c.idStreams[id-1] != 0 {
		return int(c.idStreams[id-1])
	}
	return id
}

func (c Config) withDefaults() Config {
	if c.Name == "" {
		c.Name = "lock"
	}
	if c.Clients <= 0 {
		c.Clients = 3
	}
	if c.Rounds <= 0 {
		c.Rounds = 2
	}
	if c.Steps <= 0 {
		c.Steps = 120
	}
	if c.MaxFault <= 0 {
		c.MaxFault = 4
	}
	if c.Deadline == 0 {
		c.Deadline = 30 * time.Second
	}
	if c.Checks <= 0 {
		c.Checks = 100
	}
	if c.Shrink <= 0 {
		c.Shrink = shrinkDefault
	}
	if c.Primitive == Semaphore && c.Leases <= 0 {
		c.Leases = 2
	}
	if c.TraceDir == "" {
		c.TraceDir = filepath.Join(os.TempDir(), "zkmodel-traces")
	}
	return c
}

// validate says what is wrong with a Config as the user gave it (before defaults), in a sentence that says
// what to do.
func (c Config) validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"Clients", c.Clients}, {"Rounds", c.Rounds}, {"Steps", c.Steps}, {"MaxFault", c.MaxFault}, {"Checks", c.Checks}} {
		if f.v < 0 {
			return fmt.Errorf("check: Config.%s is %d: want a positive number, or 0 for the default", f.name, f.v)
		}
	}
	if c.Budget < 0 {
		return fmt.Errorf("check: Config.Budget is %s: want a positive duration, or 0 for no limit", c.Budget)
	}
	if c.Shrink < 0 {
		return fmt.Errorf("check: Config.Shrink is %s: want a positive duration, or 0 for the default (20s)", c.Shrink)
	}
	if int(c.Primitive) >= len(primitiveNames) {
		return fmt.Errorf("check: Config.Primitive is %d: use Mutex, ReadWrite, Semaphore or Election", uint8(c.Primitive))
	}
	if c.Leases < 0 || c.Leases > 0 && c.Primitive != Semaphore {
		return fmt.Errorf("check: Config.Leases is %d: set it (1 or more, or 0 for the default 2) only with Primitive Semaphore", c.Leases)
	}
	if c.Preemptions < Unpreempted {
		return fmt.Errorf("check: Config.Preemptions is %d: want a preemption bound of 1 or more, Unpreempted for none, or 0 for the depth-bounded search", c.Preemptions)
	}
	if c.Faults&^AllFaults != 0 {
		return fmt.Errorf("check: Config.Faults has unknown bits %#x: combine the Fault constants (AllFaults for all)", uint16(c.Faults&^AllFaults))
	}
	if d, ok := pctDepthOf(c.Strategy); ok {
		if err := validDepth(d); err != nil {
			return fmt.Errorf("check: Config.Strategy %s: %w", c.Strategy, err)
		}
	}
	if err := c.validateScale(); err != nil {
		return err
	}
	return validName(c.Name)
}

// validName refuses a variant name that cannot be a trace file's name: trace files are named after it.
func validName(name string) error {
	if name == "" {
		return nil
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return fmt.Errorf("check: Config.Name %q: use letters, digits, '-', '_' and '.' only (it names the trace files)", name)
		}
	}
	if strings.Contains(name, "..") {
		return fmt.Errorf("check: Config.Name %q: must not contain \"..\" (it names the trace files)", name)
	}
	return nil
}

// Report says what an exploration found.
type Report struct {
	Variant   string         // the Config's Name (String shows it)
	Runs      int            // interleavings explored (including those rapid ran while shrinking)
	Failed    bool           // a property was violated
	Property  string         // which one: "safety", "fenced-register", "fencing", "token-order", "told-when-lost", "no-herd", "liveness", "hygiene", or a reachability property ("readers-share", "leases-share")
	Verdict   string         // the violation, in a sentence
	Trace     string         // the shrunk failing trace's path, if any
	FirstFail time.Duration  // wall time from the start to the first failing run
	Elapsed   time.Duration  // wall time of the whole exploration (shrinking included)
	Decisions int            // scheduler decisions in the shrunk failing run, before its fair drain
	Injected  map[string]int // faults injected over all runs, by kind ("lose-request", "expire", …)

	// For an exhaustive search (Config.Exhaustive):
	Exhaustive     bool // the report is of an exhaustive search
	Schedules      int  // schedules run to the end and judged
	Pruned         int  // schedules cut short by partial-order reduction: reorderings of judged ones
	DecisionPoints int  // decision points visited (the search tree's inner nodes)
	// States is how many distinct states the preemption-bounded search's state cache held (statecache.go);
	// 0 when it kept none (the depth-bounded search, go-zookeeper's clients, Config.NoReduction).
	States    int
	Exhausted bool // every schedule within the bound was covered (false: a failure or the budget stopped it)

	// IDOrders is, for a search of every order of the clients' node ids (Config.NodeIDOrders), how many
	// orders there are (Clients!), and IDOrdersSearched how many of them were searched (all of them unless a
	// failure or the budget stopped it); the counts above are summed over those searched. IDOrder is the
	// order of the failing search: client i+1 drew the ids of client IDOrder[i] (the trace's "id-order:").
	IDOrders, IDOrdersSearched int
	IDOrder                    []int

	// NotReached names, for an exhaustive search that passed, a property of all the schedules together
	// (readers-share, leases-share) that no schedule within the bound reached: not a failure, for a bound
	// can be too small for the sharing to happen.
	NotReached string

	// Seed is a sampling search's seed: -rapid.seed=Seed (or Config.Seed) runs the same search again.
	Seed uint64
	// FailIndex is the failing run's number in a sampling search (0 is the first), or the failing subtree's
	// in an exhaustive one.
	FailIndex int
	// Workers is how many ran the search (Config.Parallel); Part is the part of it this process ran
	// (-check.shard), "0/1" for the whole.
	Workers int
	Part    string

	// PCT is the bound a PCT or portfolio search states for its PCT runs (nil for the other strategies).
	PCT *PCTBound
	// FoundBy is the sampling strategy whose run failed: "random" or "pct" (empty without a failure, and for
	// an exhaustive search). A PCT run's trace is the run as found, not shrunk.
	FoundBy string

	failingText string
	idClients   int  // the clients whose node ids' orders were searched (Config.NodeIDOrders)
	shared      bool // the judged runs (or schedules) reached the primitive's sharing

	// For the shard report (-check.report).
	sharedFirst     int
	ran, from, to   int
	total           int
	complete        bool
	perRun          []map[string]int
	shrinkRuns      int
	subtrees, split int
	done            []shardSubtree
	prefixPruned    int
	prefixPoints    int
	roots           []shard.Root
	failSchedules   int
	failPruned      int
	failPoints      int
}

func isFault(kind string) bool {
	for _, n := range faultNames {
		if n.name == kind {
			return true
		}
	}
	return false
}

// RandFor returns a deterministic random stream for a checked client's connection, keyed by the client's
// number and the run's seed (which the run's decisions draw, and its trace records), for Factories
// whose lock needs randomness (recipe.WithRandom): a model connection (by its ClientID), or a *zk.Conn that
// RunZK connected to the model. So node names differ from run to run, in every order, and replay the same. On any other connection (a real *zk.Conn on a
// real ensemble) it returns crypto/rand's reader: ids there must differ between processes, and replay does
// not apply.
func RandFor(conn recipe.Conn) io.Reader {
	var (
		id   int
		seed uint64
		of   runStream
	)
	switch c := conn.(type) {
	case *model.Conn:
		id, of = c.ClientID(), runStreamOf(c)
	case *zk.Conn:
		id, of = wireClientID(c), runStreamOf(c)
	}
	if id == 0 {
		return crand.Reader
	}
	seed = of.seed
	if of.stream != 0 {
		id = of.stream
	}
	return &randReader{r: rand.New(rand.NewPCG(uint64(id), 0x7a6b6d6f64656c^seed))}
}

type randReader struct{ r *rand.Rand }

func (r *randReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r.r.Uint32())
	}
	return len(p), nil
}

// Run explores interleavings and faults of K clients running f's lock on the model, and checks every run's
// properties (see the package documentation). On a violation it fails t, writes the shrunk run's trace to
// cfg.TraceDir (and porcupine's visualisation beside it for a safety violation), and reports it.
//
// With -check.replay=FILE, Run replays that trace instead of exploring; a trace of another variant than
// cfg.Name fails the test (see the package documentation for the -check.* flags).
func Run(t *testing.T, f Factory, cfg Config) Report {
	t.Helper()
	if f == nil {
		t.Fatal("check: Run needs a Factory: a func(conn recipe.Conn, path string) Locker that makes your lock")
	}
	return named(runWith(t, modelClients(f), cfg), cfg)
}

// runWith is Run and RunZK: the exploration, whatever kind of client it schedules.
func runWith(t *testing.T, kind clients, cfg Config) Report {
	t.Helper()
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	cfg, err := strategyFlag(fromFlags(cfg))
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.withDefaults()
	if *flagReplay != "" {
		cfg.Strategy = ReplayTrace(*flagReplay)
	}
	if err := validIDOrders(cfg, kind, strategyOf(cfg), flagPart(t)); err != nil {
		t.Fatal(err)
	}
	if err := validDPOR(cfg, strategyOf(cfg), flagPart(t)); err != nil {
		t.Fatal(err)
	}
	if err := probe(t, kind, cfg); err != nil {
		t.Fatal(err)
	}
	x := &exploration{t: t, kind: kind, cfg: cfg, part: flagPart(t), workers: workersOf(cfg), started: time.Now()}
	strategy := strategyOf(cfg)
	rep, fail := strategy.explore(x)
	rep.Elapsed = time.Since(x.started)
	if fail == nil && !rep.Failed && x.part.Whole() && (rep.complete || rep.Exhaustive && rep.Exhausted) {
		// Every run kept every property: the primitive's sharing must have been reached.
		runs := rep.Runs
		if rep.Exhaustive {
			runs = rep.Schedules
		}
		prop, verdict := reachability(cfg, runs, rep.shared)
		switch {
		case prop == "":
		case rep.Exhaustive:
			// A bound may be too small for the sharing to happen at all: that says nothing of the primitive.
			// Whether the bound reaches it is for a search of the same bound on a primitive known to share to
			// say (make prove's recipe rows); a search that did not reach it reports so, and fails nothing.
			rep.NotReached = prop
			t.Logf("check: %s: %s not reached in this bound: %s (a property of all the schedules together, judged only where the bound reaches it)", cfg.Name, prop, verdict)
		default:
			rep.Failed, rep.Property, rep.Verdict, rep.FirstFail = true, prop, verdict, rep.Elapsed
			t.Errorf("check: %s: %s violated: %s (a property of all the runs together: no trace)", cfg.Name, prop, verdict)
		}
	}
	if fail != nil {
		rep.Property, rep.Verdict, rep.Decisions = fail.property, fail.verdict, fail.explored
		how := ""
		switch {
		case rep.Exhaustive:
			how = fmt.Sprintf(" (exhaustive search, shortest schedule: %d decisions)", fail.explored)
			if rep.IDOrder != nil {
				how = fmt.Sprintf(" (exhaustive search of every order of the node ids, shortest schedule: %d decisions, client i drawing the ids of client %s[i])", fail.explored, idOrderText(rep.IDOrder))
			}
		case rep.FoundBy == shard.PCT:
			how = fmt.Sprintf(" (PCT run %d as found, not shrunk: %d decisions)", rep.FailIndex, fail.explored)
		}
		reportTrace(t, cfg, fail, &rep, how)
	}
	if _, replay := strategy.(replayStrategy); !replay {
		writeShardReport(t, x, strategy, &rep)
	}
	return rep
}

// reportTrace writes the failing run's trace, records it in rep, and tells the user how to replay it; how
// says how the run was found, if not by sampling.
func reportTrace(t *testing.T, cfg Config, o *outcome, rep *Report, how string) {
	t.Helper()
	rep.failingText = o.render(cfg)
	path, err := writeTrace(cfg, o)
	if err != nil {
		t.Errorf("check: writing the trace: %v", err)
		return
	}
	rep.Trace = path
	t.Errorf("check: %s: %s violated%s: %s\n    trace: %s\n    replay: go test -run '%s' -check.replay=%s", cfg.Name, o.property, how, o.verdict, path, runPattern(t.Name()), path)
}

// runPattern is a -run pattern that selects exactly the named test (and subtest).
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// probe makes one fault-free run, to turn a Factory that cannot make a lock into one clear error before
// the exploration starts.
func probe(t *testing.T, kind clients, cfg Config) error {
	var err error
	synctest.Test(t, func(*testing.T) {
		if out := executeWith(kind, cfg, &replayDecider{}); out.property == "setup" {
			err = fmt.Errorf("check: %s: %s", cfg.Name, out.verdict)
		}
	})
	return err
}
