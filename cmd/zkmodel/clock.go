package main

import (
	"context"
	"fmt"
	"time"

	"github.com/zkmodel/zkmodel/model"
)

// followWallClock moves srv's virtual clock with the wall clock until ctx ends, so that sessions expire, TTL
// nodes and containers go and ctime/mtime read as on a real server: every quarter tick, at most every 50 ms.
func followWallClock(ctx context.Context, srv *model.Server, tick time.Duration) {
	t := time.NewTicker(min(tick/4, 50*time.Millisecond))
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if elapsed := now.Sub(last); elapsed > 0 {
				srv.Advance(elapsed)
				last = now
			}
		}
	}
}

// The values of serve's -clock flag.
const (
	clockVirtual = "virtual" // only POST /advance moves it (the default): a test decides when time passes
	clockWall    = "wall"    // it follows the wall clock from the wall clock's now, as the stand-in's does
)

// checkClock checks a -clock value.
func checkClock(v string) error {
	switch v {
	case clockVirtual, clockWall:
		return nil
	}
	return fmt.Errorf("%w: -clock=%q: want virtual (only POST /advance moves the clock) or wall (it follows the wall clock, as a real server's)", errUsage, v)
}
