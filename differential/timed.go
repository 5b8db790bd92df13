package differential

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"pgregory.net/rapid"
)

// A timed sequence (GenConfig.Timed) creates TTL nodes and containers and lets time pass. A real server's
// container manager runs on its wall clock, at a phase nobody knows; the sequences are laid out so that what
// it deletes, and when, is determined all the same:
//
//   - TTLs are tinyTTL, far below one check interval, or hugeTTL, an hour: a node expires at the first pass
//     after its creation or never. A createTTL with tinyTTL always lets time pass at once (Op.Pass): until the
//     node is gone no other op runs. (No watch can fire for its deletion: a watch set before the create was
//     spent by the create itself.)
//   - containers live only at containerPaths, and nothing under them is ever deleted but by the container
//     manager: deletes, multis' deletes and ephemerals (which a close deletes) keep off them. A container thus
//     becomes deletable only when the manager deletes its last child, while time passes.
//
// Letting time pass (Side.Pass) moves a model's virtual clock by passIntervals check intervals, and waits on a
// real server until nothing deletable is left (the expired TTL nodes gone, no container that has had children
// and has none): one level of containers goes per pass of the manager, and the deepest chain here is
// c/d/t, c/d, c. (A server's stat shows a container's ephemeralOwner as 0, so the runner keeps the paths of
// the containers the sequence created.)

// The TTLs of timed sequences' createTTL ops.
const (
	tinyTTL = time.Millisecond
	hugeTTL = time.Hour
)

// passIntervals is how many container check intervals a model side's clock moves when time passes: more than
// the longest chain of deletions needs.
const passIntervals = 10

var (
	// containerPaths are where containers are created (c twice as often: c/d needs it); nothing below them is
	// deleted by a sequence.
	containerPaths = []string{"c", "c/d", "c"}
	// ttlPaths are where TTL nodes are created (the ones ending in "-" sequential ones), mostly in containers.
	ttlPaths = []string{"c/t", "c/d/t", "t", "c/s-", "c/d/t", "a/t", "c/t", "s-"}
	// timedReadPaths are read, watched and set.
	timedReadPaths = []string{"", "c", "c/d", "c/t", "c/d/t", "t", "a", "a/t", "c", "c/d", "c/p", "c/s-0000000001", "s-0000000001", "e"}
	// timedDeletePaths are deleted: none below a container.
	timedDeletePaths = []string{"a", "a/t", "t", "e", "c", "s-0000000001", ""}
	// freePaths take persistent, ephemeral and sequential nodes; "c/p", under a container, only persistent ones.
	freePaths = []string{"a", "e", "a/t", "t", "s-"}
	// ttlFlags are createTTL's modes: the two TTL modes, and, drawn least, ones the client refuses.
	ttlFlags = []int32{zk.FlagTTL, zk.FlagPersistentSequentialWithTTL, zk.FlagTTL, zk.FlagPersistentSequentialWithTTL, zk.FlagPersistent, 7}
)

// timedWeights are the kinds of a timed sequence's ops.
var timedWeights = []kindWeight{
	{Create, 8}, {Get, 7}, {Exists, 7}, {Children, 7}, {Set, 4}, {Delete, 5}, {Multi, 3}, {Sync, 1}, {Close, 2},
	{Sever, 1}, {PassTime, 3}, {CreateTTL, 14}, {CreateContainer, 14},
}

// genTimedOp draws an op of a timed sequence.
func genTimedOp(t *rapid.T, sessions int, closed map[int]bool, cfg GenConfig) Op {
	op := Op{Kind: drawKind(t, timedWeights, cfg), Session: drawSession(t, sessions, closed)}
	switch op.Kind {
	case Create:
		genTimedCreate(t, &op)
	case CreateContainer:
		op.Path = rapid.SampledFrom(containerPaths).Draw(t, "path")
		op.Flags = zk.FlagContainer
		if rapid.IntRange(0, 7).Draw(t, "bad-flags") == 0 {
			op.Flags = zk.FlagPersistent // the client refuses it
		}
		op.Data = rapid.SampledFrom(dataPool).Draw(t, "data")
	case CreateTTL:
		op.Flags = rapid.SampledFrom(ttlFlags).Draw(t, "flags")
		op.Path = rapid.SampledFrom(ttlPaths).Draw(t, "path")
		op.Data = rapid.SampledFrom(dataPool).Draw(t, "data")
		switch rapid.IntRange(0, 9).Draw(t, "ttl") {
		case 0:
			op.TTL = 0 // bad arguments
		case 1, 2, 3, 4:
			op.TTL, op.Pass = tinyTTL, true
		default:
			op.TTL = hugeTTL
		}
	case Delete:
		op.Path = rapid.SampledFrom(timedDeletePaths).Draw(t, "path")
		op.Version = rapid.SampledFrom(versions).Draw(t, "version")
	case Set:
		op.Path = rapid.SampledFrom(timedReadPaths).Draw(t, "path")
		op.Version = rapid.SampledFrom(versions).Draw(t, "version")
		op.Data = rapid.SampledFrom(dataPool).Draw(t, "data")
	case Exists, Get, Children:
		op.Watch = rapid.IntRange(0, 3).Draw(t, "watch") > 0
		op.Path = rapid.SampledFrom(timedReadPaths).Draw(t, "path")
	case Sync:
		op.Path = rapid.SampledFrom(timedReadPaths).Draw(t, "path")
	case Multi:
		n := rapid.IntRange(1, 3).Draw(t, "multi-ops")
		for i := 0; i < n; i++ {
			sub := Op{Kind: rapid.SampledFrom([]Kind{Create, Delete, Set, Check}).Draw(t, "multi-kind")}
			switch sub.Kind {
			case Create:
				genTimedCreate(t, &sub)
			case Delete:
				sub.Path = rapid.SampledFrom(timedDeletePaths).Draw(t, "path")
				sub.Version = rapid.SampledFrom(versions).Draw(t, "version")
			default:
				sub.Path = rapid.SampledFrom(timedReadPaths).Draw(t, "path")
				sub.Version = rapid.SampledFrom(versions).Draw(t, "version")
				if sub.Kind == Set {
					sub.Data = rapid.SampledFrom(dataPool).Draw(t, "data")
				}
			}
			op.Ops = append(op.Ops, sub)
		}
	}
	return op
}

// genTimedCreate fills in a plain create of a timed sequence: a container (go-zookeeper's Create sends the
// container mode as given) at containerPaths, a persistent node under a container, any mode elsewhere but a
// TTL one (which a plain create cannot carry: bad arguments), drawn least.
func genTimedCreate(t *rapid.T, op *Op) {
	op.Data = rapid.SampledFrom(dataPool).Draw(t, "data")
	switch rapid.IntRange(0, 9).Draw(t, "where") {
	case 0, 1:
		op.Path, op.Flags = rapid.SampledFrom(containerPaths).Draw(t, "path"), zk.FlagContainer
	case 2:
		op.Path, op.Flags = "c/p", zk.FlagPersistent
	case 3:
		op.Path, op.Flags = rapid.SampledFrom(freePaths).Draw(t, "path"), zk.FlagTTL
	default:
		op.Path = rapid.SampledFrom(freePaths).Draw(t, "path")
		op.Flags = rapid.SampledFrom([]int32{zk.FlagPersistent, zk.FlagEphemeral, zk.FlagSequence, zk.FlagEphemeralSequential}).Draw(t, "flags")
	}
}

// quiet reports whether a real server's container manager has nothing left to delete: none of expiring (TTL
// nodes that expire at once) exists, and none of containers has had children and has none. The nodes are
// looked at deepest first, each with one getChildren (its children and stat at one time): a deletion the
// manager makes meanwhile can only make a shallower node deletable, which is looked at later.
func quiet(s Session, expiring, containers []string) (bool, error) {
	type candidate struct {
		path string
		ttl  bool
	}
	var all []candidate
	for _, p := range expiring {
		all = append(all, candidate{p, true})
	}
	for _, p := range containers {
		all = append(all, candidate{p, false})
	}
	slices.SortStableFunc(all, func(a, b candidate) int {
		return strings.Count(b.path, "/") - strings.Count(a.path, "/")
	})
	for _, c := range all {
		children, st, err := s.Children(c.path)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("children of %s: %w", c.path, err)
		}
		if c.ttl || st.Cversion > 0 && len(children) == 0 {
			return false, nil
		}
	}
	return true, nil
}

// waitQuiet lets one check interval pass, then polls until quiet, for at most passIntervals*3 intervals (then
// it returns: what the manager failed to delete shows in the comparison).
func waitQuiet(ctx context.Context, s Session, expiring, containers []string, interval time.Duration) error {
	deadline := time.Now().Add(passIntervals * 3 * interval)
	wait := interval
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("letting time pass: %w", ctx.Err())
		case <-time.After(wait):
		}
		ok, err := quiet(s, expiring, containers)
		if ok || err != nil || time.Now().After(deadline) {
			return err
		}
		wait = interval / 5
	}
}
