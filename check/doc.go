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
//     a stopped server starts again;
//   - faults, while the budget lasts: a request lost with its connection, a reply lost with its connection, a
//     dropped connection, a session expiry, the clock jumping past the session timeout (disconnected sessions
//     expire, deadlines pass), a waiter's context cancelled, a server of the ensemble stopping (FaultStopServer:
//     the runs that may inject it have a 3-server model, model.WithEnsemble; a stop drops its clients, the
//     leader's an election drops every client, two stopped leave none serving until one starts again).
//
// After the exploration phase (whose length is itself drawn, so that shrinking shortens runs) the faults stop
// and the schedule is drained fairly, round robin over what can progress. The same decisions always give a
// byte-identical history: a client's events are always placed after the step they react to, however the
// goroutines raced, and the run ends in steps of its own (contexts cancelled, the clients left to finish,
// then each connection closed), each run to quiet before the next. Clients are c1…cK; the connection that
// creates the lock's parent beforehand is not part of the history.
//
// What a pass shows is what was explored: Config.Checks interleavings of K clients with the fault kinds of
// Config.Faults (at most Config.MaxFault faults each, within Config.Steps decisions), every one of them
// satisfying the properties below. It is not a proof for every schedule; make check reports the counts.
//
// # PCT and the portfolio
//
// With Config.Strategy PCT(d) (or -check.strategy=pct -check.pct.depth=d), each run gives the clients random
// priorities and runs the highest-priority one that can move, lowering the moving one's priority at d−1
// random steps: a bug of depth d is found with probability at least 1/(n·k^(d−1)) per run, n threads and k
// steps measured before the search, which Report.PCT states. Its failing runs are reported as found, not
// shrunk. Portfolio(d) (-check.strategy=portfolio) runs the random strategy's runs and PCT's by turns. See
// pct.go and portfolio.go.
//
// # Exhaustive search
//
// With Config.Exhaustive, Run and RunZK enumerate instead of sampling: every sequence of Config.Steps
// scheduler decisions (at most Config.MaxFault of them faults), each followed by the fair drain, for
// Config.Clients clients — stateless model checking, a depth-first search that reruns the schedule from the
// start for each path, with sleep-set partial-order reduction (decisions that commute are explored in one
// order; see exhaustive.go for the independence relation, and Config.NoReduction to turn it off). A pass is
// then a statement about every schedule within the bound; a failure's trace is the shortest failing schedule
// (iterative deepening), in the same trace format, and replays. The Report counts schedules, pruned runs and
// decision points, and says whether the bound was exhausted or Config.Budget stopped the search. Under a
// preemption bound (Config.Preemptions: every complete run that preempts a runnable client at most that many
// times) the search caches states instead of keeping sleep sets: a state is the model's whole state, each
// client's program position (a digest of everything it has observed) and what the properties read across
// clients, so a schedule that reaches an explored state with no more of the bound spent is cut there (see
// statecache.go; Report.States counts them). make prove states the bounds it covers.
//
// # Real go-zookeeper clients
//
// RunZK(t, zkFactory, cfg) checks a lock written against go-zookeeper's *zk.Conn, unmodified: the K clients
// are real go-zookeeper clients on the model's in-process wire (model.Server.Dialer) under the manual
// transport, so every request, reply, watch event and reconnection is a step of the same scheduler, and
// go-zookeeper's own goroutines run on the bubble's virtual time. Everything else — the workload, the
// properties, shrinking, traces (which say "client-kind: go-zookeeper") and replay (ReplayZK, or
// -check.replay) — is shared with Run: only how the clients connect differs. make check runs the recipe and
// every mutant both ways, and go-zookeeper's own zk.Lock over the wire.
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
//   - fencing: every fenced access a client makes during a valid hold, before its Locker's Lost() closes,
//     is admitted by the register. A refused valid holder means its token did not exceed an earlier
//     holder's: tokens that do not grow from one holder to the next (a session id, a per-client counter)
//     would shut the rightful holder out, which the register property alone cannot see.
//   - told-when-lost: a holder whose hold was lost — its session expired, or a node its Lock call created was
//     deleted by another client — must see its Locker's Lost() close within 20s of virtual time (the clock
//     runs only when no step is pending, so by then every message that could tell it has arrived). It is
//     asked after Lock returns, before its critical section, and again before Unlock; the client waits for
//     it meanwhile. A Locker without Lost() (or whose Lost() is nil) is not asked: it is judged as before,
//     by the fence alone.
//   - no-herd: a change wakes at most one waiter (a notification counts when it reaches a client inside a
//     Lock call, for a watch that call set, not on the client's own lock node, and not the client that made
//     the change).
//   - liveness: after the drain, no client is still blocked in Lock. The verdict says, per blocked client,
//     what it waits on: a watch on a node that still exists (and whether its owner is blocked too), a watch
//     on a node already gone, a watch that fired already, or no watch at all.
//   - hygiene: when every client is done, no node a client created is left, ephemeral or persistent, except
//     the recipe's structure: a node something was created under, or a plain create's path asked for more
//     than once (a semaphore's leases and locks directories). Every ephemeral node under the lock's
//     directory counts too.
//
// Each run first draws a seed from its decider (rapid's draw; the exhaustive search draws none, seed 0):
// RandFor's streams are seeded by it and the client's number, so node ids, and the order of names, vary from
// run to run; a semaphore holder's hold time (0 to 8 "cs-hold" steps the scheduler takes) comes from it too.
// The trace records it ("run-seed:"), and replay takes it from there.
//
// # Primitives beyond the mutex
//
// Config.Primitive says what the Factory makes; the scheduler, the faults, shrinking, traces and replay are
// the same for each, and a trace names its primitive in its header ("primitive:", and "leases:" for a
// semaphore; a mutex's trace has neither line, as before primitives).
//
//   - ReadWrite: the Factory's Locker is an RWLocker (NewRWLocker makes one of two sides; RWRecipe is the
//     product's recipe.NewRWLock): Lock and Unlock are the write side, RLocker() the read side. A client is
//     a reader in the rounds where its number plus the round is odd (c2 in round 1, c1 and c3 in round 2).
//     A reader's critical section is one fenced read; a writer's the read-modify-write. The register admits a
//     read whose token is at least every admitted write's, and a write whose token is at least every
//     admitted read's and write's. safety: porcupine checks the history against a read-write lock (a valid
//     writer hold overlaps no other valid hold; readers share). fenced-register and fencing as for the
//     mutex, with those admission rules. no-herd: one write node's deletion may wake every reader behind it;
//     a change is a herd when it wakes more than one waiter and one of them waits for the write side.
//     readers-share is a property of all the runs together: some run must have two valid read holds at once,
//     or the exploration fails (a reader that never overlaps another is a bug, however safe); such a failure
//     has no trace, since no run is a counterexample.
//   - Semaphore: Lock acquires one of Config.Leases leases, Unlock releases it (NewSemaphoreLocker adapts a
//     Leaser such as recipe.Semaphore; SemaphoreRecipe is the product's). Every holder does the
//     read-modify-write on a register that admits every access, since holders share it by design. safety:
//     porcupine checks the history against a counting semaphore (at most Leases valid holds at once).
//     fencing: each lease's token exceeds that of every valid hold that had ended before its Lock call, so
//     that whatever a lease fences can tell a later lease from an earlier one. no-herd as for the mutex: a
//     released lease wakes at most one waiter. Each holder keeps its lease for 0 to 8 "cs-hold" steps drawn
//     from the run's seed, so that Leases+1 holders at once are reachable. leases-share, a property of all
//     the runs like readers-share: some run must have every lease held at once.
//   - Election: Lock campaigns until the client leads, Unlock resigns (NewElectionLocker adapts a Candidate
//     such as recipe.Election; ElectionRecipe is the product's). A leader's critical section is the mutex's
//     fenced read-modify-write. safety: at most one valid leader at a time (the mutex's porcupine model);
//     fenced-register and fencing as for the mutex (every fenced write of a valid leader admitted);
//     token-order: each leader's token above every earlier leader's; no-herd: a leader's end wakes one
//     candidate; liveness: after the faults stop, nobody is left campaigning, so someone led.
//
// The exhaustive mode judges the per-run properties of every primitive, and a reachability property over
// the whole bound when it is exhausted; make prove searches the mutex and its mutants only.
//
// # Traces
//
// A violation fails the test; rapid shrinks it (keeping the same property), and the shrunk run's trace is
// written to Config.TraceDir (zkmodel-traces in the OS's temporary directory by default; -check.traces=DIR
// overrides it): the configuration, the decisions, the step-by-step history
// (client, call, arguments, result, events delivered, faults, virtual time), the final state, and the
// verdict, and a last line "end of trace". ParseTrace reads one back (a malformed file gives its line
// number; a file without its last line is refused as truncated, wherever it was cut) and Replay re-runs its
// decisions. When the run comes out differently — after a fix, say — Replay's error, a *Divergence matching
// ErrDiverged, names the first step that differs and judges the run the schedule gives now: "this schedule
// now passes" (matching ErrNowPasses) or how it fails now. For safety and register violations porcupine's
// HTML visualisation is written beside the trace.
//
// The failure's log line says how to replay it in the same test: go test -run '^TestMyLock$'
// -check.replay=FILE. With that flag, Run replays the trace instead of exploring, prints it, and fails as the
// recorded run did; if the schedule now passes, it says so and the test passes. A trace of another variant
// (another Config.Name) fails the test, naming the variant. The flags -check.traces, -check.n and
// -check.shrink set Config.TraceDir, Checks and Shrink from the command line; rapid's own flags work too.
//
// Bad input is refused before anything runs, with a sentence that says what to do: a nil Factory, one that
// returns a nil Locker (a typed nil, or an adapter around nil, included), negative Config fields, unknown
// fault bits, more than 100 clients or 400 rounds in all, a semaphore with as many leases as clients, a Name
// that cannot name a file (it may hold letters, digits, '-', '_' and '.', and not ".."); ParseTrace refuses a
// truncated or malformed trace with its file and line.
//
// # Mutants
//
// The checker's own tests (make check, make prove) explore the product's recipe and nine deliberately
// broken locks (package internal/mutants, outside the checker's API), one classic bug each (among them a
// persistent record a failed Lock leaves behind: hygiene; a holder never told it lost: told-when-lost),
// then the read-write lock and three broken ones (a reader that waits behind a reader: readers-share; a
// writer that ignores the read nodes below it: safety, or fencing when the reader it jumped holds after it;
// a reader that holds when its watched write node goes without listing again: safety), the semaphore and
// five broken ones (waiters that watch the leases themselves: no-herd; a count from a listing taken before
// the own create: safety or liveness; a wait on an exists watch of the leases directory, which no lease
// fires: liveness; the own lease counted twice: leases-share; the own lease not counted: safety, three
// holders of two leases), and the election and four broken ones (a candidate that leads when the directory
// was empty before its create: safety or token-order; candidates that watch the leader: no-herd; a leader
// that ignores its session's loss: fenced-register or told-when-lost; the session id as token: token-order
// or fencing); `make check` runs them all (TestCheckAll) and requires the recipes to pass and every mutant
// to be caught.
//
// # Real ensembles
//
// History records a run on a real ensemble (package realzk) and checks the same safety properties.
package check
