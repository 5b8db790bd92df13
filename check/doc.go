// Package check model-checks ZooKeeper lock implementations: rapid explores interleavings and faults on the
// model's controlled transport, porcupine judges the histories, and every failure becomes a readable trace
// that replays exactly.
//
// # Exploring
//
// Run(t, factory, cfg) starts a model server with the manual transport and K clients (goroutines) that run
// the lock unchanged: each repeatedly locks (odd-numbered clients with a deadline in virtual time), runs a
// critical section — a read and then a write of read+1 on a shared register, both carrying the lock's fencing
// token, the register refusing a token lower than one it has seen — and unlocks. The whole run lives in a
// testing/synctest bubble (via rapid.SyncTest): the scheduler waits until every client is blocked, lists what
// can happen next, and lets rapid choose exactly one thing:
//
//   - progress: the server applies a client's next request; a client receives its next reply or watch event
//     (each session's order is kept); a disconnected client reconnects; a critical section reads or writes;
//   - faults, while the budget lasts: a request lost with its connection, a reply lost with its connection, a
//     dropped connection, a session expiry, the clock jumping past the session timeout (disconnected sessions
//     expire, deadlines pass), a waiter's context cancelled.
//
// After the exploration phase (whose length is itself drawn, so that shrinking shortens runs) the faults stop
// and the schedule is drained fairly, round robin over what can progress. The same decisions always give a
// byte-identical history.
//
// # Properties
//
// Every run is checked for, in this order:
//
//   - safety: porcupine checks that the lock history admits mutual exclusion of valid holds. A hold is valid
//     from Lock's success until Unlock begins or the holder's session ends, whichever comes first: with
//     session expiry in play, no lock can stop a partitioned holder from believing it still holds, so the
//     guarantee that can hold is for valid holds, and fencing covers the rest. A hold whose session ended
//     before its successful reply arrived was never valid. An Unlock that failed may take effect any time
//     after it began.
//   - fenced-register: each critical section must be linearizable as one atomic increment of the register.
//     This is what must hold even across expiry: a stale holder's read or write is refused by its token.
//   - no-herd: a change wakes at most one waiter (a notification counts when it reaches a client inside a
//     Lock call, for a watch that call set, and not the client that made the change).
//   - liveness: after the drain, no client is still blocked in Lock.
//   - hygiene: when every client is done, no lock node is left.
//
// # Traces
//
// A violation fails the test; rapid shrinks it (keeping the same property), and the shrunk run's trace is
// written to Config.TraceDir (traces/ by default): the configuration, the decisions, the step-by-step history
// (client, call, arguments, result, events delivered, faults, virtual time), the final state, and the
// verdict. ParseTrace reads one back (a malformed file gives its line number) and Replay re-runs its decisions,
// failing with ErrDiverged at the first step that differs. For safety and register violations porcupine's
// HTML visualisation is written beside the trace.
//
// # Mutants
//
// Variants lists the product's recipe and six deliberately broken locks, one classic bug each; `make check`
// runs them all (TestCheckAll) and requires the recipe to pass and every mutant to be caught.
//
// # Real ensembles
//
// History records a run on a real ensemble (package realzk) and checks the same safety properties.
package check
