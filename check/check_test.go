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
