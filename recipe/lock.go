package recipe

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// Conn is the part of a ZooKeeper client the lock uses. *zk.Conn (go-zookeeper)
// and *model.Conn (the in-memory fake) satisfy it as they are.
type Conn interface {
	Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	Children(path string) ([]string, *zk.Stat, error)
	ExistsW(path string) (bool, *zk.Stat, <-chan zk.Event, error)
	Delete(path string, version int32) error
	SessionID() int64
}

var (
	// ErrLocked is returned by Lock when this Lock value is already held or being acquired.
	ErrLocked = errors.New("recipe: this Lock is already held or being acquired; call Unlock first or use another Lock value")
	// ErrNotLocked is returned by Unlock when this Lock value does not hold the lock.
	ErrNotLocked = errors.New("recipe: this Lock is not held; call Lock first")
	// ErrLost says the lock node is gone: its session expired (or the node was deleted by
	// someone else). Lock wraps it when it gives up waiting, Unlock when the hold was already lost.
	ErrLost = errors.New("recipe: the lock node is gone (session expired or node deleted)")
	// ErrBadPath is returned by Lock when the lock path is not an absolute ZooKeeper path.
	ErrBadPath = errors.New("recipe: lock path must start with \"/\", not end with \"/\", and not be \"/\"")
)

// Option configures a Lock.
type Option func(*Lock)

// WithACL sets the ACL of the lock nodes and of any parent nodes the lock creates.
// The default is zk.WorldACL(zk.PermAll).
func WithACL(acl []zk.ACL) Option { return func(l *Lock) { l.acl = acl } }

// WithCleanupTimeout bounds how long a failed Lock spends deleting its node (default 10s).
func WithCleanupTimeout(d time.Duration) Option { return func(l *Lock) { l.cleanupTimeout = d } }

// WithRandom sets the source of the random ids in lock node names (default
// crypto/rand.Reader); a seeded source makes runs on the model reproducible.
func WithRandom(r io.Reader) Option { return func(l *Lock) { l.rand = r } }

// WithSuspendOnDisconnect makes Lost() close as soon as the connection is lost while the
// lock is held, instead of only when the session expires. events must carry the
// connection's session events (zk.EventSession, as sent on the channel zk.Connect returns)
// and must be read by this Lock alone: use the channel from zk.Connect if nothing else
// reads it, or give each Lock its own buffered channel fed from zk.WithEventCallback.
func WithSuspendOnDisconnect(events <-chan zk.Event) Option {
	return func(l *Lock) { l.sessionEvents = events }
}

// Lock is a distributed mutual-exclusion lock on one ZooKeeper path. See the package
// documentation for the algorithm. A Lock value is safe for concurrent use, but holds
// the lock at most once at a time.
type Lock struct {
	conn           Conn
	dir            string
	kind           nodeKind
	acl            []zk.ACL
	cleanupTimeout time.Duration
	sessionEvents  <-chan zk.Event
	rand           io.Reader
	// acquireFn creates the own node and waits until it holds: acquire (the queue behind earlier
	// nodes), unless a recipe built on a Lock decides otherwise when a node holds (the semaphore).
	acquireFn func(context.Context) (*hold, error)

	mu   sync.Mutex
	data []byte // the own node's data (an election candidate's value), set before acquiring
	busy bool   // Lock in progress or lock held
	hold *hold  // the current hold, nil when not held
}

// hold is one acquisition: the own node, its fencing token, and the loss signal.
type hold struct {
	node      string
	token     int64
	acquired  chan struct{} // closed once the lock is held
	done      chan struct{} // closed when the hold ends (released or abandoned)
	lost      chan struct{}
	lostOnce  sync.Once
	watchOnce sync.Once // starts followOwn, at the first Lost() of the hold
}

func newHold() *hold {
	return &hold{acquired: make(chan struct{}), done: make(chan struct{}), lost: make(chan struct{})}
}

func (h *hold) markLost() { h.lostOnce.Do(func() { close(h.lost) }) }

// NewLock returns a lock on the directory path (created on first use if missing).
// Every process that wants the same lock uses the same path, and the path holds
// nothing but lock nodes and unrelated children the lock ignores.
func NewLock(conn Conn, path string, opts ...Option) *Lock {
	return newLock(conn, path, mutexKind, opts)
}

// nodeKind is what a lock's nodes are called and which earlier nodes it waits behind.
type nodeKind struct {
	what      string   // what a hold is called in errors: "lock", "read lock", …
	marker    string   // in the own node's name
	blockedBy []string // the markers of earlier nodes that keep it from holding
}

var (
	mutexKind    = nodeKind{"lock", lockMarker, []string{lockMarker}}
	readKind     = nodeKind{"read lock", readMarker, []string{writeMarker}}
	writeKind    = nodeKind{"write lock", writeMarker, []string{readMarker, writeMarker}}
	electionKind = nodeKind{"leadership", latchMarker, []string{latchMarker}}
	leaseKind    = nodeKind{"semaphore lease", leaseMarker, nil} // never queued: the semaphore decides
)

func newLock(conn Conn, path string, kind nodeKind, opts []Option) *Lock {
	l := &Lock{conn: conn, dir: path, kind: kind, acl: zk.WorldACL(zk.PermAll), cleanupTimeout: 10 * time.Second, rand: rand.Reader}
	for _, opt := range opts {
		opt(l)
	}
	l.acquireFn = l.acquire
	return l
}

// Lock blocks until the lock is held, ctx is done, or the session is lost. On any
// failure it deletes its own node before returning, so nothing waits behind a ghost.
func (l *Lock) Lock(ctx context.Context) error { return l.lockWith(ctx, nil) }

// lockWith is Lock with data for the own node.
func (l *Lock) lockWith(ctx context.Context, data []byte) error {
	if !validDir(l.dir) {
		return fmt.Errorf("recipe: %s %q: %w", l.kind.what, l.dir, ErrBadPath)
	}
	l.mu.Lock()
	if l.busy {
		l.mu.Unlock()
		return ErrLocked
	}
	l.busy, l.data = true, data
	l.mu.Unlock()

	h, err := l.acquireFn(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.busy = false
		return fmt.Errorf("recipe: %s %s not acquired: %w", l.kind.what, l.dir, err)
	}
	l.hold = h
	return nil
}

func (l *Lock) acquire(ctx context.Context) (*hold, error) {
	id, err := newID(l.rand)
	if err != nil {
		return nil, err
	}
	h := newHold()
	var inflight sync.WaitGroup // creates whose outcome is unknown, awaited by cleanup
	fail := func(err error) (*hold, error) {
		close(h.done)
		return nil, errors.Join(err, l.cleanup(id, &inflight))
	}
	// Step 1: create the own node, recovering it by id if the reply is lost.
	node, err := l.createOwn(ctx, h, id, &inflight)
	if err != nil {
		return fail(err)
	}
	var retry retrier
	for {
		// Step 2: list without a watch and find the immediate predecessor.
		pred, pzxid, err := l.predecessor(ctx, id, node)
		if again, err := retry.next(ctx, h, err); again {
			continue
		} else if err != nil {
			return fail(err)
		}
		if pred == "" {
			h.token = pzxid
			close(h.acquired)
			return h, nil
		}
		// Step 3: watch the predecessor only; if it is already gone, re-list at once.
		r, err := existsW(ctx, l.conn, l.dir+"/"+pred)
		if err == nil && !r.ok {
			continue
		} else if transient(err) && !isClosed(h.lost) {
			if err := retry.pause(ctx, err); err != nil {
				return fail(err)
			}
			continue
		} else if err != nil {
			return fail(fmt.Errorf("watch predecessor %s: %w", pred, err))
		}
		retry = retrier{}
		// Step 4: wait for the predecessor, cancellation or session loss.
		if err := h.await(ctx, r.events); err != nil {
			return fail(err)
		}
	}
}

// Unlock releases the lock by deleting the own node. After a loss it still deletes
// what is left and returns an error wrapping ErrLost.
func (l *Lock) Unlock(ctx context.Context) error {
	l.mu.Lock()
	h := l.hold
	l.mu.Unlock()
	if h == nil {
		return ErrNotLocked
	}
	wasLost, ambiguous := isClosed(h.lost), false
	var retry retrier
	for {
		err := remove(ctx, l.conn, h.node)
		if transient(err) {
			// A lost reply leaves the delete maybe applied: a retry's ErrNoNode then means done.
			ambiguous = ambiguous || lostReply(err)
			if err = retry.pause(ctx, err); err == nil {
				continue
			}
		}
		switch {
		case err == nil || errors.Is(err, zk.ErrNoNode) && ambiguous && !wasLost:
			err = nil
		case errors.Is(err, zk.ErrNoNode):
			err = fmt.Errorf("recipe: release %s: the %s was already lost: %w", h.node, l.kind.what, ErrLost)
		default:
			return fmt.Errorf("recipe: release %s: %w (call again to retry)", h.node, err)
		}
		l.mu.Lock()
		l.hold, l.busy = nil, false
		l.mu.Unlock()
		close(h.done)
		return err
	}
}

// Token returns the fencing token of the current hold, or 0 when not held: the
// lock directory's pzxid in the listing that found the own node first, which strictly
// increases from holder to holder (see the package documentation).
func (l *Lock) Token() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hold == nil {
		return 0
	}
	return l.hold.token
}

// Lost returns a channel closed when the holder can no longer be sure it holds the lock.
// When the lock is not held it returns an already closed channel.
//
// The first call of a hold sets an exists watch on the own node (one request, sent in
// the background): a holder that never asks for Lost() does not pay for it.
func (l *Lock) Lost() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hold == nil {
		return closed
	}
	h := l.hold
	h.watchOnce.Do(func() { go h.followOwn(l.conn) })
	return h.lost
}

// Path returns the full path of the own lock node, or "" when not held.
func (l *Lock) Path() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hold == nil {
		return ""
	}
	return l.hold.node
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()
