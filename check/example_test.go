package check_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/check"
	"github.com/zkmodel/zkmodel/recipe"
)

// The examples that run the checker need a test's *testing.T (each run is a synctest bubble of the test), so
// they are written as the body of your test, with t standing for its *testing.T; go test compiles them. The
// same calls run in users_test.go (TestRunAcceptsAUsersSemaphore, TestRunZKAcceptsAUsersSemaphoreAndElection).

// ExampleRunZK checks a leader election written against go-zookeeper's *zk.Conn: three real go-zookeeper
// clients campaign on the model over its in-process wire, through every fault kind, and the checker judges
// each interleaving (one leader at a time, growing tokens, fenced writes, liveness, no herd).
func ExampleRunZK() {
	var t *testing.T // your test's: func TestElection(t *testing.T)
	candidate := func(conn *zk.Conn, path string) check.Locker {
		e := recipe.NewElection(conn, path, recipe.WithRandom(check.RandFor(conn))) // your election here
		return check.NewElectionLocker(e, []byte("worker"))
	}
	rep := check.RunZK(t, candidate, check.Config{Name: "my-election", Primitive: check.Election, Faults: check.AllFaults, Checks: 1000})
	fmt.Println(rep) // e.g. "my-election: pass: every property held in 1000 interleavings (9.1s)"
}

// ExampleRun_election checks an election on the model's own clients (recipe.Conn), the fastest way to
// explore: Lock campaigns until the client leads, Unlock resigns.
func ExampleRun_election() {
	var t *testing.T // your test's
	candidate := func(conn recipe.Conn, path string) check.Locker {
		e := recipe.NewElection(conn.(recipe.WatchConn), path, recipe.WithRandom(check.RandFor(conn)))
		return check.NewElectionLocker(e, nil)
	}
	rep := check.Run(t, candidate, check.Config{Name: "my-election", Primitive: check.Election, Faults: check.AllFaults})
	if rep.Failed {
		t.Logf("replay it: go test -run '^%s$' -check.replay=%s", t.Name(), rep.Trace)
	}
}

// ExampleRun_semaphore checks a counting semaphore of two leases among three clients: at most two valid
// holders at once, and every lease held at once in some run (a semaphore that never shares fails).
func ExampleRun_semaphore() {
	var t *testing.T // your test's
	semaphore := func(conn recipe.Conn, path string) check.Locker {
		s := recipe.NewSemaphore(conn.(recipe.WatchConn), path, 2, recipe.WithRandom(check.RandFor(conn)))
		return check.NewSemaphoreLocker(s)
	}
	check.Run(t, semaphore, check.Config{Name: "my-semaphore", Primitive: check.Semaphore, Leases: 2, Clients: 3, Faults: check.AllFaults})
}

// ExampleReplay replays a trace a failure wrote, with the Factory of your lock: after a fix, the replay
// says whether that schedule now passes.
func ExampleReplay() {
	var t *testing.T // your test's
	tr, err := check.ParseTrace("/tmp/zkmodel-traces/my-election-safety.trace")
	if err != nil {
		t.Fatal(err) // a missing, malformed or truncated file, with its line
	}
	text, err := check.Replay(t, check.ElectionRecipe, tr)
	switch {
	case errors.Is(err, check.ErrNowPasses):
		t.Log(err) // "…: this schedule now passes: every property held; the trace recorded a safety violation; …"
	case err != nil:
		t.Fatal(err) // it fails still, or differently: the error says how
	}
	fmt.Print(text) // the replayed run's trace
}

// ExampleParseTrace reads a trace of the regression corpus: its variant, what it found, and the decisions
// that replay it.
func ExampleParseTrace() {
	tr, err := check.ParseTrace("../traces/mutant-b-ignore-gone-liveness.trace")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(tr.Config.Name, "on", tr.ClientKind, "clients:", tr.Property)
	fmt.Println("decisions:", tr.Decisions)
	// Output:
	// mutant-b-ignore-gone on model clients: liveness
	// decisions: [expire c1 expire c2]
}

// ExampleReport_String shows a Report as %v prints it: one line.
func ExampleReport_String() {
	rep := check.Report{Variant: "my-lock", Runs: 57, Failed: true, Property: "liveness", Trace: "/tmp/zkmodel-traces/my-lock-liveness.trace"}
	fmt.Println(rep)
	// Output:
	// my-lock: FAIL: liveness violated in 57 interleavings; trace /tmp/zkmodel-traces/my-lock-liveness.trace
}
