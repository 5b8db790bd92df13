package check

import (
	"context"
	"slices"
)

// This file adapts a user's semaphore or election to Locker, the one interface the checker exercises, as
// NewRWLocker adapts a read-write lock's two sides: a Factory (Run) or ZKFactory (RunZK) returns the adapter
// of its implementation, built on the connection it is given, and Config.Primitive says how to judge it.

// Leaser is a counting semaphore as the checker exercises it (Config.Primitive Semaphore): Acquire blocks
// until a lease is held or ctx is done, Release gives the lease back, and Token is the current lease's
// fencing token (0 for none). recipe.Semaphore is one. If it also has `Lost() <-chan struct{}`, the
// workload asks it before each write, as it asks a Locker.
type Leaser interface {
	Acquire(ctx context.Context) error
	Release(ctx context.Context) error
	Token() int64
}

// NewSemaphoreLocker makes a Locker of a semaphore, for a Factory with Config.Primitive Semaphore: Lock
// acquires a lease, Unlock releases it.
func NewSemaphoreLocker(s Leaser) Locker { return semaphoreLocker{s} }

type semaphoreLocker struct{ s Leaser }

func (l semaphoreLocker) Lock(ctx context.Context) error   { return l.s.Acquire(ctx) }
func (l semaphoreLocker) Unlock(ctx context.Context) error { return l.s.Release(ctx) }
func (l semaphoreLocker) Token() int64                     { return l.s.Token() }
func (l semaphoreLocker) Lost() <-chan struct{}            { return lostOf(l.s) }

// Candidate is one participant of a leader election as the checker exercises it (Config.Primitive
// Election): Campaign blocks until it leads or ctx is done, Resign ends the leadership, and Token is the
// current leadership's fencing token (0 for none), which must exceed every earlier leader's.
// recipe.Election is one. If it also has `Lost() <-chan struct{}`, the leader is told of loss through it.
type Candidate interface {
	Campaign(ctx context.Context, value []byte) error
	Resign(ctx context.Context) error
	Token() int64
}

// NewElectionLocker makes a Locker of a candidate, for a Factory with Config.Primitive Election: Lock
// campaigns with value until the candidate leads, Unlock resigns.
func NewElectionLocker(c Candidate, value []byte) Locker {
	return electionLocker{c: c, value: slices.Clone(value)}
}

type electionLocker struct {
	c     Candidate
	value []byte
}

func (l electionLocker) Lock(ctx context.Context) error   { return l.c.Campaign(ctx, l.value) }
func (l electionLocker) Unlock(ctx context.Context) error { return l.c.Resign(ctx) }
func (l electionLocker) Token() int64                     { return l.c.Token() }
func (l electionLocker) Lost() <-chan struct{}            { return lostOf(l.c) }

// lostOf is x's Lost(), or nil (never lost) when it has none.
func lostOf(x any) <-chan struct{} {
	if l, ok := x.(interface{ Lost() <-chan struct{} }); ok {
		return l.Lost()
	}
	return nil
}
