package check

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/recipe"
)

// Variant is a named lock implementation the checker knows: the product's recipe, and the mutants —
// deliberately broken locks, each with one classic bug — that demonstrate the checker catches them.
type Variant struct {
	Name    string
	Bug     string  // what is wrong with it ("" for the recipe)
	Expect  string  // the properties that may catch it, "|"-separated ("" for the recipe: it must pass)
	Factory Factory // makes it on the model's own clients
	// ZKFactory, when set, makes it on real go-zookeeper clients over the model's wire instead (RunZK).
	ZKFactory ZKFactory
	Config    Config // how to explore it (Name, Faults and the like filled in)
}

// clients returns the kind of client the variant runs on.
func (v Variant) clients() clients {
	if v.ZKFactory != nil {
		return wireClients(v.ZKFactory)
	}
	return modelClients(v.Factory)
}

// overWire runs a variant on go-zookeeper clients over the model's wire, named with a "-wire" suffix.
func overWire(v Variant) Variant {
	f := v.Factory
	v.Name += "-wire"
	v.Config.Name = v.Name
	v.Factory, v.ZKFactory = nil, func(conn *zk.Conn, path string) Locker { return f(conn, path) }
	return v
}

// Recipe is the Factory of the product's lock (package recipe), with deterministic node ids.
func Recipe(conn recipe.Conn, path string) Locker {
	return recipe.NewLock(conn, path, recipe.WithRandom(RandFor(conn)))
}

// RWRecipe is the Factory of the product's read-write lock (recipe.NewRWLock), with deterministic node ids,
// for Config.Primitive ReadWrite: its Lock is the write side, its RLocker the read side.
func RWRecipe(conn recipe.Conn, path string) Locker {
	rw := recipe.NewRWLock(conn, path, recipe.WithRandom(RandFor(conn)))
	return NewRWLocker(rw.WriteLock(), rw.ReadLock())
}

// NewRWLocker makes an RWLocker of a read-write lock's two sides, for a Factory (Config.Primitive
// ReadWrite): write's methods are the RWLocker's own, and RLocker returns read. Each side's Lost(), if it
// has one, is asked during its holds.
func NewRWLocker(write, read Locker) RWLocker { return rwLocker{write, read} }

type rwLocker struct{ write, read Locker }

func (l rwLocker) Lock(ctx context.Context) error   { return l.write.Lock(ctx) }
func (l rwLocker) Unlock(ctx context.Context) error { return l.write.Unlock(ctx) }
func (l rwLocker) Token() int64                     { return l.write.Token() }
func (l rwLocker) RLocker() Locker                  { return l.read }

// Lost is the write side's Lost(), or nil (never lost) when it has none.
func (l rwLocker) Lost() <-chan struct{} { return lostOf(l.write) }

// Variants returns the recipe and the seven mutants, on the model's own clients and on go-zookeeper's over
// the wire, and go-zookeeper's own zk.Lock; then the read-write lock and its mutants; each with the
// exploration it gets in `make check`; then the semaphore and its mutants, and the election and its.
func Variants() []Variant {
	v := mutantsOf(Mutex, func(conn recipe.Conn, path string, bugs mutation) Locker { return newMutant(conn, path, bugs) })
	model := []Variant{
		{Name: "recipe", Factory: Recipe, Config: Config{Name: "recipe", Faults: AllFaults}},
		withClients(5, Variant{Name: "recipe-5-clients", Factory: Recipe, Config: Config{Name: "recipe-5-clients", Faults: AllFaults}}),
		v("mutant-control", "", "", 0, AllFaults),
		v("mutant-a-watch-parent", "watches the lock's parent (every child change) instead of its predecessor", "no-herd", watchParent, AllFaults),
		v("mutant-b-ignore-gone", "ignores \"predecessor already gone\" from exists-with-watch and waits anyway", "liveness", ignoreGone, AllFaults),
		v("mutant-c-plain-create", "creates a plain ephemeral-sequential node and retries it after a lost reply", "liveness|hygiene", plainCreate, FaultLoseReply),
		withClients(2, v("mutant-d-order-by-name", "orders lock nodes by their full name instead of their sequence number", "safety|fencing", orderByName, 0)),
		v("mutant-e-leave-on-cancel", "leaves its node behind when Lock is cancelled", "liveness|hygiene", leaveOnCancel, FaultCancel),
		v("mutant-f-ignore-loss", "the holder ignores session loss and writes without its fencing token", "fenced-register", ignoreLoss, FaultExpire|FaultDisconnect|FaultAdvance),
		v("mutant-g-session-token", "uses its session id as the fencing token, which does not grow from one holder to the next", "fencing", sessionToken, 0),
	}
	all := append([]Variant(nil), model...)
	for _, v := range model {
		if v.Name != "recipe-5-clients" {
			all = append(all, overWire(v))
		}
	}
	all = append(all, ZKLockVariant())
	all = append(all, rwVariants()...)
	all = append(all, semaphoreVariants()...)
	return append(all, electionVariants()...)
}

// mutantsOf returns the maker of a primitive's mutant variants: each is newLock's compact recipe with the bugs,
// explored with the fault kinds given.
func mutantsOf(prim Primitive, newLock func(conn recipe.Conn, path string, bugs mutation) Locker) func(name, bug, expect string, bugs mutation, faults Fault) Variant {
	return func(name, bug, expect string, bugs mutation, faults Fault) Variant {
		return Variant{Name: name, Bug: bug, Expect: expect,
			Factory: func(conn recipe.Conn, path string) Locker { return newLock(conn, path, bugs) },
			Config:  Config{Name: name, Faults: faults, Primitive: prim}}
	}
}

// rwVariants are the read-write lock (recipe.NewRWLock) and the mutants of the compact read-write lock.
// Readers are clients whose number plus the round is odd: c2 in round 1, c1 and c3 in round 2.
func rwVariants() []Variant {
	v := mutantsOf(ReadWrite, func(conn recipe.Conn, path string, bugs mutation) Locker { return newRWMutant(conn, path, bugs) })
	recipe := Variant{Name: "rwlock", Factory: RWRecipe, Config: Config{Name: "rwlock", Faults: AllFaults, Primitive: ReadWrite}}
	return []Variant{
		recipe,
		overWire(recipe),
		v("rwlock-mutant-control", "", "", 0, AllFaults),
		v("rwlock-mutant-a-reader-waits-on-reader", "a reader waits behind its immediate predecessor even when that is a reader", "readers-share", readerWaitsOnReader, AllFaults),
		withClients(2, v("rwlock-mutant-b-writer-ignores-readers", "a writer waits behind earlier write nodes only, not the read nodes below it", "safety|fencing", writerIgnoresReaders, 0)),
		v("rwlock-mutant-c-reader-assumes-held", "a reader whose watched write node goes holds without listing again", "safety|fencing", readerAssumesHeld, FaultCancel|FaultAdvance|FaultExpire),
	}
}

// ZKLockVariant is go-zookeeper's own zk.Lock, unmodified, on go-zookeeper clients over the wire. Its Lock
// takes no context, so cancellation cannot be injected (FaultCancel is off and no Lock has a deadline); it
// has no fencing token (0: the register admits everything, and mutual exclusion alone must protect it).
// README says what the checker finds in it.
func ZKLockVariant() Variant {
	const name = "zk-lock"
	return Variant{Name: name, Bug: "go-zookeeper's zk.Lock, unmodified", Expect: zkLockFinding,
		ZKFactory: func(conn *zk.Conn, path string) Locker {
			return zkLock{zk.NewLock(conn, path, zk.WorldACL(zk.PermAll))}
		},
		Config: Config{Name: name, Faults: AllFaults &^ FaultCancel, Deadline: -1}}
}

// zkLockFinding is what the checker finds in zk.Lock: the properties its shrunk trace may break. Which one
// an exploration meets first depends on its seed (measured: fenced-register in 4 of 28 seeds): zk.Lock
// cannot tell a holder that its session expired, so a holder whose session ended keeps writing while the
// next one holds the lock, and the register, which zk.Lock gives no token to fence with, loses an update.
const zkLockFinding = "liveness|hygiene|fenced-register"

// zkLock adapts go-zookeeper's *zk.Lock, whose methods take no context, to Locker.
type zkLock struct{ l *zk.Lock }

func (z zkLock) Lock(context.Context) error   { return z.l.Lock() }
func (z zkLock) Unlock(context.Context) error { return z.l.Unlock() }
func (z zkLock) Token() int64                 { return 0 }

// withClients sets how many clients contend for a variant. Two clients leave no room for a herd, so a
// mutant that breaks both mutual exclusion and the herd property is shown breaking the former.
func withClients(k int, v Variant) Variant {
	v.Config.Clients = k
	return v
}

// VariantByName finds a variant of Variants.
func VariantByName(name string) (Variant, error) {
	var names []string
	for _, v := range Variants() {
		if v.Name == name {
			return v, nil
		}
		names = append(names, v.Name)
	}
	return Variant{}, fmt.Errorf("check: no variant %q (known: %s)", name, strings.Join(names, ", "))
}

// mutation is a set of deliberate bugs.
type mutation uint16

const (
	watchParent mutation = 1 << iota
	ignoreGone
	plainCreate
	orderByName
	leaveOnCancel
	ignoreLoss
	sessionToken

	// The read-write lock's bugs (newRWMutant):
	readerWaitsOnReader  // a reader waits behind its immediate predecessor, a reader too
	writerIgnoresReaders // a writer waits behind earlier write nodes only
	readerAssumesHeld    // a reader whose watched write node goes holds without listing again
)

// mutant is a compact lock recipe that is correct with no mutations, and broken in one known way with each.
// It is a fixture for the checker, not a lock to use.
type mutant struct {
	conn recipe.Conn
	dir  string
	bugs mutation
	// marker is in the own node's name after the id ("-lock-" for the mutex, "-__READ__" or "-__WRIT__"
	// for a side of the read-write lock); blockedBy, if set, says which earlier nodes keep it waiting (the
	// mutex: every earlier node).
	marker    string
	blockedBy func(name string) bool
	rand      io.Reader
	node      string
	token     int64
	lost      chan struct{}
}

var errMutantLost = errors.New("mutant: lock node gone")

func newMutant(conn recipe.Conn, dir string, bugs mutation) *mutant {
	return &mutant{conn: conn, dir: dir, bugs: bugs, rand: RandFor(conn), marker: "-lock-"}
}

// rwMutant is the mutant's read-write lock: two mutants on one directory, with Curator's node names. A
// reader waits behind the nearest earlier write node, a writer behind its immediate predecessor; each bug
// breaks one of the rules.
type rwMutant struct {
	*mutant // the write side
	read    *mutant
}

func (rw rwMutant) RLocker() Locker { return rw.read }

const (
	readMarker  = "-__READ__"
	writeMarker = "-__WRIT__"
)

func newRWMutant(conn recipe.Conn, dir string, bugs mutation) rwMutant {
	rand := RandFor(conn) // one stream for both sides, so that their ids differ
	isWrite := func(name string) bool { return strings.Contains(name, writeMarker) }
	read := &mutant{conn: conn, dir: dir, bugs: bugs, rand: rand, marker: readMarker, blockedBy: isWrite}
	write := &mutant{conn: conn, dir: dir, bugs: bugs, rand: rand, marker: writeMarker, blockedBy: func(string) bool { return true }}
	if bugs&readerWaitsOnReader != 0 {
		read.blockedBy = write.blockedBy
	}
	if bugs&writerIgnoresReaders != 0 {
		write.blockedBy = isWrite
	}
	write.bugs &^= readerAssumesHeld // a reader's bug
	return rwMutant{mutant: write, read: read}
}

// predecessor returns the index in kids (sorted) of the nearest node before me that blocks it, or -1.
func (m *mutant) predecessor(kids []string, me int) int {
	for i := me - 1; i >= 0; i-- {
		if m.blockedBy == nil || m.blockedBy(kids[i]) {
			return i
		}
	}
	return -1
}

func (m *mutant) has(b mutation) bool { return m.bugs&b != 0 }

// Lock acquires the lock (or fails, with the mutation's bug).
func (m *mutant) Lock(ctx context.Context) error {
	empty := false
	if m.has(leadOnEmptyListing) {
		kids, _, err := m.conn.Children(m.dir)
		empty = err == nil && len(m.sorted(kids)) == 0
	}
	node, err := m.create(ctx)
	if err != nil {
		return err
	}
	if empty && m.take(node, nil) {
		return nil // the bug: another candidate may have looked, found it empty and created its node first
	}
	for {
		if err := ctx.Err(); err != nil {
			return m.giveUp(node, err)
		}
		var (
			kids   []string
			parent <-chan zk.Event
			stat   *zk.Stat
		)
		if m.has(watchParent) {
			// The herd-prone classic: list with a watch on the parent, so every change wakes every waiter.
			kids, parent, err = m.childrenW()
		} else {
			kids, stat, err = m.conn.Children(m.dir)
		}
		if err != nil {
			if errors.Is(err, zk.ErrConnectionClosed) {
				continue // connection trouble: list again
			}
			return m.giveUp(node, err)
		}
		kids = m.sorted(kids)
		me := -1
		for i, k := range kids {
			if m.dir+"/"+k == node {
				me = i
			}
		}
		if me < 0 {
			return errMutantLost
		}
		pred := m.predecessor(kids, me)
		if pred > 0 && m.has(watchLowest) {
			pred = 0 // the bug: every candidate watches the leader, and its end wakes them all
		}
		if pred < 0 {
			if m.take(node, stat) {
				return nil
			}
			continue
		}
		ch := parent
		if !m.has(watchParent) {
			var ok bool
			ok, _, ch, err = m.conn.ExistsW(m.dir + "/" + kids[pred])
			if err == nil && !ok && !m.has(ignoreGone) {
				continue
			}
		}
		if err != nil {
			continue
		}
		if err := ctx.Err(); err != nil { // a cancellation wins over an event that came with it
			return m.giveUp(node, err)
		}
		select {
		case <-ch:
			// The bug: the write node it waited behind is gone, so it must hold — but a writer that gave up
			// while waiting leaves its own predecessor holding.
			if m.has(readerAssumesHeld) {
				if _, stat, err := m.conn.Children(m.dir); err == nil && m.take(node, stat) {
					return nil // the listing's names go unread: only its pzxid, for the token
				}
			}
		case <-ctx.Done():
			return m.giveUp(node, ctx.Err())
		}
	}
}

// take makes the own node the hold, if it still exists. The token is the node's czxid — or, for a side of
// the read-write lock, the directory's pzxid in the listing that let it hold, as the recipe's: a reader's
// czxid may be below that of a writer it let go first.
func (m *mutant) take(node string, listing *zk.Stat) bool {
	ok, st, own, err := m.conn.ExistsW(node)
	if err != nil || !ok {
		return false
	}
	m.node, m.token, m.lost = node, st.Czxid, make(chan struct{})
	if m.blockedBy != nil && listing != nil {
		m.token = listing.Pzxid
	}
	if m.has(sessionToken) {
		m.token = m.conn.SessionID() // the bug: a later holder may have an older session
	}
	m.followOwn(own)
	return true
}

// childrenW lists the lock's children and watches the parent.
func (m *mutant) childrenW() ([]string, <-chan zk.Event, error) {
	cw, ok := m.conn.(interface {
		ChildrenW(string) ([]string, *zk.Stat, <-chan zk.Event, error)
	})
	if !ok {
		return nil, nil, fmt.Errorf("mutant: %T has no ChildrenW", m.conn)
	}
	kids, _, ch, err := cw.ChildrenW(m.dir)
	return kids, ch, err
}

func (m *mutant) create(ctx context.Context) (string, error) {
	var id [8]byte
	if _, err := io.ReadFull(m.rand, id[:]); err != nil {
		return "", err
	}
	prefix := fmt.Sprintf("_c_%x%s", id, m.marker)
	if m.has(plainCreate) {
		prefix = "lock-"
	}
	for i := 0; i < 100; i++ {
		if ctx.Err() != nil {
			return "", ctx.Err() // nothing created yet, or the lookup below found nothing
		}
		node, err := m.conn.Create(m.dir+"/"+prefix, nil, zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll))
		if err == nil {
			return node, nil
		}
		if !errors.Is(err, zk.ErrConnectionClosed) {
			return "", err
		}
		if m.has(plainCreate) {
			continue // the bug: the first create may have happened
		}
		// Did the lost create happen? Look for our id before creating again, cancelled or not: a node
		// found is returned, and Lock deletes it if the context is done.
		var kids []string
		for j := 0; j < 100; j++ {
			if kids, _, err = m.conn.Children(m.dir); !errors.Is(err, zk.ErrConnectionClosed) {
				break
			}
		}
		if err != nil {
			return "", fmt.Errorf("mutant: looking for a lost create: %w", err)
		}
		for _, k := range kids {
			if strings.HasPrefix(k, prefix) {
				return m.dir + "/" + k, nil
			}
		}
	}
	return "", errors.New("mutant: create kept failing")
}

func (m *mutant) giveUp(node string, cause error) error {
	if !m.has(leaveOnCancel) {
		for i := 0; i < 10; i++ {
			err := m.conn.Delete(node, -1)
			if err == nil || errors.Is(err, zk.ErrNoNode) {
				break
			}
		}
	}
	return fmt.Errorf("mutant: gave up: %w", cause)
}

// sorted orders lock nodes by sequence number (or, with orderByName, by name).
func (m *mutant) sorted(kids []string) []string {
	var locks []string
	for _, k := range kids {
		if _, ok := seqOf(k); ok {
			locks = append(locks, k)
		}
	}
	sort.Slice(locks, func(i, j int) bool {
		if m.has(orderByName) {
			return locks[i] < locks[j]
		}
		a, _ := seqOf(locks[i])
		b, _ := seqOf(locks[j])
		return a < b
	})
	return locks
}

// seqOf reads the sequence number after a node's marker ("lock-", or the read-write lock's).
func seqOf(name string) (int64, bool) {
	for _, marker := range []string{"lock-", readMarker, writeMarker, latchMarker} {
		if i := strings.LastIndex(name, marker); i >= 0 {
			n, err := strconv.ParseInt(name[i+len(marker):], 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// followOwn closes lost when the own node goes (deleted, or the session ended) — unless the holder ignores it.
func (m *mutant) followOwn(own <-chan zk.Event) {
	if m.has(ignoreLoss) {
		return
	}
	lost, node := m.lost, m.node
	go func() {
		// The first wait is on the watch Lock set: asking again could arrive after the node's deletion
		// by Unlock and leave a watch on a path that never returns.
		for failures, ch := 0, own; ; ch = nil {
			if ch == nil {
				ok, _, w, err := m.conn.ExistsW(node)
				if err != nil {
					if failures++; failures < 100 && errors.Is(err, zk.ErrConnectionClosed) {
						continue
					}
					close(lost)
					return
				}
				if !ok {
					close(lost)
					return
				}
				ch = w
			}
			ev := <-ch
			if ev.Type == zk.EventNodeDataChanged {
				continue
			}
			if ev.Type != zk.EventNodeDeleted && ev.Err == nil {
				continue
			}
			close(lost)
			return
		}
	}()
}

// Lost is closed when the holder loses its node (never, with ignoreLoss).
func (m *mutant) Lost() <-chan struct{} {
	if m.lost == nil {
		return nil
	}
	return m.lost
}

// Token is the own node's czxid (0, "no token", with ignoreLoss; the session id, with sessionToken).
func (m *mutant) Token() int64 {
	if m.has(ignoreLoss) {
		return 0
	}
	return m.token
}

// Unlock deletes the own node.
func (m *mutant) Unlock(ctx context.Context) error {
	node := m.node
	if node == "" {
		return errors.New("mutant: not locked")
	}
	m.node = ""
	var err error
	for i := 0; i < 10 && ctx.Err() == nil; i++ {
		err = m.conn.Delete(node, -1)
		if err == nil || errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if !errors.Is(err, zk.ErrConnectionClosed) {
			return err
		}
	}
	return fmt.Errorf("mutant: unlock: %w", err)
}
