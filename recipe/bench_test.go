package recipe_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkmodel/zkmodel/model"
	"github.com/zkmodel/zkmodel/recipe"
)

// BenchmarkHandoff measures lock handoffs per second on the model with n waiters:
// n+1 sessions contend for one lock, and every Unlock hands it to the next in line.
func BenchmarkHandoff(b *testing.B) {
	for _, n := range []int{2, 10, 100} {
		b.Run(fmt.Sprintf("waiters=%d", n), func(b *testing.B) {
			srv := model.NewServer(model.WithSeed(1))
			var handoffs atomic.Int64
			var wg sync.WaitGroup
			start := time.Now()
			for range n + 1 {
				conn, _, err := srv.Connect(10 * time.Second)
				if err != nil {
					b.Fatal(err)
				}
				defer conn.Close()
				l := recipe.NewLock(conn, "/bench")
				wg.Add(1)
				go func() {
					defer wg.Done()
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
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(handoffs.Load())/time.Since(start).Seconds(), "handoffs/s")
		})
	}
}
