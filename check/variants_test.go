package check

import (
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/internal/lockers"
	"github.com/zkmodel/zkmodel/internal/mutants"
	"github.com/zkmodel/zkmodel/recipe"
)

// The variants make check and make prove explore: the product's recipes, and the mutants of
// internal/mutants, each with the exploration it gets. They are the checker's own fixtures, in its tests.

// Variant is a named lock implementation the checker knows: the product's recipe, and the mutants —
// deliberately broken locks, each with one classic bug — that demonstrate the checker catches them.
type Variant struct {
	Name    string
	Bug     string  // what is wrong with it ("" for the recipe)
	Expect  string  // the properties that may catch it, "|"-separated ("" for the recipe: it must pass)
	Factory Factory // makes it on the model's own clients
	// ZKFactory, when set, makes it on real go-zookeeper clients over the model's wire instead (RunZK).
	ZKFactory ZKFactory
	Config    Config // how to explore it (Name, Faults and the like filled in)
}

// clients returns the kind of client the variant runs on.
func (v Variant) clients() clients {
	if v.ZKFactory != nil {
		return wireClients(v.ZKFactory)
	}
	return modelClients(v.Factory)
}

// overWire runs a variant on go-zookeeper clients over the model's wire, named with a "-wire" suffix.
func overWire(v Variant) Variant {
	f := v.Factory
	v.Name += "-wire"
	v.Config.Name = v.Name
	v.Factory, v.ZKFactory = nil, func(conn *zk.Conn, path string) Locker { return f(conn, path) }
	return v
}

// Variants returns the recipe and the nine mutants, on the model's own clients and on go-zookeeper's over
// the wire, and go-zookeeper's own zk.Lock; then the read-write lock and its mutants; each with the
// exploration it gets in `make check`; then the semaphore and its mutants, and the election and its.
func Variants() []Variant {
	v := mutantsOf(Mutex, func(conn recipe.Conn, path string, bugs mutants.Bugs) Locker {
		return mutants.NewMutex(conn, path, bugs, RandFor(conn))
	})
	model := []Variant{
		{Name: "recipe", Factory: Recipe, Config: Config{Name: "recipe", Faults: AllFaults}},
		withClients(5, Variant{Name: "recipe-5-clients", Factory: Recipe, Config: Config{Name: "recipe-5-clients", Faults: AllFaults}}),
		v("mutant-control", "", "", 0, AllFaults),
		v("mutant-a-watch-parent", "watches the lock's parent (every child change) instead of its predecessor", "no-herd", mutants.WatchParent, AllFaults),
		v("mutant-b-ignore-gone", "ignores \"predecessor already gone\" from exists-with-watch and waits anyway", "liveness", mutants.IgnoreGone, AllFaults),
		v("mutant-c-plain-create", "creates a plain ephemeral-sequential node and retries it after a lost reply", "liveness|hygiene", mutants.PlainCreate, FaultLoseReply),
		withClients(2, v("mutant-d-order-by-name", "orders lock nodes by their full name instead of their sequence number", "safety|fencing", mutants.OrderByName, 0)),
		v("mutant-e-leave-on-cancel", "leaves its node behind when Lock is cancelled", "liveness|hygiene", mutants.LeaveOnCancel, FaultCancel),
		v("mutant-f-ignore-loss", "the holder ignores session loss and writes without its fencing token", "fenced-register|told-when-lost", mutants.IgnoreLoss, FaultExpire|FaultDisconnect|FaultAdvance),
		v("mutant-g-session-token", "uses its session id as the fencing token, which does not grow from one holder to the next", "fencing", mutants.SessionToken, 0),
		// Before hygiene counted persistent nodes, this one passed: its leftover is no session's.
		v("mutant-h-keep-record", "keeps a persistent record of each Lock call beside its node, which Unlock deletes and a Lock that gives up leaves behind", "hygiene", mutants.KeepRecord, FaultCancel),
		// Before told-when-lost, this one passed: the fence refuses the stale holder it never tells.
		v("mutant-i-never-told", "a holder is never told it lost: Lost() never closes after its session expired, though its token still fences it", "told-when-lost", mutants.NeverTold, FaultExpire|FaultDisconnect|FaultAdvance),
	}
	all := append([]Variant(nil), model...)
	for _, v := range model {
		if v.Name != "recipe-5-clients" {
			all = append(all, overWire(v))
		}
	}
	all = append(all, ZKLockVariant())
	all = append(all, rwVariants()...)
	all = append(all, semaphoreVariants()...)
	return append(all, electionVariants()...)
}

// mutantsOf returns the maker of a primitive's mutant variants: each is newLock's compact recipe with the bugs,
// explored with the fault kinds given.
func mutantsOf(prim Primitive, newLock func(conn recipe.Conn, path string, bugs mutants.Bugs) Locker) func(name, bug, expect string, bugs mutants.Bugs, faults Fault) Variant {
	return func(name, bug, expect string, bugs mutants.Bugs, faults Fault) Variant {
		return Variant{Name: name, Bug: bug, Expect: expect,
			Factory: func(conn recipe.Conn, path string) Locker { return newLock(conn, path, bugs) },
			Config:  Config{Name: name, Faults: faults, Primitive: prim}}
	}
}

// rwVariants are the read-write lock (recipe.NewRWLock) and the mutants of the compact read-write lock.
// Readers are clients whose number plus the round is odd: c2 in round 1, c1 and c3 in round 2.
func rwVariants() []Variant {
	v := mutantsOf(ReadWrite, func(conn recipe.Conn, path string, bugs mutants.Bugs) Locker {
		return NewRWLocker(rwMutant(mutants.NewRW(conn, path, bugs, RandFor(conn))))
	})
	recipe := Variant{Name: "rwlock", Factory: RWRecipe, Config: Config{Name: "rwlock", Faults: AllFaults, Primitive: ReadWrite}}
	return []Variant{
		recipe,
		overWire(recipe),
		v("rwlock-mutant-control", "", "", 0, AllFaults),
		v("rwlock-mutant-a-reader-waits-on-reader", "a reader waits behind its immediate predecessor even when that is a reader", "readers-share", mutants.ReaderWaitsOnReader, AllFaults),
		withClients(2, v("rwlock-mutant-b-writer-ignores-readers", "a writer waits behind earlier write nodes only, not the read nodes below it", "safety|fencing", mutants.WriterIgnoresReaders, 0)),
		v("rwlock-mutant-c-reader-assumes-held", "a reader whose watched write node goes holds without listing again", "safety|fencing", mutants.ReaderAssumesHeld, FaultCancel|FaultAdvance|FaultExpire),
	}
}

// ZKLockVariant is go-zookeeper's own zk.Lock, unmodified, on go-zookeeper clients over the wire. Its Lock
// takes no context, so cancellation cannot be injected (FaultCancel is off and no Lock has a deadline); it
// has no fencing token (0: the register admits everything, and mutual exclusion alone must protect it).
// README says what the checker finds in it.
func ZKLockVariant() Variant {
	const name = "zk-lock"
	return Variant{Name: name, Bug: "go-zookeeper's zk.Lock, unmodified", Expect: zkLockFinding,
		ZKFactory: func(conn *zk.Conn, path string) Locker {
			return lockers.ZKLock(zk.NewLock(conn, path, zk.WorldACL(zk.PermAll)))
		},
		Config: Config{Name: name, Faults: AllFaults &^ FaultCancel, Deadline: -1}}
}

// zkLockFinding is what the checker finds in zk.Lock: the properties its shrunk trace may break. Which one
// an exploration meets first depends on its seed (measured: fenced-register in 4 of 28 seeds): zk.Lock
// cannot tell a holder that its session expired, so a holder whose session ended keeps writing while the
// next one holds the lock, and the register, which zk.Lock gives no token to fence with, loses an update.
const zkLockFinding = "liveness|hygiene|fenced-register"

// withClients sets how many clients contend for a variant. Two clients leave no room for a herd, so a
// mutant that breaks both mutual exclusion and the herd property is shown breaking the former.
func withClients(k int, v Variant) Variant {
	v.Config.Clients = k
	return v
}

// VariantByName finds a variant of Variants.
func VariantByName(name string) (Variant, error) {
	var names []string
	for _, v := range Variants() {
		if v.Name == name {
			return v, nil
		}
		names = append(names, v.Name)
	}
	return Variant{}, fmt.Errorf("check: no variant %q (known: %s)", name, strings.Join(names, ", "))
}

// semaphoreVariants are the semaphore (recipe.NewSemaphore) and the mutants of the compact semaphore. Two
// leases for three clients show the leases shared; one lease is where waiting is explored: with two, a
// third contender seldom meets both holders still holding (each holder's critical section is a few steps,
// an acquisition through the admission mutex many more).
func semaphoreVariants() []Variant {
	v := func(name, bug, expect string, leases int, bugs mutants.Bugs, faults Fault) Variant {
		return Variant{Name: name, Bug: bug, Expect: expect,
			Factory: func(conn recipe.Conn, path string) Locker {
				return mutants.NewSemaphore(conn, path, leases, bugs, RandFor(conn))
			},
			Config: Config{Name: name, Faults: faults, Primitive: Semaphore, Leases: leases}}
	}
	rec := func(name string, leases int) Variant {
		return Variant{Name: name, Factory: semaphoreRecipe(leases), Config: Config{Name: name, Faults: AllFaults, Primitive: Semaphore, Leases: leases}}
	}
	return []Variant{
		rec("semaphore", semaphoreLeases),
		rec("semaphore-1-lease", 1),
		overWire(rec("semaphore", semaphoreLeases)),
		v("semaphore-mutant-control", "", "", semaphoreLeases, 0, AllFaults),
		v("semaphore-mutant-control-1-lease", "", "", 1, 0, AllFaults),
		// Four clients: two waiters, for one change to wake.
		withClients(4, v("semaphore-mutant-a-waiters-watch-leases", "a waiter leaves the admission mutex and watches the leases directory itself, so every change wakes every waiter (and waiters holding every lease wait for each other)", "no-herd|liveness", 1, mutants.WaitOutsideMutex, 0)),
		v("semaphore-mutant-b-count-before-create", "counts the leases from a listing taken before its own create, outside the admission mutex: a lease taken since is missed (a holder too many), one released since is counted (it waits for a change that never comes)", "safety|liveness", semaphoreLeases, mutants.CountBeforeCreate, 0),
		v("semaphore-mutant-c-exists-watch", "waits for a release on an exists watch of the leases directory, which a lease's deletion never fires", "liveness", 1, mutants.WatchLeasesExists, 0),
		v("semaphore-mutant-d-count-own-twice", "counts its own lease twice, so it never lets all the leases be held", "leases-share", semaphoreLeases, mutants.CountOwnTwice, AllFaults),
		// Before holders held for steps drawn from the run's seed, three holders at once never happened here.
		v("semaphore-mutant-e-skip-own-lease", "counts the leases without its own, so it lets one holder too many in", "safety", semaphoreLeases, mutants.SkipOwnLease, 0),
	}
}

// electionVariants are the election (recipe.NewElection) and the mutants of the compact election.
func electionVariants() []Variant {
	v := mutantsOf(Election, func(conn recipe.Conn, path string, bugs mutants.Bugs) Locker {
		return mutants.NewElection(conn, path, bugs, RandFor(conn))
	})
	rec := Variant{Name: "election", Factory: ElectionRecipe, Config: Config{Name: "election", Faults: AllFaults, Primitive: Election}}
	return []Variant{
		rec,
		overWire(rec),
		v("election-mutant-control", "", "", 0, AllFaults),
		v("election-mutant-a-lead-on-empty-listing", "leads when the directory was empty when it looked, before its own create, without confirming that its node is the lowest: two leaders at once, or one after a later one with a lower token", "safety|token-order", mutants.LeadOnEmptyListing, 0),
		v("election-mutant-b-watch-leader", "a candidate watches the lowest node, the leader, instead of its predecessor, so a leader's end wakes every candidate", "no-herd", mutants.WatchLowest, 0),
		v("election-mutant-c-ignore-loss", "the leader ignores session loss and writes without its fencing token, after its node is gone", "fenced-register|told-when-lost", mutants.IgnoreLoss, FaultExpire|FaultDisconnect|FaultAdvance),
		v("election-mutant-d-session-token", "uses its session id as the fencing token, which does not grow from one leader to the next", "token-order|fencing", mutants.SessionToken, 0),
	}
}

// rwMutant is the compact read-write lock's two sides as NewRWLocker takes them.
func rwMutant(write, read *mutants.Mutant) (Locker, Locker) { return write, read }
