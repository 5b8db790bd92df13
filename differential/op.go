package differential

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"pgregory.net/rapid"
)

// Kind names an operation of a sequence.
type Kind uint8

// The operations a sequence is made of. Check appears only inside a Multi.
const (
	Create Kind = iota + 1
	Delete
	Set
	Exists
	Get
	Children
	Multi
	Sync
	Close
	Sever
	Check
	// The requests of ZooKeeper 3.6+ that go-zookeeper v1.0.4 cannot send (GenConfig.Persistent).
	AddWatch
	RemoveWatches
	CheckWatches
	// Authentication and ACLs.
	AddAuth
	GetACL
	SetACL
	// TTL nodes, containers and the container manager (GenConfig.Timed).
	CreateTTL
	CreateContainer
	PassTime
)

var kindNames = [...]string{
	Create: "create", Delete: "delete", Set: "set", Exists: "exists", Get: "get", Children: "children",
	Multi: "multi", Sync: "sync", Close: "close", Sever: "sever", Check: "check",
	AddWatch: "addWatch", RemoveWatches: "removeWatches", CheckWatches: "checkWatches",
	AddAuth: "addAuth", GetACL: "getACL", SetACL: "setACL",
	CreateTTL: "createTTL", CreateContainer: "createContainer", PassTime: "passTime",
}

// String returns the operation's name.
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// Op is one operation of a sequence, done by one session. Paths are relative to the sequence's base
// node ("" is the base itself, "a/x" a grandchild) unless they start with "/".
type Op struct {
	Kind    Kind
	Session int // 1-based
	Path    string
	Data    []byte // nil and empty are different values
	Flags   int32
	Version int32
	Watch   bool          // Exists, Get, Children: the W variant
	NilACL  bool          // Create: send no ACL
	ACL     int           // Create, SetACL: the ACL sent, an index in aclPool (0, the default, is world:anyone with every permission)
	Scheme  string        // AddAuth: the scheme; Data holds the credentials
	TTL     time.Duration // CreateTTL: the node's TTL
	// Pass lets time pass after the call, as a PassTime does (a CreateTTL of a TTL below one container check
	// interval always does: see GenConfig.Timed).
	Pass    bool
	Ops     []Op   // Multi: Create, Delete, Set and Check operations (Session unused)
	Mode    int32  // AddWatch: 0 persistent, 1 recursive; RemoveWatches, CheckWatches: the watcher type (1 children, 2 data, 3 any)
	Comment string // why a hand-written scenario does this, for transcripts
}

// String renders the op for transcripts, e.g. `s1 create ~/a flags=1 data="x"`.
func (o Op) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "s%d %s", o.Session, o.body())
	return b.String()
}

func (o Op) body() string {
	if o.Pass && o.Kind != PassTime {
		return o.describe() + " +pass"
	}
	return o.describe()
}

func (o Op) describe() string {
	var b strings.Builder
	b.WriteString(o.Kind.String())
	if o.Watch {
		b.WriteString("W")
	}
	switch o.Kind {
	case Close, Sever, PassTime:
		return b.String()
	case Multi:
		b.WriteString(" [")
		for i, sub := range o.Ops {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(sub.body())
		}
		b.WriteString("]")
		return b.String()
	case AddAuth:
		return fmt.Sprintf("%s %s %q", b.String(), o.Scheme, o.Data)
	}
	b.WriteString(" " + showRel(o.Path))
	switch o.Kind {
	case Create, CreateTTL, CreateContainer:
		fmt.Fprintf(&b, " flags=%d data=%s", o.Flags, showData(o.Data))
		if o.Kind == CreateTTL {
			fmt.Fprintf(&b, " ttl=%s", o.TTL)
		}
		if o.NilACL {
			b.WriteString(" acl=nil")
		} else if o.ACL != 0 {
			b.WriteString(" acl=" + aclPool[o.ACL].name)
		}
	case SetACL:
		fmt.Fprintf(&b, " acl=%s version=%d", aclPool[o.ACL].name, o.Version)
	case Set:
		fmt.Fprintf(&b, " version=%d data=%s", o.Version, showData(o.Data))
	case Delete, Check:
		fmt.Fprintf(&b, " version=%d", o.Version)
	case AddWatch:
		fmt.Fprintf(&b, " mode=%d", o.Mode)
	case RemoveWatches, CheckWatches:
		fmt.Fprintf(&b, " type=%d", o.Mode)
	}
	return b.String()
}

// showRel renders a sequence path: relative ones under the base as ~/…, absolute ones as they are.
func showRel(p string) string {
	switch {
	case strings.HasPrefix(p, "/"):
		return p
	case p == "":
		return "~"
	}
	return "~/" + p
}

func showData(d []byte) string {
	if d == nil {
		return "nil"
	}
	return fmt.Sprintf("%q", d)
}

// Sequence is what one check runs: Sessions sessions (2 or 3) and the ops they do, in order.
type Sequence struct {
	Sessions int
	Ops      []Op
	// Persistent says the sequence has addWatch, removeWatches or checkWatches ops: its sessions on the wire
	// and real sides are then the project's raw client (internal/rawzk), which sends them, rather than
	// go-zookeeper, which cannot.
	Persistent bool
	// Timed says the sequence creates TTL nodes and containers and lets time pass (GenConfig.Timed): it runs on
	// servers with extended types enabled and a short container check interval.
	Timed bool
}

// String renders the sequence one op per line.
func (s Sequence) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d sessions", s.Sessions)
	if s.Persistent {
		b.WriteString(", raw clients")
	}
	if s.Timed {
		b.WriteString(", timed")
	}
	b.WriteString("\n")
	for i, o := range s.Ops {
		fmt.Fprintf(&b, "%3d %s\n", i+1, o)
	}
	return b.String()
}

// The path pools the generator draws from. They are small so that ops collide: the same node is
// created, watched, changed and deleted by different sessions. Sequence numbers under a fresh base
// start at 0, so the names sequential creates produce are in the pools too.
var (
	// nodePaths are read, set and deleted.
	nodePaths = []string{"a", "", "b", "a/x", "s-0000000000", "a/y", "b/x", "a/x/z", "s-0000000001",
		"a/s-0000000000", "s-0000000002", "a/0000000001", "b/x/t-0000000000", "missing/x"}
	// createPaths are created with every flag value; some are invalid for some flags ("a/" is only
	// valid for sequential creates, "a/./b" never is).
	createPaths = []string{"a", "b", "a/x", "s-", "a/s-", "a/y", "b/x", "a/x/z", "a/", "b/x/t-",
		"s-0000000001", "missing/x", "a/./b"}
	// leafPaths never get children in a sequence; containers (a multi's create with the container mode makes
	// one, a plain create a persistent node) are created only there, because the shared ensemble's container
	// manager, on its wall clock, would delete one that had children and lost them (timed sequences cover
	// that: see timed.go).
	leafPaths = []string{"a/y", "a/x/z", "s-0000000001"}
	// systemPaths are read only: they are shared by every sequence on the real ensemble.
	// (/zookeeper/config is left out: an ensemble's holds its membership, see README.)
	systemPaths = []string{"/zookeeper", "/zookeeper/quota"}
	// flagValues covers the four create modes, containers, both TTL modes and two invalid values.
	flagValues = []int32{zk.FlagPersistent, zk.FlagEphemeral, zk.FlagSequence, zk.FlagEphemeralSequential,
		zk.FlagContainer, zk.FlagTTL, zk.FlagPersistentSequentialWithTTL, 7, -1}
	versions  = []int32{-1, 0, 1, 2}
	dataPool  = [][]byte{nil, {}, []byte("x"), []byte("yy")}
	sequences = []string{"s-", "a/s-", "a/", "b/x/t-"}
)

// GenConfig bounds the sequences Gen generates.
type GenConfig struct {
	MaxOps int  // at most this many ops per sequence (default 25)
	MinOps int  // at least this many (default 1), unless every session closes earlier
	Sever  bool // include connection losses
	// Persistent makes half the sequences (Sequence.Persistent) also add, remove and check watches, with
	// valid paths and flags only: go-zookeeper's client-side checks, which the raw client does not make,
	// are the other half's business.
	Persistent bool
	// Timed makes every sequence a timed one (Sequence.Timed, see genTimedOp): TTL nodes and containers, and
	// time passing, on paths laid out so that the container manager deletes only while time passes.
	Timed bool
}

// Gen returns a rapid generator of sequences. It weights ops towards the ones a fake gets wrong:
// collisions on a few paths, sequential creates around deletes and failed creates, creates under
// ephemerals, stale versions, multis that fail midway, watches set twice, and closes of sessions
// whose ephemerals another session watches.
func Gen(cfg GenConfig) *rapid.Generator[Sequence] {
	if cfg.MaxOps <= 0 {
		cfg.MaxOps = 25
	}
	cfg.MinOps = max(cfg.MinOps, 1)
	return rapid.Custom(func(t *rapid.T) Sequence {
		seq := Sequence{Sessions: rapid.IntRange(2, 3).Draw(t, "sessions"), Timed: cfg.Timed}
		if cfg.Persistent && !cfg.Timed {
			seq.Persistent = rapid.Bool().Draw(t, "persistent")
		}
		n := rapid.IntRange(min(cfg.MinOps, cfg.MaxOps), cfg.MaxOps).Draw(t, "ops")
		closed := map[int]bool{}
		if cfg.Timed && rapid.IntRange(0, 3).Draw(t, "containers-first") > 0 {
			// Most timed sequences start with the containers, so that more of their TTL nodes find a parent.
			seq.Ops = append(seq.Ops, Op{Kind: CreateContainer, Session: 1, Path: "c", Flags: zk.FlagContainer},
				Op{Kind: CreateContainer, Session: 1, Path: "c/d", Flags: zk.FlagContainer})
		}
		for i := len(seq.Ops); i < n; i++ {
			var op Op
			if cfg.Timed {
				op = genTimedOp(t, seq.Sessions, closed, cfg)
			} else {
				op = genOp(t, seq.Sessions, closed, cfg, seq.Persistent)
			}
			if op.Kind == Close {
				closed[op.Session] = true
			}
			seq.Ops = append(seq.Ops, op)
			if len(closed) == seq.Sessions {
				break
			}
		}
		return seq
	})
}

// kindWeight is a kind an op is drawn as, with its weight.
type kindWeight struct {
	kind   Kind
	weight int
}

// kindWeights lists the top-level kinds with their weights; the simplest come first so that rapid
// shrinks towards them.
var kindWeights = []kindWeight{
	{Create, 30}, {Get, 12}, {Exists, 12}, {Children, 10}, {Set, 10}, {Delete, 12}, {Multi, 10},
	{Sync, 2}, {Close, 3}, {Sever, 2}, {GetACL, 8}, {SetACL, 8}, {AddAuth, 6},
}

// persistentWeights are the kinds a Persistent sequence draws from beside kindWeights.
var persistentWeights = []kindWeight{
	{CheckWatches, 8}, {RemoveWatches, 8}, {AddWatch, 20}, // rapid draws the last more often than its weight says
}

func genOp(t *rapid.T, sessions int, closed map[int]bool, cfg GenConfig, persistent bool) Op {
	weights := kindWeights
	if persistent {
		weights = append(slices.Clone(kindWeights), persistentWeights...)
	}
	kind := drawKind(t, weights, cfg)
	op := Op{Kind: kind, Session: drawSession(t, sessions, closed)}
	switch kind {
	case Create:
		genCreate(t, &op)
		if persistent {
			validCreate(t, &op)
		}
	case AddWatch:
		op.Path = rapid.SampledFrom(nodePaths).Draw(t, "path")
		op.Mode = rapid.Int32Range(0, 1).Draw(t, "mode")
	case RemoveWatches, CheckWatches:
		op.Path = rapid.SampledFrom(nodePaths).Draw(t, "path")
		op.Mode = rapid.SampledFrom(watcherTypes).Draw(t, "type")
	case Delete, Set:
		genVersioned(t, &op)
	case Exists, Get, Children:
		op.Watch = rapid.Bool().Draw(t, "watch")
		op.Path = readPath(t)
	case Sync:
		op.Path = rapid.SampledFrom(nodePaths).Draw(t, "path")
	case AddAuth, GetACL, SetACL:
		genACLOp(t, &op)
	case Multi:
		n := rapid.IntRange(0, 3).Draw(t, "multi-ops")
		for i := 0; i < n; i++ {
			sub := Op{Kind: rapid.SampledFrom([]Kind{Create, Delete, Set, Check}).Draw(t, "multi-kind")}
			if sub.Kind == Create {
				genCreate(t, &sub) // every flag value: multi does not check flags in the client
			} else {
				genVersioned(t, &sub)
			}
			op.Ops = append(op.Ops, sub)
		}
	}
	return op
}

// readPath draws the path of a read: now and then a system node, else one of nodePaths.
func readPath(t *rapid.T) string {
	if rapid.IntRange(0, 15).Draw(t, "system") == 0 {
		return rapid.SampledFrom(systemPaths).Draw(t, "path")
	}
	return rapid.SampledFrom(nodePaths).Draw(t, "path")
}

// drawKind draws a kind from weights (a Sever becomes a Get unless cfg.Sever).
func drawKind(t *rapid.T, weights []kindWeight, cfg GenConfig) Kind {
	total := 0
	for _, kw := range weights {
		total += kw.weight
	}
	pick := rapid.IntRange(0, total-1).Draw(t, "kind")
	var kind Kind
	for _, kw := range weights {
		if pick < kw.weight {
			kind = kw.kind
			break
		}
		pick -= kw.weight
	}
	if kind == Sever && !cfg.Sever {
		kind = Get
	}
	return kind
}

// drawSession draws the session of an op; a closed session's calls fail in the client, so it keeps a few of
// them, not many.
func drawSession(t *rapid.T, sessions int, closed map[int]bool) int {
	session := rapid.IntRange(1, sessions).Draw(t, "session")
	if closed[session] && rapid.IntRange(0, 3).Draw(t, "closed-ok") > 0 {
		for s := 1; s <= sessions; s++ {
			if !closed[s] {
				return s
			}
		}
	}
	return session
}

// genVersioned fills in a Delete, Set or Check: a path, a version, and data for a Set.
func genVersioned(t *rapid.T, op *Op) {
	op.Path = rapid.SampledFrom(nodePaths).Draw(t, "path")
	op.Version = rapid.SampledFrom(versions).Draw(t, "version")
	if op.Kind == Set {
		op.Data = rapid.SampledFrom(dataPool).Draw(t, "data")
	}
}

// watcherTypes are removeWatches' and checkWatches' types: the three ZooKeeper 3.8 knows, weighted, and two
// it answers with a marshalling error (4 and 5 are 3.9's persistent types).
var watcherTypes = []int32{1, 2, 3, 1, 2, 3, 3, 4, 0}

// validCreate makes a create of a Persistent sequence one that go-zookeeper's client-side checks let
// through unchanged: a create mode it sends as given (no TTL, container or invalid flags; containers are
// kept, in their leaf paths) and a path valid for it.
func validCreate(t *rapid.T, op *Op) {
	switch op.Flags {
	case zk.FlagPersistent, zk.FlagEphemeral, zk.FlagSequence, zk.FlagEphemeralSequential, zk.FlagContainer:
	default:
		op.Flags = rapid.SampledFrom([]int32{zk.FlagPersistent, zk.FlagEphemeral}).Draw(t, "valid-flags")
		op.Path = rapid.SampledFrom(createPaths[:8]).Draw(t, "valid-path")
	}
	if op.Path == "a/" && op.Flags&zk.FlagSequence == 0 || op.Path == "a/./b" {
		op.Path = "a"
	}
}

func genCreate(t *rapid.T, op *Op) {
	op.Flags = rapid.SampledFrom(flagValues).Draw(t, "flags")
	switch op.Flags {
	case zk.FlagSequence, zk.FlagEphemeralSequential:
		if rapid.IntRange(0, 3).Draw(t, "seq-prefix") > 0 {
			op.Path = rapid.SampledFrom(sequences).Draw(t, "path")
		} else {
			op.Path = rapid.SampledFrom(createPaths).Draw(t, "path")
		}
	case zk.FlagContainer:
		op.Path = rapid.SampledFrom(leafPaths).Draw(t, "path")
	default:
		op.Path = rapid.SampledFrom(createPaths).Draw(t, "path")
	}
	op.Data = rapid.SampledFrom(dataPool).Draw(t, "data")
	op.NilACL = rapid.IntRange(0, 15).Draw(t, "nil-acl") == 0
	if !op.NilACL {
		op.ACL = drawACL(t)
	}
}
