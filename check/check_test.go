package check

import (
	"testing"
)

func TestRecipeQuick(t *testing.T) {
	rep := Run(t, Recipe, Config{Name: "recipe", Faults: AllFaults, Checks: 50, TraceDir: t.TempDir()})
	t.Logf("%+v", rep)
}
