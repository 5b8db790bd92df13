package core

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// This file is the pure core: the data tree, sessions and server-side watches of one ZooKeeper server, and the
// transactions that change them. It has no goroutines, no locks, no clock and no randomness of its own: time
// comes in as an argument, randomness only from the seed it was built with, and every result that has an
// order (children aside, which follow the seed on purpose) is sorted. Given the same calls it returns the
// same results, byte for byte.

// Op names a request a client can send.
type Op uint8

const (
	OpCreate Op = iota + 1
	OpDelete
	OpExists
	OpGetData
	OpSetData
	OpGetChildren
	OpSync
	OpMulti
	OpCloseSession
	// The requests below reach the core only through the wire (model/wire.go), but for checkWatches,
	// removeWatches and addWatch, which *model.Conn also sends (pwatch.go).
	OpGetACL
	OpSetACL
	OpCheck
	OpAllChildrenNumber
	OpGetEphemerals
	OpCheckWatches
	OpRemoveWatches
	OpAddWatch
	OpPing
	OpCreateContainer // createContainer (opcode 19): a container whatever the flags, see createMode
	OpCreateTTL       // createTTL (opcode 21): Request.TTL is the TTL
	OpAuth            // addAuth: path holds the scheme, data the credentials
	OpReconfig        // reconfig (opcode 16): Request.Reconfig holds its arguments (reconfig.go)
	OpSetWatches      // setWatches, setWatches2: a reconnecting session's watches, in Request.Watches
)

var opNames = [...]string{
	OpCreate:       "create",
	OpDelete:       "delete",
	OpExists:       "exists",
	OpGetData:      "get",
	OpSetData:      "set",
	OpGetChildren:  "children",
	OpSync:         "sync",
	OpMulti:        "multi",
	OpCloseSession: "close",

	OpGetACL:            "getACL",
	OpSetACL:            "setACL",
	OpCheck:             "check",
	OpAllChildrenNumber: "getAllChildrenNumber",
	OpGetEphemerals:     "getEphemerals",
	OpCheckWatches:      "checkWatches",
	OpRemoveWatches:     "removeWatches",
	OpAddWatch:          "addWatch",
	OpPing:              "ping",
	OpCreateContainer:   "createContainer",
	OpCreateTTL:         "createTTL",
	OpAuth:              "addAuth",
	OpReconfig:          "reconfig",
	OpSetWatches:        "setWatches",
}

func (k Op) String() string {
	if int(k) >= len(opNames) || opNames[k] == "" {
		return "op(" + strconv.Itoa(int(k)) + ")"
	}
	return opNames[k]
}

// isWrite reports whether the server turns the request into a transaction (and so spends a zxid on it, even
// when it fails, as ZooKeeper's PrepRequestProcessor does).
func (k Op) isWrite() bool {
	switch k {
	case OpCreate, OpDelete, OpSetData, OpMulti, OpCloseSession, OpSetACL, OpCheck, OpCreateContainer, OpCreateTTL, OpReconfig:
		return true
	}
	return false
}

// Request is one client request as the server sees it.
type Request struct {
	Op      Op
	Path    string
	Data    []byte
	Flags   int32
	Version int32
	ACL     []zk.ACL
	Watch   bool
	Mode    int32     // checkWatches, removeWatches: 1 child watches, 2 data watches, 3 any; addWatch: 0 persistent, 1 recursive
	Ops     []Request // multi: its operations, each an OpCreate, OpCreateTTL (wire only), OpDelete, OpSetData or OpCheck
	TTL     int64     // createTTL: milliseconds
	// Reconfig holds a reconfig's arguments.
	Reconfig *ReconfigRequest
	// Watches holds a setWatches' lists.
	Watches *WatchesRequest
}

// WatchesRequest is what a reconnecting client's setWatches (or setWatches2) carries: the last zxid it saw,
// and the paths of its watches by kind.
type WatchesRequest struct {
	RelativeZxid          int64
	Data, Exist, Child    []string // standard watches: getData, exists, getChildren
	Persistent, Recursive []string // addWatch's (setWatches2 only)
}

// String renders the request for traces, e.g. `create /lock/n- flags=3`.
func (r *Request) String() string {
	return string(r.appendText(make([]byte, 0, 64+len(r.Path)+len(r.Data))))
}

// appendText appends the request's String to b.
func (r *Request) appendText(b []byte) []byte {
	if r.Op == OpAuth {
		return append(append(b, "addAuth "...), r.Path...) // the credentials stay out of traces
	}
	b = append(b, r.Op.String()...)
	if r.Watch {
		b = append(b, 'W')
	}
	if r.Path != "" {
		b = append(append(b, ' '), r.Path...)
	}
	switch r.Op {
	case OpCreate, OpCreateContainer: // fmt's " flags=%d data=%q", without fmt: a checker's run renders many
		b = strconv.AppendInt(append(b, " flags="...), int64(r.Flags), 10)
		b = strconv.AppendQuote(append(b, " data="...), string(r.Data))
	case OpCreateTTL:
		b = fmt.Appendf(b, " flags=%d ttl=%d data=%q", r.Flags, r.TTL, r.Data)
	case OpSetData:
		b = strconv.AppendInt(append(b, " version="...), int64(r.Version), 10)
		b = strconv.AppendQuote(append(b, " data="...), string(r.Data))
	case OpDelete, OpCheck:
		b = strconv.AppendInt(append(b, " version="...), int64(r.Version), 10)
	case OpSetACL:
		b = fmt.Appendf(b, " version=%d acl=%v", r.Version, r.ACL)
	case OpCheckWatches, OpRemoveWatches:
		b = fmt.Appendf(b, " type=%d", r.Mode)
	case OpAddWatch:
		b = fmt.Appendf(b, " mode=%d", r.Mode)
	case OpSetWatches:
		if w := r.Watches; w != nil {
			b = fmt.Appendf(b, " zxid=%d data=%v exist=%v child=%v persistent=%v recursive=%v", w.RelativeZxid, w.Data, w.Exist, w.Child, w.Persistent, w.Recursive)
		}
	case OpReconfig:
		if r.Reconfig == nil {
			break
		}
		b = fmt.Appendf(b, " joining=%s leaving=%s members=%s from=%#x", nullable(r.Reconfig.Joining), nullable(r.Reconfig.Leaving), nullable(r.Reconfig.NewMembers), r.Reconfig.FromConfig)
	case OpMulti:
		for i := range r.Ops {
			if i > 0 {
				b = append(b, ';')
			}
			b = append(append(b, ' '), multiOpString(&r.Ops[i])...)
		}
	}
	return b
}

// nullable renders a string argument that may be absent (Java's null).
func nullable(b []byte) string {
	if b == nil {
		return "null"
	}
	return strconv.Quote(string(b))
}

func multiOpString(op *Request) string {
	switch op.Op {
	case OpCreate, OpCreateTTL, OpDelete, OpSetData, OpCheck:
		return op.String()
	}
	return "unknown op " + strconv.Itoa(int(op.Op))
}

// Result is the server's reply to a request.
type Result struct {
	Zxid     int64 // the reply header's zxid: the last zxid the server had committed when it replied
	Err      error
	Path     string
	Data     []byte
	Stat     zk.Stat
	Children []string
	Multi    []zk.MultiResponse
	ACL      []zk.ACL // getACL
	Number   int32    // getAllChildrenNumber
	NoReply  bool     // a successful check outside a multi: ZooKeeper 3.8 sends no reply at all
}

// Notification is a watch event the server sends to one session.
type Notification struct {
	Session int64
	Event   zk.Event
}

type childEntry struct {
	key  uint64
	name string
}

type node struct {
	acl      []zk.ACL // as stored (fixupACL), enforced by allowed
	anyone   int32    // the permissions acl grants world:anyone: the checks' fast path
	data     []byte
	stat     zk.Stat      // as stored: Cversion counts the creates of children, see view
	children []childEntry // ordered by (key, name): deterministic from the seed, not sorted by name
}

// containerOwner is the ephemeralOwner ZooKeeper gives container nodes.
const containerOwner = math.MinInt64

// view returns the stat as ZooKeeper 3.8 reports it: the ephemeralOwner of a container or TTL node is 0. The stored cversion counts the creates of children (it
// is also what numbers sequential children); the reported one is 2*creates - numChildren, which is creates
// plus deletes. So a delete moves the reported cversion but not the next sequence number.
func (n *node) view() zk.Stat {
	s := n.stat
	s.Cversion = 2*s.Cversion - s.NumChildren
	if s.EphemeralOwner < 0 {
		s.EphemeralOwner = 0 // the server marks containers and TTL nodes internally but reports owner 0 to clients
	}
	return s
}

// isEphemeral reports whether the node belongs to a session (containers and TTL nodes, whose owners are
// negative, do not; session ids are positive).
func (n *node) isEphemeral() bool {
	return n.stat.EphemeralOwner > 0
}

// specialPaths are the nodes a ZooKeeper server refuses to delete.
var specialPaths = map[string]bool{"/": true, "/zookeeper": true, "/zookeeper/quota": true, "/zookeeper/config": true}

type session struct {
	id        int64
	timeout   time.Duration // negotiated
	lastHeard int64         // virtual milliseconds
	ephemeral map[string]struct{}
	auth      sessionAuth // what its current connection authenticated as (acl.go)
	local     bool        // a local session (CreateLocalSession): the leader refuses its ephemeral creates
}

// core is one ZooKeeper server's state. Its zero value is not usable; see New.
type Core struct {
	seed       uint64
	super      string     // the super digest (user:base64 hash) that addAuth makes super; "" for none
	saslSuper  string     // the SASL user that logging in makes super (zookeeper.superUser); "" for none
	saslACL    bool       // the sasl ACL scheme is on (SASLAuthenticationProvider configured)
	x509ACL    bool       // the x509 ACL scheme is on (a secure client port: X509AuthenticationProvider)
	config     *dynConfig // the ensemble's configuration (reconfig.go); nil for a standalone server
	reconfigOn bool       // reconfigEnabled
	skipACL    bool       // zookeeper.skipACL=yes: no ACL check (WithSkipACL)
	now        int64      // virtual milliseconds since the Unix epoch
	zxid       int64
	nodes      map[string]*node
	sessions   map[int64]*session
	sidBase    int64
	sidNext    int64
	watches    [2]map[string]map[int64]struct{} // [dataWatch], [childWatch]: path → sessions
	persist    [2]map[string]map[int64]uint8    // addWatch's watches, kept when they fire: path → session → persistentWatch or recursiveWatch
	inMulti    bool                             // a multi is running: changes are recorded in undo
	undo       []undoEntry                      // how to restore what the running multi changed
	taken      []takenWatch                     // the watches the running multi fired, set again on rollback
	reaper     reaper                           // TTL nodes and the container manager (ttl.go)
	writes     NamespaceCounts                  // bytes written per top-level namespace (nsmetrics.go)
	// pendingWrites are the running multi's writes, counted in writes if it commits.
	pendingWrites []pendingWrite
}

// takenWatch is a watch a running multi fired; if the multi fails, nothing fired and the watch stays set.
type takenWatch struct {
	kind     int
	path     string
	sessions map[int64]struct{}
}

const (
	dataWatch  = 0 // set by exists and getData; fired by create, delete and setData of the node
	childWatch = 1 // set by getChildren; fired by create and delete of a child, and delete of the node
)

// Modes of the watches addWatch sets. As in ZooKeeper's WatchManager, a session has one mode per table and
// path: a later standard watch (exists, getData, getChildren) replaces a persistent one, and addWatch
// replaces a standard one.
const (
	persistentWatch uint8 = 1 // fires like a standard watch on the path, and stays
	recursiveWatch  uint8 = 2 // fires for the path and every node below it, except NodeChildrenChanged, and stays
)

type undoEntry struct {
	path string
	prev *node // nil: the node did not exist
}

func New(seed uint64, now int64) *Core {
	c := &Core{
		seed:     seed,
		now:      now,
		nodes:    map[string]*node{},
		sessions: map[int64]*session{},
		writes:   NamespaceCounts{},
		// Real session ids carry the server id in the top byte and a time-derived value below; ours carry a
		// seed-derived value, so that tests cannot accidentally depend on the numbers.
		sidBase: int64(mix64(seed^0x5e551011)&0x00ffffff00000000) | 1<<56,
	}
	c.watches[dataWatch] = map[string]map[int64]struct{}{}
	c.watches[childWatch] = map[string]map[int64]struct{}{}
	c.persist[dataWatch] = map[string]map[int64]uint8{}
	c.persist[childWatch] = map[string]map[int64]uint8{}
	// A fresh ZooKeeper 3.8 server has /zookeeper (with quota and config below it); every field of their stats
	// is zero, except the child counts.
	c.nodes["/"] = &node{data: []byte{}, acl: zk.WorldACL(zk.PermAll), anyone: zk.PermAll} // its data is empty, not null (measured: the Java client reads 0 bytes)
	for _, p := range []string{"/zookeeper", "/zookeeper/config", "/zookeeper/quota"} {
		c.nodes[p] = &node{data: []byte{}, acl: zk.WorldACL(zk.PermAll), anyone: zk.PermAll}
		c.link(parentOf(p), baseName(p))
	}
	c.nodes["/zookeeper/config"].acl = zk.WorldACL(zk.PermRead)
	c.nodes["/zookeeper/config"].anyone = zk.PermRead
	c.nodes["/zookeeper/config"].stat.Aversion = -1
	return c
}

// mix64 is SplitMix64's finaliser: a cheap, well-distributed hash of a 64-bit value.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// childKey places a child in its parent's listing: an FNV-1a hash of the name, keyed by the seed.
func (c *Core) childKey(name string) uint64 {
	h := uint64(14695981039346656037) ^ c.seed
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 1099511628211
	}
	return mix64(h)
}

func (c *Core) link(parent, name string) {
	p := c.nodes[parent]
	e := childEntry{c.childKey(name), name}
	i := sort.Search(len(p.children), func(i int) bool { return !childLess(p.children[i], e) })
	p.children = slices.Insert(p.children, i, e)
	p.stat.NumChildren = int32(len(p.children))
}

func (c *Core) unlink(parent, name string) {
	p := c.nodes[parent]
	e := childEntry{c.childKey(name), name}
	i := sort.Search(len(p.children), func(i int) bool { return !childLess(p.children[i], e) })
	p.children = slices.Delete(p.children, i, i+1)
	p.stat.NumChildren = int32(len(p.children))
}

func childLess(a, b childEntry) bool {
	if a.key != b.key {
		return a.key < b.key
	}
	return a.name < b.name
}

// --- sessions ---------------------------------------------------------------------------------------------

// createSession opens a session. Like ZooKeeper, it is a transaction and spends a zxid.
func (c *Core) createSession(timeout time.Duration) int64 {
	c.sidNext++
	id := c.sidBase + c.sidNext
	c.zxid++
	c.sessions[id] = &session{id: id, timeout: timeout, lastHeard: c.now, ephemeral: map[string]struct{}{}, auth: sessionAuth{ip: inProcessIP}}
	return id
}

// closeSession ends a session (Close or expiry) in one transaction: its ephemeral nodes go, in path order,
// each firing its watches (the closing session's own included: the server sends those before it closes the
// connection), then the session's remaining watches are dropped. It reports false when the session was already gone.
func (c *Core) closeSession(id int64) ([]Notification, bool) {
	s, ok := c.sessions[id]
	if !ok {
		return nil, false
	}
	c.zxid++
	var notes []Notification
	for _, p := range slices.Sorted(maps.Keys(s.ephemeral)) { // collected before removeNode edits the set
		notes = c.removeNode(p, notes)
	}
	c.dropWatches(id)
	delete(c.sessions, id)
	return notes, true
}

func (c *Core) dropWatches(id int64) {
	for _, table := range c.watches {
		for p, set := range table {
			delete(set, id)
			if len(set) == 0 {
				delete(table, p)
			}
		}
	}
	for _, table := range c.persist {
		for p, set := range table {
			delete(set, id)
			if len(set) == 0 {
				delete(table, p)
			}
		}
	}
}

// --- requests ---------------------------------------------------------------------------------------------

// apply executes one request for a live session and returns the reply and the watch events it fires, in the
// order the server sends them.
func (c *Core) apply(sid int64, r *Request) (Result, []Notification) {
	if _, ok := c.sessions[sid]; !ok {
		return Result{Zxid: c.zxid, Err: zk.ErrSessionExpired}, nil
	}
	if r.Op == OpCloseSession {
		notes, _ := c.closeSession(sid)
		return Result{Zxid: c.zxid}, notes
	}
	if r.Op.isWrite() {
		c.zxid++ // a write spends a zxid even when it fails
	}
	var (
		res   Result
		notes []Notification
	)
	switch r.Op {
	case OpCreate:
		res.Path, res.Err = c.create(sid, OpCreate, r.Path, r.Data, r.Flags, r.ACL)
		if res.Err == nil {
			notes = c.createdEvents(res.Path, notes)
		}
	case OpDelete:
		if res.Err = c.checkDelete(sid, r.Path, r.Version); res.Err == nil {
			notes = c.removeNode(r.Path, notes)
		}
	case OpSetData:
		res.Stat, res.Err = c.setData(sid, r.Path, r.Data, r.Version)
		if res.Err == nil {
			notes = c.fire(dataWatch, r.Path, zk.EventNodeDataChanged, notes)
		}
	case OpExists:
		n, ok := c.nodes[r.Path]
		if r.Watch {
			c.addWatch(dataWatch, r.Path, sid) // exists leaves a watch even on a missing node
		}
		if !ok {
			res.Err = zk.ErrNoNode
		} else {
			res.Stat = n.view()
		}
	case OpGetData:
		if n, ok := c.nodes[r.Path]; !ok {
			res.Err = zk.ErrNoNode
		} else if !c.allowed(sid, n, zk.PermRead) {
			res.Err = zk.ErrNoAuth // checked before the watch is set: none is left
		} else {
			if r.Watch {
				c.addWatch(dataWatch, r.Path, sid)
			}
			res.Data, res.Stat = cloneBytes(n.data), n.view()
		}
	case OpGetChildren:
		if n, ok := c.nodes[r.Path]; !ok {
			res.Err = zk.ErrNoNode
		} else if !c.allowed(sid, n, zk.PermRead) {
			res.Err = zk.ErrNoAuth
		} else {
			if r.Watch {
				c.addWatch(childWatch, r.Path, sid)
			}
			res.Children = make([]string, len(n.children))
			for i, e := range n.children {
				res.Children[i] = e.name
			}
			res.Stat = n.view()
		}
	case OpSync:
		res.Path = r.Path
	case OpGetACL:
		// ZooKeeper 3.8 wants READ or ADMIN, and hides the digests' hashes from a session without ADMIN.
		switch n, ok := c.nodes[r.Path]; {
		case !ok:
			res.Err = zk.ErrNoNode
		case !c.allowed(sid, n, zk.PermRead|zk.PermAdmin):
			res.Err = zk.ErrNoAuth
		case !c.allowed(sid, n, zk.PermAdmin):
			res.ACL, res.Stat = redactACL(n.acl), n.view()
		default:
			res.ACL, res.Stat = slices.Clone(n.acl), n.view()
		}
	case OpSetACL:
		res.Stat, res.Err = c.setACL(sid, r.Path, r.ACL, r.Version)
	case OpCheck:
		if res.Err = c.checkVersion(sid, r.Path, r.Version); res.Err == nil {
			res.NoReply = true
		}
	case OpAllChildrenNumber:
		if n, ok := c.nodes[r.Path]; !ok {
			res.Err = zk.ErrNoNode
		} else if !c.allowed(sid, n, zk.PermRead) {
			res.Err = zk.ErrNoAuth
		} else {
			res.Number = c.descendants(r.Path)
		}
	case OpGetEphemerals:
		res.Children = []string{}
		for _, p := range slices.Sorted(maps.Keys(c.sessions[sid].ephemeral)) {
			if strings.HasPrefix(p, r.Path) {
				res.Children = append(res.Children, p)
			}
		}
	case OpCheckWatches, OpRemoveWatches:
		res.Err = c.watchedBy(sid, r.Path, r.Mode, r.Op == OpRemoveWatches)
	case OpAddWatch:
		if r.Mode != 0 && r.Mode != 1 {
			res.Err = errMarshalling // not a mode ZooKeeper knows (0 persistent, 1 persistent recursive): it cannot decode the request
		} else {
			c.addPersistentWatch(sid, r.Path, r.Mode == 1)
		}
	case OpPing:
	case OpAuth:
		res.Err = c.addAuth(sid, r.Path, r.Data)
	case OpReconfig:
		res, notes = c.reconfigure(sid, r.Reconfig)
	case OpSetWatches:
		if w := r.Watches; w != nil {
			notes = c.setWatches(sid, w.RelativeZxid, w.Data, w.Exist, w.Child)
			c.setPersistentWatches(sid, w.Persistent, w.Recursive)
		}
	case OpCreateContainer, OpCreateTTL:
		var m nodeMode
		if m, res.Err = c.createMode(r.Op, r.Flags, r.TTL); res.Err == nil {
			res.Path, res.Err = c.createAs(sid, r.Path, r.Data, r.ACL, m)
		}
		if res.Err == nil {
			notes = c.createdEvents(res.Path, notes)
		}
	case OpMulti:
		if res.Multi, notes, res.Err = c.multi(sid, r.Ops); res.Err != nil {
			break
		}
		for _, m := range res.Multi {
			if m.Error != nil {
				res.Err = m.Error
				break
			}
		}
	default:
		res.Err = errUnimplemented // not a request the core knows; the edge translates only those it does
	}
	res.Zxid = c.zxid
	return res, notes
}

// setACL replaces a node's ACL if its aversion matches (-1 matches any), as ZooKeeper checks them: the ACL
// (fixupACL), the node's existence, ADMIN on it, then the version.
func (c *Core) setACL(sid int64, path string, acl []zk.ACL, version int32) (zk.Stat, error) {
	acl, err := c.fixupACL(sid, acl)
	if err != nil {
		return zk.Stat{}, err
	}
	n, ok := c.nodes[path]
	if !ok {
		return zk.Stat{}, zk.ErrNoNode
	}
	if !c.allowed(sid, n, zk.PermAdmin) {
		return zk.Stat{}, zk.ErrNoAuth
	}
	if version != -1 && version != n.stat.Aversion {
		return zk.Stat{}, zk.ErrBadVersion
	}
	n.acl, n.anyone = acl, anyonePerms(acl)
	n.stat.Aversion++
	return n.view(), nil
}

// descendants counts the nodes below path, at any depth.
func (c *Core) descendants(path string) int32 {
	prefix := path + "/"
	if path == "/" {
		prefix = "/"
	}
	var n int32
	for p := range c.nodes {
		if p != path && strings.HasPrefix(p, prefix) {
			n++
		}
	}
	return n
}

// watchedBy reports whether session sid has a watch on path of the given type, as checkWatches does
// (zk.ErrNoWatcher if it has none): 1 child watches, 2 data watches, 3 either, whatever their mode (ZooKeeper
// 3.8.0 cannot decode the types 4 and 5 of persistent watches: marshalling error). With remove set it also
// removes them, as removeWatches does.
func (c *Core) watchedBy(sid int64, path string, mode int32, remove bool) error {
	if !remove && path != "" && path[0] != '/' {
		// Measured: checkWatches of a relative path fails with a marshalling error whatever the session
		// watches (ZooKeeper walks the path's parents, which a relative path breaks); removeWatches of one
		// answers NoWatcher.
		return errMarshalling
	}
	var kinds []int
	switch mode {
	case 1:
		kinds = []int{childWatch}
	case 2:
		kinds = []int{dataWatch}
	case 3:
		kinds = []int{dataWatch, childWatch}
	default:
		return errMarshalling
	}
	found := false
	for _, k := range kinds {
		if _, ok := c.watches[k][path][sid]; ok {
			found = true
			if remove {
				delete(c.watches[k][path], sid)
				if len(c.watches[k][path]) == 0 {
					delete(c.watches[k], path)
				}
			}
		}
		if _, ok := c.persist[k][path][sid]; ok {
			found = true
			if remove {
				delete(c.persist[k][path], sid)
				if len(c.persist[k][path]) == 0 {
					delete(c.persist[k], path)
				}
			}
		}
	}
	if !found {
		return errNoWatcher
	}
	return nil
}

// addPersistentWatch sets the watch addWatch sets, persistent or recursive, in both tables (as ZooKeeper 3.8.0
// does: checkWatches finds a recursive watch among the child watches too), replacing the session's standard
// watches on the path.
func (c *Core) addPersistentWatch(sid int64, path string, recursive bool) {
	mode := persistentWatch
	if recursive {
		mode = recursiveWatch
	}
	for _, k := range []int{dataWatch, childWatch} {
		if set := c.watches[k][path]; set != nil {
			delete(set, sid)
			if len(set) == 0 {
				delete(c.watches[k], path)
			}
		}
		m := c.persist[k][path]
		if m == nil {
			m = map[int64]uint8{}
			c.persist[k][path] = m
		}
		m[sid] = mode
	}
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return bytes.Clone(b)
}

// create adds a node. The checks come in ZooKeeper 3.8's order, as measured: flags, the path's shape
// (relative or with NUL), the ACL (fixupACL), the parent's existence, CREATE on the parent, the whole path's
// validity (after the sequence suffix), the node's absence, and a parent that is not ephemeral. A sequential name is the parent's
// count of child creates so far, as `%010d` (a Java int: it wraps to -2147483648). op is OpCreate for a create
// request, OpMulti for a multi's create op (see createMode).
func (c *Core) create(sid int64, op Op, path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	m, err := c.createMode(op, flags, -1)
	if err != nil {
		return "", err
	}
	return c.createAs(sid, path, data, acl, m)
}

// createAs adds a node of mode m (create's checks after the flags').
func (c *Core) createAs(sid int64, path string, data []byte, acl []zk.ACL, m nodeMode) (string, error) {
	if !strings.HasPrefix(path, "/") || strings.IndexByte(path, 0) >= 0 {
		return "", zk.ErrBadArguments // the server wants an absolute path free of NUL before anything else
	}
	if s := c.sessions[sid]; m.ephemeral && s != nil && s.local {
		// The leader knows no such global session (measured: a multi's ephemeral create from a local session,
		// upgrading off, fails with SessionExpired).
		return "", zk.ErrSessionExpired
	}
	acl, err := c.fixupACL(sid, acl)
	if err != nil {
		return "", err
	}
	if path == "/" {
		return "", zk.ErrNodeExists
	}
	parent := parentOf(path)
	p, ok := c.nodes[parent]
	if !ok {
		return "", zk.ErrNoNode
	}
	if !c.allowed(sid, p, zk.PermCreate) {
		return "", zk.ErrNoAuth
	}
	if m.sequential {
		path = withSequence(path, p.stat.Cversion)
	}
	if err := validatePath(path, false); err != nil {
		return "", zk.ErrBadArguments
	}
	if _, ok := c.nodes[path]; ok {
		return "", zk.ErrNodeExists
	}
	if p.isEphemeral() {
		return "", zk.ErrNoChildrenForEphemerals
	}
	c.save(parent)
	c.save(path)
	n := &node{data: cloneBytes(data), acl: acl, anyone: anyonePerms(acl)}
	n.stat = zk.Stat{
		Czxid: c.zxid, Mzxid: c.zxid, Pzxid: c.zxid, Ctime: c.now, Mtime: c.now,
		DataLength: int32(len(data)),
	}
	switch {
	case m.ephemeral:
		n.stat.EphemeralOwner = sid
		c.sessions[sid].ephemeral[path] = struct{}{}
	case m.container:
		n.stat.EphemeralOwner = containerOwner
		c.reaper.watch(path)
	case m.ttl > 0:
		n.stat.EphemeralOwner = ttlOwner | m.ttl
		c.reaper.watch(path)
	}
	c.nodes[path] = n
	c.link(parent, baseName(path))
	c.wrote(path, len(path)+len(data))
	p.stat.Cversion++
	p.stat.Pzxid = c.zxid
	return path, nil
}

func (c *Core) createdEvents(path string, notes []Notification) []Notification {
	notes = c.fire(dataWatch, path, zk.EventNodeCreated, notes)
	return c.fire(childWatch, parentOf(path), zk.EventNodeChildrenChanged, notes)
}

// checkDelete checks a delete in ZooKeeper 3.8's order: the server's own nodes, the parent's existence, DELETE
// on the parent (before the node's own existence: a missing node under a parent the session may not delete
// from is zk.ErrNoAuth), then the node, its version and its children.
func (c *Core) checkDelete(sid int64, path string, version int32) error {
	if !strings.Contains(path, "/") || strings.Contains(path, "\x00") {
		return zk.ErrBadArguments // ZooKeeper cannot take the parent of such a path (measured: "golden", "")
	}
	if specialPaths[path] {
		return zk.ErrBadArguments // one of the server's own nodes
	}
	p, ok := c.nodes[parentOf(path)]
	if !ok {
		return zk.ErrNoNode
	}
	if !c.allowed(sid, p, zk.PermDelete) {
		return zk.ErrNoAuth
	}
	n, ok := c.nodes[path]
	if !ok {
		return zk.ErrNoNode
	}
	if version != -1 && version != n.stat.Version {
		return zk.ErrBadVersion
	}
	if len(n.children) > 0 {
		return zk.ErrNotEmpty
	}
	return nil
}

// removeNode deletes a childless node: the parent's cversion and pzxid move, the node's data and child
// watches fire NodeDeleted (once per session), the parent's child watches fire NodeChildrenChanged.
func (c *Core) removeNode(path string, notes []Notification) []Notification {
	n := c.nodes[path]
	parent := parentOf(path)
	c.save(parent)
	c.save(path)
	if n.isEphemeral() {
		if s, ok := c.sessions[n.stat.EphemeralOwner]; ok {
			delete(s.ephemeral, path)
		}
	}
	delete(c.nodes, path)
	c.unlink(parent, baseName(path))
	c.wrote(path, len(path))
	c.nodes[parent].stat.Pzxid = c.zxid
	// ZooKeeper suppresses the second NodeDeleted for a session that watched both the data and the children.
	start := len(notes)
	notes = c.fireFor(dataWatch, path, zk.EventNodeDeleted, n, notes)
	for _, sid := range c.watchers(childWatch, path, zk.EventNodeDeleted) {
		if !c.allowed(sid, n, zk.PermRead) {
			continue
		}
		if !slices.ContainsFunc(notes[start:], func(n Notification) bool { return n.Session == sid }) {
			notes = append(notes, Notification{sid, watchEvent(zk.EventNodeDeleted, path)})
		}
	}
	return c.fire(childWatch, parent, zk.EventNodeChildrenChanged, notes)
}

// setData checks, as ZooKeeper 3.8 does, the node's existence, WRITE on it, then the version.
func (c *Core) setData(sid int64, path string, data []byte, version int32) (zk.Stat, error) {
	n, ok := c.nodes[path]
	if !ok {
		return zk.Stat{}, zk.ErrNoNode
	}
	if !c.allowed(sid, n, zk.PermWrite) {
		return zk.Stat{}, zk.ErrNoAuth
	}
	if version != -1 && version != n.stat.Version {
		return zk.Stat{}, zk.ErrBadVersion
	}
	c.save(path)
	n.data = cloneBytes(data)
	n.stat.Version++
	n.stat.Mzxid = c.zxid
	n.stat.Mtime = c.now
	n.stat.DataLength = int32(len(data))
	c.wrote(path, len(path)+len(data))
	return n.view(), nil
}

// multi runs the operations as one transaction: all of them, or none. On failure, ZooKeeper reports each
// operation's outcome: nil before the failing one, the failure itself, then "runtime inconsistency" (-2) for
// the ones it did not try; the tree, cversions included, is as before. Reaching a create with a TTL mode fails
// the whole request instead: no responses, and errMarshalling as the error.
func (c *Core) multi(sid int64, ops []Request) ([]zk.MultiResponse, []Notification, error) {
	c.inMulti, c.undo = true, c.undo[:0]
	defer func() { c.inMulti, c.undo, c.taken = false, c.undo[:0], c.taken[:0] }()
	out := make([]zk.MultiResponse, len(ops))
	var notes []Notification
	failed := -1
	for i := range ops {
		var err error
		switch o := &ops[i]; o.Op {
		case OpCreate:
			if o.Flags == zk.FlagTTL || o.Flags == zk.FlagPersistentSequentialWithTTL {
				// A create with a TTL mode that the server reaches (no earlier op failed) fails the whole
				// request with a marshalling error: go-zookeeper returns no responses, nothing is applied.
				c.rollback()
				return []zk.MultiResponse{}, nil, errMarshalling
			}
			var p string
			if p, err = c.create(sid, OpMulti, o.Path, o.Data, o.Flags, o.ACL); err == nil {
				out[i].String = p
				notes = c.createdEvents(p, notes)
			}
		case OpCreateTTL:
			// A createTTL op in a multi takes its mode from the flags: a TTL node for the TTL modes, else
			// whatever the flags make, its TTL unused (measured).
			var m nodeMode
			if m, err = c.createMode(multiTTLOp(o.Flags), o.Flags, o.TTL); err == nil {
				var p string
				if p, err = c.createAs(sid, o.Path, o.Data, o.ACL, m); err == nil {
					out[i].String = p
					notes = c.createdEvents(p, notes)
				}
			}
		case OpDelete:
			if err = c.checkPath(o.Path); err == nil {
				if err = c.checkDelete(sid, o.Path, o.Version); err == nil {
					notes = c.removeNode(o.Path, notes)
				}
			}
		case OpSetData:
			if err = c.checkPath(o.Path); err == nil {
				var st zk.Stat
				if st, err = c.setData(sid, o.Path, o.Data, o.Version); err == nil {
					out[i].Stat = &st
					notes = c.fire(dataWatch, o.Path, zk.EventNodeDataChanged, notes)
				}
			}
		case OpCheck:
			if err = c.checkPath(o.Path); err == nil {
				err = c.checkVersion(sid, o.Path, o.Version)
			}
		default:
			err = zk.ErrBadArguments // Conn.Multi refuses other op types before sending
		}
		if err != nil {
			failed = i
			out[i].Error = err
			break
		}
	}
	if failed < 0 {
		c.commitWrites()
		return out, notes, nil
	}
	c.rollback()
	for i := range out {
		switch {
		case i < failed:
			out[i] = zk.MultiResponse{}
		case i > failed:
			out[i] = zk.MultiResponse{Error: errRuntimeInconsistency}
		}
	}
	return out, nil, nil
}

// errMarshalling is what go-zookeeper reports when the server could not decode a request: ZooKeeper's code
// -5, which go-zookeeper has no named error for.
var errMarshalling = fmt.Errorf("unknown error: %v", zk.ErrCode(-5))

// withSequence appends a sequence number to path the way ZooKeeper formats it, as %010d would (so the int32
// wrap gives "-2147483648"), without fmt: sequential creates are a hot path.
func withSequence(path string, n int32) string {
	var digits [11]byte
	d := strconv.AppendInt(digits[:0], int64(n), 10)
	sign := ""
	if n < 0 {
		sign, d = "-", d[1:]
	}
	var b strings.Builder
	b.Grow(len(path) + 11)
	b.WriteString(path)
	b.WriteString(sign)
	for i := len(sign) + len(d); i < 10; i++ {
		b.WriteByte('0')
	}
	b.Write(d)
	return b.String()
}

// errUnimplemented is ZooKeeper's code -6, which go-zookeeper has no named error for: the answer to a
// request type the server does not know, and to TTL creates on a server without extended types.
var errUnimplemented = fmt.Errorf("unknown error: %v", zk.ErrCode(-6))

// errNoWatcher is ZooKeeper's code -121 (checkWatches or removeWatches of a watch the session does not have),
// which go-zookeeper has no named error for.
var errNoWatcher = fmt.Errorf("unknown error: %v", zk.ErrCode(-121))

// errRuntimeInconsistency is what go-zookeeper reports for the operations of a failed multi after the failing
// one: ZooKeeper's code -2, which go-zookeeper has no named error for.
var errRuntimeInconsistency = fmt.Errorf("unknown error: %v", zk.ErrCode(-2))

// checkVersion is a check operation's test, in ZooKeeper 3.8's order: the node's existence, READ on it, then
// its version.
func (c *Core) checkVersion(sid int64, path string, version int32) error {
	n, ok := c.nodes[path]
	switch {
	case !ok:
		return zk.ErrNoNode
	case !c.allowed(sid, n, zk.PermRead):
		return zk.ErrNoAuth
	case version != -1 && version != n.stat.Version:
		return zk.ErrBadVersion
	}
	return nil
}

func (c *Core) checkPath(path string) error {
	if err := validatePath(path, false); err != nil {
		return zk.ErrBadArguments
	}
	return nil
}

// save records, once per transaction, how to undo a change to path; it also turns the node into a private
// copy so that a rollback can put the old one back. Outside a multi there is nothing to undo, and it is free.
func (c *Core) save(path string) {
	if !c.inMulti {
		return
	}
	for _, u := range c.undo {
		if u.path == path {
			return
		}
	}
	n, ok := c.nodes[path]
	if !ok {
		c.undo = append(c.undo, undoEntry{path: path})
		return
	}
	cp := *n
	cp.children = slices.Clone(n.children)
	c.undo = append(c.undo, undoEntry{path: path, prev: &cp})
}

func (c *Core) rollback() {
	c.pendingWrites = c.pendingWrites[:0]
	for i := len(c.undo) - 1; i >= 0; i-- {
		u := c.undo[i]
		// The node the multi left may be a different session's ephemeral than the one it replaced.
		if cur, ok := c.nodes[u.path]; ok && cur.isEphemeral() {
			if s, ok := c.sessions[cur.stat.EphemeralOwner]; ok {
				delete(s.ephemeral, u.path)
			}
		}
		if u.prev == nil {
			delete(c.nodes, u.path)
			continue
		}
		if u.prev.isEphemeral() {
			if s, ok := c.sessions[u.prev.stat.EphemeralOwner]; ok {
				s.ephemeral[u.path] = struct{}{}
			}
		}
		c.nodes[u.path] = u.prev
	}
	for _, w := range c.taken {
		for sid := range w.sessions {
			c.addWatch(w.kind, w.path, sid)
		}
	}
}

// --- watches ----------------------------------------------------------------------------------------------

func watchEvent(t zk.EventType, path string) zk.Event {
	return zk.Event{Type: t, State: zk.StateSyncConnected, Path: path}
}

func (c *Core) addWatch(kind int, path string, sid int64) {
	if m := c.persist[kind][path]; m != nil { // a standard watch replaces a persistent one
		delete(m, sid)
		if len(m) == 0 {
			delete(c.persist[kind], path)
		}
	}
	set, ok := c.watches[kind][path]
	if !ok {
		set = map[int64]struct{}{}
		c.watches[kind][path] = set
	}
	set[sid] = struct{}{}
}

// takeWatchers removes and returns, in session order, the sessions watching path (watches are one-shot).
func (c *Core) takeWatchers(kind int, path string) []int64 {
	set, ok := c.watches[kind][path]
	if !ok {
		return nil
	}
	delete(c.watches[kind], path)
	if c.inMulti {
		c.taken = append(c.taken, takenWatch{kind, path, set})
	}
	ids := make([]int64, 0, len(set)) // sized up front: this is on every write's path
	for id := range set {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// watchers returns, in session order and once each, the sessions an event of type t on path in table kind goes
// to: the standard watchers of path (their watches are taken), the persistent ones of path, and, unless t is
// NodeChildrenChanged, the recursive ones of path and of its ancestors.
func (c *Core) watchers(kind int, path string, t zk.EventType) []int64 {
	ids := c.takeWatchers(kind, path)
	if len(c.persist[kind]) == 0 {
		return ids
	}
	n := len(ids)
	add := func(sid int64) {
		if !slices.Contains(ids, sid) {
			ids = append(ids, sid)
		}
	}
	recursive := t != zk.EventNodeChildrenChanged
	for sid, mode := range c.persist[kind][path] {
		if mode == persistentWatch || recursive {
			add(sid)
		}
	}
	for p := path; recursive && p != "/"; {
		p = parentOf(p)
		for sid, mode := range c.persist[kind][p] {
			if mode == recursiveWatch {
				add(sid)
			}
		}
	}
	if len(ids) > n {
		slices.Sort(ids)
	}
	return ids
}

// fire takes the watches an event of type t on path triggers and sends the event to their sessions, those
// that may read the node excepted (the node's ACL governs: the parent's for NodeChildrenChanged).
func (c *Core) fire(kind int, path string, t zk.EventType, notes []Notification) []Notification {
	return c.fireFor(kind, path, t, c.nodes[path], notes)
}

// fireFor is fire with the node whose ACL decides who gets the event: as ZooKeeper 3.8 (with the
// CVE-2024-23944 fix the Debian build carries) does, a session without READ on it gets nothing, and its
// watch is gone all the same.
func (c *Core) fireFor(kind int, path string, t zk.EventType, n *node, notes []Notification) []Notification {
	for _, sid := range c.watchers(kind, path, t) {
		if n != nil && !c.allowed(sid, n, zk.PermRead) {
			continue
		}
		notes = append(notes, Notification{sid, watchEvent(t, path)})
	}
	return notes
}

// setWatches re-registers a reconnecting session's watches the way ZooKeeper's SetWatches does: a watch whose
// node changed after lastZxid fires at once (data: NodeDataChanged, or NodeDeleted if the node is gone;
// exist: NodeCreated if the node now exists; child: NodeChildrenChanged, or NodeDeleted), the others are set
// again. Each list is processed in the order given.
func (c *Core) setWatches(sid int64, lastZxid int64, data, exist, child []string) []Notification {
	var notes []Notification
	ev := func(t zk.EventType, p string) { notes = append(notes, Notification{sid, watchEvent(t, p)}) }
	// Data and child watches follow one rule, each with its own zxid and event.
	rewatch := func(paths []string, kind int, changed zk.EventType, zxid func(zk.Stat) int64) {
		for _, p := range paths {
			switch n, ok := c.nodes[p]; {
			case !ok:
				ev(zk.EventNodeDeleted, p)
			case zxid(n.stat) > lastZxid:
				ev(changed, p)
			default:
				c.addWatch(kind, p, sid)
			}
		}
	}
	rewatch(data, dataWatch, zk.EventNodeDataChanged, func(s zk.Stat) int64 { return s.Mzxid })
	for _, p := range exist {
		if _, ok := c.nodes[p]; ok {
			ev(zk.EventNodeCreated, p)
		} else {
			c.addWatch(dataWatch, p, sid)
		}
	}
	rewatch(child, childWatch, zk.EventNodeChildrenChanged, func(s zk.Stat) int64 { return s.Pzxid })
	return notes
}

// setPersistentWatches re-registers a reconnecting session's persistent and recursive watches, as setWatches2
// does: they are set again, and none fires for what changed meanwhile.
func (c *Core) setPersistentWatches(sid int64, persistent, recursive []string) {
	for _, p := range persistent {
		c.addPersistentWatch(sid, p, false)
	}
	for _, p := range recursive {
		c.addPersistentWatch(sid, p, true)
	}
}

// --- inspection -------------------------------------------------------------------------------------------

// dump renders the whole state, sorted, one line per node, session and watch.
func (c *Core) dump(b *strings.Builder) {
	// fmt's %d, %q and %#x, written with strconv: a checker dumps the tree after every run.
	buf := make([]byte, 0, 256)
	buf = strconv.AppendInt(append(buf, "zxid "...), c.zxid, 10)
	buf = append(buf, '\n')
	for _, p := range slices.Sorted(maps.Keys(c.nodes)) {
		n := c.nodes[p]
		s := n.view()
		buf = append(append(buf, "node "...), p...)
		buf = strconv.AppendQuote(append(buf, " data="...), string(n.data))
		buf = strconv.AppendInt(append(buf, " czxid="...), s.Czxid, 10)
		buf = strconv.AppendInt(append(buf, " mzxid="...), s.Mzxid, 10)
		buf = strconv.AppendInt(append(buf, " pzxid="...), s.Pzxid, 10)
		buf = strconv.AppendInt(append(buf, " ctime="...), s.Ctime, 10)
		buf = strconv.AppendInt(append(buf, " mtime="...), s.Mtime, 10)
		buf = strconv.AppendInt(append(buf, " version="...), int64(s.Version), 10)
		buf = strconv.AppendInt(append(buf, " cversion="...), int64(s.Cversion), 10)
		buf = strconv.AppendInt(append(buf, " aversion="...), int64(s.Aversion), 10)
		buf = appendSharpHex(append(buf, " owner="...), s.EphemeralOwner)
		buf = strconv.AppendInt(append(buf, " len="...), int64(s.DataLength), 10)
		buf = strconv.AppendInt(append(buf, " children="...), int64(s.NumChildren), 10)
		buf = append(append(buf, n.kindSuffix()...), '\n')
		b.Write(buf)
		buf = buf[:0]
	}
	for _, id := range slices.Sorted(maps.Keys(c.sessions)) {
		s := c.sessions[id]
		buf = appendSharpHex(append(buf, "session "...), id)
		buf = append(append(buf, " timeout="...), s.timeout.String()...)
		buf = strconv.AppendInt(append(buf, " heard="...), s.lastHeard, 10)
		buf = strconv.AppendInt(append(buf, " ephemerals="...), int64(len(s.ephemeral)), 10)
		buf = append(buf, '\n')
	}
	for kind, name := range []string{"data", "child"} {
		for _, p := range slices.Sorted(maps.Keys(c.watches[kind])) {
			buf = append(append(append(append(buf, "watch "...), name...), ' '), p...)
			for _, id := range slices.Sorted(maps.Keys(c.watches[kind][p])) {
				buf = appendSharpHex(append(buf, ' '), id)
			}
			buf = append(buf, '\n')
		}
		for _, p := range slices.Sorted(maps.Keys(c.persist[kind])) {
			buf = append(append(append(append(buf, "watch "...), name...), "-persistent "...), p...)
			for _, id := range slices.Sorted(maps.Keys(c.persist[kind][p])) {
				buf = appendSharpHex(append(buf, ' '), id)
				if c.persist[kind][p][id] == recursiveWatch {
					buf = append(buf, "(recursive)"...)
				}
			}
			buf = append(buf, '\n')
		}
	}
	b.Write(buf)
}

// appendSharpHex appends v as fmt's %#x writes an int64: "0x1f", "-0x1f".
func appendSharpHex(b []byte, v int64) []byte {
	if v < 0 {
		return strconv.AppendUint(append(b, "-0x"...), uint64(-v), 16)
	}
	return strconv.AppendUint(append(b, "0x"...), uint64(v), 16)
}

// Packet limits, in bytes of a request's header and body as jute encodes them.
const (
	// maxPacket is the server's jute.maxbuffer default: it drops the connection of a client that sends a
	// longer request, and executes nothing of it.
	maxPacket = 0xfffff
	// clientBuffer is what fits in go-zookeeper's 1.5 MiB encode buffer; a longer request fails in the client
	// with zk.ErrShortBuffer and is not sent.
	clientBuffer = 1536*1024 - 4
)

// wireSize returns the length of the request's packet as jute encodes it (header included, length prefix
// excluded). Only writes can carry enough data to matter; reads are small.
func (r *Request) wireSize() int {
	str := func(s string) int { return 4 + len(s) }
	acls := func(a []zk.ACL) int {
		n := 4
		for _, x := range a {
			n += 4 + str(x.Scheme) + str(x.ID)
		}
		return n
	}
	n := 8
	switch r.Op {
	case OpCreate:
		n += str(r.Path) + 4 + len(r.Data) + acls(r.ACL) + 4
	case OpSetData:
		n += str(r.Path) + 4 + len(r.Data) + 4
	case OpMulti:
		for i := range r.Ops {
			n += 9
			switch o := &r.Ops[i]; o.Op {
			case OpCreate:
				n += str(o.Path) + 4 + len(o.Data) + acls(o.ACL) + 4
			case OpSetData:
				n += str(o.Path) + 4 + len(o.Data) + 4
			case OpDelete, OpCheck:
				n += str(o.Path) + 4
			}
		}
		n += 9
	default:
		n += str(r.Path) + 5
	}
	return n
}
