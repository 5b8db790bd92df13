package check

import "testing"

// inTest runs f as a test of its own and reports whether it passed: the benchmarks need a *testing.T for
// the synctest bubbles their explorations run in.
func inTest(name string, f func(*testing.T)) bool {
	return testing.RunTests(func(string, string) (bool, error) { return true, nil }, []testing.InternalTest{{Name: name, F: f}})
}
