package check

import (
	"context"

	"github.com/zkmodel/zkmodel/internal/lockers"
	"github.com/zkmodel/zkmodel/recipe"
)

// The Factories of the product's recipes, with deterministic node ids.

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
func (l rwLocker) Lost() <-chan struct{} { return lockers.LostOf(l.write) }

// semaphoreLeases is the number of leases of the semaphore variants: Config.Leases' default.
const semaphoreLeases = 2

// SemaphoreRecipe is the Factory of the product's counting semaphore (recipe.NewSemaphore) with 2 leases,
// Config.Leases' default, and deterministic node ids, for Config.Primitive Semaphore: Lock acquires a lease,
// Unlock releases it. The connection must have ChildrenW and Get (recipe.WatchConn), as *model.Conn and
// *zk.Conn do; on any other it returns nil, which the checker refuses with a sentence.
func SemaphoreRecipe(conn recipe.Conn, path string) Locker {
	return semaphoreRecipe(semaphoreLeases)(conn, path)
}

// semaphoreRecipe is the recipe's semaphore of n leases.
func semaphoreRecipe(n int) Factory {
	return func(conn recipe.Conn, path string) Locker {
		wc, ok := conn.(recipe.WatchConn)
		if !ok {
			return nil
		}
		return NewSemaphoreLocker(recipe.NewSemaphore(wc, path, n, recipe.WithRandom(RandFor(conn))))
	}
}

// ElectionRecipe is the Factory of the product's leader election (recipe.NewElection) with deterministic
// node ids, for Config.Primitive Election: Lock campaigns until the client leads, Unlock resigns. The
// connection must have ChildrenW and Get (recipe.WatchConn), as *model.Conn and *zk.Conn do; on any other
// it returns nil, which the checker refuses with a sentence.
func ElectionRecipe(conn recipe.Conn, path string) Locker {
	wc, ok := conn.(recipe.WatchConn)
	if !ok {
		return nil
	}
	return NewElectionLocker(recipe.NewElection(wc, path, recipe.WithRandom(RandFor(conn))), nil)
}
