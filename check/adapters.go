package check

import "github.com/zkmodel/zkmodel/internal/lockers"

// This file adapts a user's semaphore or election to Locker, the one interface the checker exercises, as
// NewRWLocker adapts a read-write lock's two sides (the adapters are internal/lockers', which the herd
// experiment and the recipe's benchmarks use too): a Factory (Run) or ZKFactory (RunZK) returns the adapter
// of its implementation, built on the connection it is given, and Config.Primitive says how to judge it.

// Leaser is a counting semaphore as the checker exercises it (Config.Primitive Semaphore): Acquire blocks
// until a lease is held or ctx is done, Release gives the lease back, and Token is the current lease's
// fencing token (0 for none). recipe.Semaphore is one. If it also has `Lost() <-chan struct{}`, the
// workload asks it before each write, as it asks a Locker.
type Leaser = lockers.Leaser

// NewSemaphoreLocker makes a Locker of a semaphore, for a Factory with Config.Primitive Semaphore: Lock
// acquires a lease, Unlock releases it.
func NewSemaphoreLocker(s Leaser) Locker { return lockers.Semaphore(s) }

// Candidate is one participant of a leader election as the checker exercises it (Config.Primitive
// Election): Campaign blocks until it leads or ctx is done, Resign ends the leadership, and Token is the
// current leadership's fencing token (0 for none), which must exceed every earlier leader's.
// recipe.Election is one. If it also has `Lost() <-chan struct{}`, the leader is told of loss through it.
type Candidate = lockers.Candidate

// NewElectionLocker makes a Locker of a candidate, for a Factory with Config.Primitive Election: Lock
// campaigns with value until the candidate leads, Unlock resigns.
func NewElectionLocker(c Candidate, value []byte) Locker { return lockers.Election(c, value) }
