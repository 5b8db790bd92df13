package realzk

import (
	"os"
	"testing"
)

// TestMain shares one ensemble (Shared) across the package's tests and tears
// it down at the end.
func TestMain(m *testing.M) { os.Exit(RunTests(m)) }
