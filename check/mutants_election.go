package check

import (
	"github.com/zkmodel/zkmodel/recipe"
)

// This file is the election's side of Variants: the product's recipe.NewElection, and the compact lock of
// mutants.go with LeaderLatch's node names as an election — correct with no mutations, broken in one known
// way with each.

// The election's bugs (the compact lock's, as an election).
const (
	leadOnEmptyListing mutation = 1 << (iota + 14) // leads when the directory was empty before its create, unconfirmed
	watchLowest                                    // a candidate watches the lowest node, the leader, not its predecessor
)

// latchMarker is in an election node's name after the id, as in Curator's LeaderLatch and the recipe's.
const latchMarker = "-latch-"

// ElectionRecipe is the Factory of the product's leader election (recipe.NewElection) with deterministic
// node ids, for Config.Primitive Election: Lock campaigns until the client leads, Unlock resigns. The
// connection must have ChildrenW and Get (recipe.WatchConn), as *model.Conn and *zk.Conn do; on any other
// it returns nil, which the checker refuses with a sentence.
func ElectionRecipe(conn recipe.Conn, path string) Locker {
	wc, ok := conn.(recipe.WatchConn)
	if !ok {
		return nil
	}
	return NewElectionLocker(recipe.NewElection(wc, path, recipe.WithRandom(RandFor(conn))), nil)
}

// newElectionMutant is the compact lock as an election: its nodes named as LeaderLatch's.
func newElectionMutant(conn recipe.Conn, dir string, bugs mutation) *mutant {
	m := newMutant(conn, dir, bugs)
	m.marker = latchMarker
	return m
}

// electionVariants are the election (recipe.NewElection) and the mutants of the compact election.
func electionVariants() []Variant {
	v := mutantsOf(Election, func(conn recipe.Conn, path string, bugs mutation) Locker { return newElectionMutant(conn, path, bugs) })
	rec := Variant{Name: "election", Factory: ElectionRecipe, Config: Config{Name: "election", Faults: AllFaults, Primitive: Election}}
	return []Variant{
		rec,
		overWire(rec),
		v("election-mutant-control", "", "", 0, AllFaults),
		v("election-mutant-a-lead-on-empty-listing", "leads when the directory was empty when it looked, before its own create, without confirming that its node is the lowest: two leaders at once, or one after a later one with a lower token", "safety|token-order", leadOnEmptyListing, 0),
		v("election-mutant-b-watch-leader", "a candidate watches the lowest node, the leader, instead of its predecessor, so a leader's end wakes every candidate", "no-herd", watchLowest, 0),
		v("election-mutant-c-ignore-loss", "the leader ignores session loss and writes without its fencing token, after its node is gone", "fenced-register", ignoreLoss, FaultExpire|FaultDisconnect|FaultAdvance),
		v("election-mutant-d-session-token", "uses its session id as the fencing token, which does not grow from one leader to the next", "token-order|fencing", sessionToken, 0),
	}
}
