package recipe_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkmodel/zkmodel/internal/lockers"
	"github.com/zkmodel/zkmodel/model"
	"github.com/zkmodel/zkmodel/recipe"
)

// BenchmarkHandoff measures lock handoffs per second on the model with n waiters:
// n+1 sessions contend for one lock, and every Unlock hands it to the next in line.
func BenchmarkHandoff(b *testing.B) {
	for _, n := range []int{2, 10, 100} {
		b.Run(fmt.Sprintf("waiters=%d", n), func(b *testing.B) {
			srv := model.NewServer(model.WithSeed(1))
			var locks []lockers.Locker
			for range n + 1 {
				conn, _, err := srv.Connect(10 * time.Second)
				if err != nil {
					b.Fatal(err)
				}
				defer conn.Close()
				locks = append(locks, recipe.NewLock(conn, "/bench"))
			}
			start := time.Now()
			handoffs := contend(b, locks)
			b.ReportMetric(float64(handoffs)/time.Since(start).Seconds(), "handoffs/s")
		})
	}
}

// BenchmarkHandoffOverTheWire puts the recipe beside go-zookeeper's zk.Lock with the
// same client under both: n+1 go-zookeeper sessions on the model through its
// in-process wire, zero hold time. With the server's cost the same and tiny, what
// differs is each lock's own client-side work per handoff (the recipe: a goroutine per
// call so that a context can end it, protected names, the fencing token).
func BenchmarkHandoffOverTheWire(b *testing.B) {
	kinds := []struct {
		name string
		lock func(conn *zk.Conn) lockers.Locker
	}{
		{"recipe", func(conn *zk.Conn) lockers.Locker { return recipe.NewLock(conn, "/bench") }},
		{"zk.Lock", func(conn *zk.Conn) lockers.Locker {
			return lockers.ZKLock(zk.NewLock(conn, "/bench", zk.WorldACL(zk.PermAll)))
		}},
	}
	for _, n := range []int{2, 10} {
		for _, kind := range kinds {
			b.Run(fmt.Sprintf("lock=%s/waiters=%d", kind.name, n), func(b *testing.B) {
				srv := model.NewServer(model.WithSeed(1))
				var locks []lockers.Locker
				for range n + 1 {
					conn, _, err := model.ConnectZK(srv, 10*time.Second, func(c *zk.Conn) { c.SetLogger(quiet{}) })
					if err != nil {
						b.Fatal(err)
					}
					defer conn.Close()
					locks = append(locks, kind.lock(conn))
				}
				b.ResetTimer()
				start := time.Now()
				handoffs := contend(b, locks)
				b.ReportMetric(float64(handoffs)/time.Since(start).Seconds(), "handoffs/s")
			})
		}
	}
}

// quiet discards go-zookeeper's log lines.
type quiet struct{}

func (quiet) Printf(string, ...any) {}

// contend runs every lockers.Locker in its own goroutine, each locking and unlocking with zero
// hold time, until b.N acquisitions have happened; each goroutine stops after an
// acquisition at or past b.N, so that every waiter, zk.Lock's included, gets out. It
// returns the acquisitions.
func contend(b *testing.B, locks []lockers.Locker) int64 {
	var handoffs atomic.Int64
	var wg sync.WaitGroup
	for _, l := range locks {
		wg.Go(func() {
			ctx := context.Background()
			for {
				if err := l.Lock(ctx); err != nil {
					b.Error(err)
					return
				}
				more := handoffs.Add(1) < int64(b.N)
				if err := l.Unlock(ctx); err != nil {
					b.Error(err)
					return
				}
				if !more || handoffs.Load() >= int64(b.N) {
					return
				}
			}
		})
	}
	wg.Wait()
	return handoffs.Load()
}
