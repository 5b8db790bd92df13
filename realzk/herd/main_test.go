package herd

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/zkmodel/zkmodel/realzk"
)

// TestMain shares one ensemble (realzk.Shared) across the package's tests and
// tears it down at the end.
func TestMain(m *testing.M) { os.Exit(realzk.RunTests(m)) }

// testContext is the test's context, cancelled after limit.
func testContext(t testing.TB, limit time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	t.Cleanup(cancel)
	return ctx
}
