package recipe

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-zookeeper/zk"
)

// WatchConn is a Conn that can also list children with a watch and read a node: the calls
// the semaphore (ChildrenW) and the election (Get) make beyond the mutex's. *zk.Conn and
// *model.Conn satisfy it as they are.
type WatchConn interface {
	Conn
	ChildrenW(path string) ([]string, *zk.Stat, <-chan zk.Event, error)
	Get(path string) ([]byte, *zk.Stat, error)
}

// ErrBadLeases is returned by Acquire when the semaphore was made with fewer than one lease.
var ErrBadLeases = errors.New("recipe: a semaphore needs at least one lease")

// Semaphore is a distributed counting semaphore on one ZooKeeper path: at most N holders of a
// lease at once. It is Curator's InterProcessSemaphoreV2 algorithm, with its node names, so
// the two interoperate:
//
//   - a mutex (a *Lock on path+"/locks") admits one acquirer at a time;
//   - the acquirer holding it creates its lease "_c_<id>-lease-<seq>" under path+"/leases"
//     (ephemeral, recovered by id after a lost reply) and lists the leases with a watch
//     until there are at most N, then releases the mutex and holds its lease;
//   - Release deletes the lease.
//
// Only the mutex holder waits on the lease list, and the others wait in the mutex's queue,
// each behind its predecessor: a released lease wakes one waiter, not all of them. The
// fencing token is the leases directory's pzxid in the listing that granted the lease:
// grants are serialised by the mutex, and each grant's listing shows its own lease, created
// after the previous grant's listing, so tokens strictly increase from grant to grant.
//
// Cancellation, a timeout or a lost session while waiting deletes the own lease and
// releases the mutex, with a fresh context bounded by WithCleanupTimeout. A Semaphore value
// holds at most one lease at a time; use one value per concurrent holder.
type Semaphore struct {
	leases int
	mutex  *Lock // admits one acquirer at a time
	lease  *Lock // the own lease: a Lock whose acquisition is the semaphore's
	conn   WatchConn
}

// NewSemaphore returns a semaphore of the given number of leases on the directory path
// (created on first use if missing). Every process must use the same path and number. The
// options apply to the lease and to the inner mutex, except WithSuspendOnDisconnect, which
// applies to the lease alone.
func NewSemaphore(conn WatchConn, path string, leases int, opts ...Option) *Semaphore {
	s := &Semaphore{leases: leases, conn: conn}
	s.lease = newLock(conn, path+"/leases", leaseKind, opts)
	s.lease.acquireFn = s.acquire
	s.mutex = newLock(conn, path+"/locks", mutexKind, opts)
	s.mutex.sessionEvents = nil // read by the lease alone
	return s
}

// Acquire blocks until a lease is held, ctx is done, or the session is lost. On any failure
// it deletes its own lease and leaves the mutex before returning.
func (s *Semaphore) Acquire(ctx context.Context) error {
	if s.leases < 1 {
		return fmt.Errorf("recipe: semaphore %s with %d leases: %w", s.lease.dir, s.leases, ErrBadLeases)
	}
	return s.lease.Lock(ctx)
}

// Release gives the lease back by deleting its node. After a loss it still deletes what is
// left and returns an error wrapping ErrLost.
func (s *Semaphore) Release(ctx context.Context) error { return s.lease.Unlock(ctx) }

// Token returns the fencing token of the current lease, or 0 when none is held.
func (s *Semaphore) Token() int64 { return s.lease.Token() }

// Lost returns a channel closed when the holder can no longer be sure it holds its lease
// (as Lock.Lost). When no lease is held it returns an already closed channel.
func (s *Semaphore) Lost() <-chan struct{} { return s.lease.Lost() }

// Path returns the full path of the own lease node, or "" when none is held.
func (s *Semaphore) Path() string { return s.lease.Path() }

// acquire is the lease's acquisition: the mutex, the own lease, the wait for room.
func (s *Semaphore) acquire(ctx context.Context) (*hold, error) {
	l := s.lease
	id, err := newID(l.rand)
	if err != nil {
		return nil, err
	}
	h := newHold()
	// The session the mutex is taken on: if it ends (an expiry, after which the connection has a new
	// session), the mutex node is gone and another acquirer gets in and waits on the leases too; with every
	// lease taken by waiters none would ever be released. A waiter whose session changed since it asked for
	// the mutex gives up instead.
	session := s.conn.SessionID()
	if err := s.mutex.Lock(ctx); err != nil {
		close(h.done)
		return nil, err
	}
	var inflight sync.WaitGroup
	fail := func(err error) (*hold, error) {
		close(h.done)
		return nil, errors.Join(err, l.cleanup(id, &inflight), s.leaveMutex())
	}
	node, err := l.createOwn(ctx, h, id, &inflight)
	if err != nil {
		return fail(err)
	}
	var retry retrier
	for {
		// Asked before every listing: a listing on a new session would set a watch beside the new
		// mutex holder's, and a change would wake both.
		if s.conn.SessionID() != session {
			return fail(fmt.Errorf("the session of the admission mutex ended while waiting for a lease: %w", ErrLost))
		}
		r, err := call(ctx, func() (leaseListing, error) { return s.listLeases(ctx, id, node) })
		if again, err := retry.next(ctx, h, err); again {
			continue
		} else if err != nil {
			return fail(err)
		}
		retry = retrier{}
		if r.held <= s.leases {
			h.token = r.pzxid
			break
		}
		if err := h.await(ctx, r.events); err != nil {
			return fail(err)
		}
	}
	if err := s.leaveMutex(); err != nil {
		close(h.done)
		return nil, errors.Join(err, l.cleanup(id, &inflight))
	}
	if s.conn.SessionID() != session {
		// The session ended while the mutex was left, and the lease, an ephemeral node of it, with it.
		close(h.done)
		return nil, errors.Join(fmt.Errorf("recipe: semaphore %s: the session ended as the lease was granted: %w", l.dir, ErrLost), l.cleanup(id, &inflight))
	}
	close(h.acquired)
	return h, nil
}

// leaseListing is one listing of the leases: how many there are (the own one included), the
// directory's pzxid, and the watch on its children.
type leaseListing struct {
	held   int
	pzxid  int64
	events <-chan zk.Event
}

// listLeases lists the leases with a watch, counts them, and deletes stray leases carrying
// the own id (a create whose reply was lost and that was retried). Any other child that is
// not a lease node counts too: the semaphore errs on the side of fewer holders.
func (s *Semaphore) listLeases(ctx context.Context, id, node string) (leaseListing, error) {
	dir := s.lease.dir
	names, stat, events, err := s.conn.ChildrenW(dir)
	if err != nil {
		return leaseListing{}, fmt.Errorf("list %s: %w", dir, err)
	}
	if stat == nil {
		return leaseListing{}, fmt.Errorf("list %s: the reply has no stat", dir)
	}
	own, found, held := node[len(dir)+1:], false, 0
	for _, name := range names {
		nodeID, _, _, ok := parseNode(name)
		switch {
		case name == own:
			found = true
			held++
		case ok && nodeID == id:
			// A duplicate of the own lease: delete it, and list again to see the count without it.
			if err := s.conn.Delete(dir+"/"+name, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return leaseListing{}, fmt.Errorf("delete duplicate lease %s: %w", name, err)
			}
			return s.listLeases(ctx, id, node)
		default:
			held++
		}
	}
	if !found {
		return leaseListing{}, fmt.Errorf("own lease %s is no longer listed: %w", node, ErrLost)
	}
	return leaseListing{held: held, pzxid: stat.Pzxid, events: events}, nil
}

// leaveMutex releases the inner mutex with a fresh bounded context (the caller's may be done).
func (s *Semaphore) leaveMutex() error {
	ctx, cancel := context.WithTimeout(context.Background(), s.lease.cleanupTimeout)
	defer cancel()
	if err := s.mutex.Unlock(ctx); err != nil && !errors.Is(err, ErrNotLocked) {
		return fmt.Errorf("recipe: semaphore %s: leave the admission mutex: %w", s.lease.dir, err)
	}
	return nil
}
