// Package lockers is the one Locker interface of the project and its adapters: go-zookeeper's zk.Lock,
// a counting semaphore and a leader election, each made a Locker. The checker (check.Locker,
// check.NewSemaphoreLocker, check.NewElectionLocker re-export them), the herd experiment (realzk/herd) and
// the recipe's benchmarks drive their locks through it.
package lockers

import (
	"context"
	"slices"

	"github.com/go-zookeeper/zk"
)

// Locker is a lock on one path: Lock blocks until the lock is held or ctx is done, Unlock releases it, and
// Token is the current hold's fencing token (0 for none). A Locker that also has `Lost() <-chan struct{}`
// is told of loss through it.
type Locker interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
	Token() int64
}

// Leaser is a counting semaphore: Acquire blocks until a lease is held or ctx is done, Release gives the
// lease back, and Token is the current lease's fencing token (0 for none). recipe.Semaphore is one.
type Leaser interface {
	Acquire(ctx context.Context) error
	Release(ctx context.Context) error
	Token() int64
}

// Candidate is one participant of a leader election: Campaign blocks until it leads or ctx is done, Resign
// ends the leadership, and Token is the current leadership's fencing token (0 for none). recipe.Election is
// one.
type Candidate interface {
	Campaign(ctx context.Context, value []byte) error
	Resign(ctx context.Context) error
	Token() int64
}

// SemaphoreLocker is a semaphore as a Locker (Semaphore makes one): Lock acquires a lease, Unlock releases
// it, Lost is the semaphore's own Lost() when it has one.
type SemaphoreLocker struct{ Leaser Leaser }

// Semaphore makes a Locker of a semaphore.
func Semaphore(s Leaser) SemaphoreLocker { return SemaphoreLocker{s} }

// Lock acquires a lease.
func (l SemaphoreLocker) Lock(ctx context.Context) error { return l.Leaser.Acquire(ctx) }

// Unlock releases the lease.
func (l SemaphoreLocker) Unlock(ctx context.Context) error { return l.Leaser.Release(ctx) }

// Token is the lease's fencing token.
func (l SemaphoreLocker) Token() int64 { return l.Leaser.Token() }

// Lost is the semaphore's Lost(), or nil (never lost) when it has none.
func (l SemaphoreLocker) Lost() <-chan struct{} { return LostOf(l.Leaser) }

// ElectionLocker is a candidate as a Locker (Election makes one): Lock campaigns with Value until the
// candidate leads, Unlock resigns, Lost is the candidate's own Lost() when it has one.
type ElectionLocker struct {
	Candidate Candidate
	Value     []byte
}

// Election makes a Locker of a candidate that campaigns with (a copy of) value.
func Election(c Candidate, value []byte) ElectionLocker {
	return ElectionLocker{Candidate: c, Value: slices.Clone(value)}
}

// Lock campaigns until the candidate leads.
func (l ElectionLocker) Lock(ctx context.Context) error { return l.Candidate.Campaign(ctx, l.Value) }

// Unlock resigns.
func (l ElectionLocker) Unlock(ctx context.Context) error { return l.Candidate.Resign(ctx) }

// Token is the leadership's fencing token.
func (l ElectionLocker) Token() int64 { return l.Candidate.Token() }

// Lost is the candidate's Lost(), or nil (never lost) when it has none.
func (l ElectionLocker) Lost() <-chan struct{} { return LostOf(l.Candidate) }

// ZKLock makes a Locker of go-zookeeper's *zk.Lock. zk.Lock takes no context: Lock returns only when the
// lock is held or the connection fails (its waiters are drained, not cancelled), and it has no fencing
// token (Token is 0).
func ZKLock(l *zk.Lock) Locker { return zkLock{l} }

type zkLock struct{ l *zk.Lock }

func (z zkLock) Lock(context.Context) error   { return z.l.Lock() }
func (z zkLock) Unlock(context.Context) error { return z.l.Unlock() }
func (z zkLock) Token() int64                 { return 0 }

// LostOf is x's Lost(), or nil (never lost) when it has none.
func LostOf(x any) <-chan struct{} {
	if l, ok := x.(interface{ Lost() <-chan struct{} }); ok {
		return l.Lost()
	}
	return nil
}
