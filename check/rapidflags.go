package check

import (
	"flag"
	"strconv"
	"testing"

	"pgregory.net/rapid"
)

// rapidFlag reports whether the user set a flag (one of rapid's, or of the checker's) on the command line.
func rapidFlag(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

// checkWith runs rapid.Check with the Config's number of checks and seed, unless the user gave rapid's own
// flags, and without rapid's fail files (the checker writes traces instead).
func checkWith(t *testing.T, cfg Config, prop func(*rapid.T)) {
	set := func(name, val string) func() {
		f := flag.Lookup(name)
		if f == nil || rapidFlag(name) {
			return func() {}
		}
		old := f.Value.String()
		_ = f.Value.Set(val)
		return func() { _ = f.Value.Set(old) }
	}
	defer set("rapid.checks", strconv.Itoa(cfg.Checks))()
	if cfg.Seed != 0 {
		defer set("rapid.seed", strconv.FormatUint(cfg.Seed, 10))()
	}
	defer set("rapid.nofailfile", "true")()
	defer set("rapid.shrinktime", cfg.Shrink.String())()
	rapid.Check(t, prop)
}
