package check

import (
	"os"
	"testing"
)

func TestVariantQuick(t *testing.T) {
	name := os.Getenv("V")
	v, err := VariantByName(name)
	if err != nil {
		t.Fatal(err)
	}
	cfg := v.Config
	cfg.Checks = 2000
	cfg.TraceDir = "/tmp/traces"
	rep := Run(t, v.Factory, cfg)
	t.Logf("%s: runs=%d failed=%v prop=%s first=%s elapsed=%s decisions=%d trace=%s", name, rep.Runs, rep.Failed, rep.Property, rep.FirstFail, rep.Elapsed, rep.Decisions, rep.Trace)
}

func TestHistoryCatchesOverlap(t *testing.T) {
	h := NewHistory()
	h.LockCalled(1)
	h.LockReturned(1, 10, 100, nil)
	h.LockCalled(2)
	h.LockReturned(2, 11, 101, nil)
	if p, _ := h.Check(); p != "safety" {
		t.Fatalf("overlapping holds: got %q, want safety", p)
	}
}
