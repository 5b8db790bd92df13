package recipe

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"
)

// ErrNoLeader is returned by Leader when no candidate is campaigning.
var ErrNoLeader = errors.New("recipe: no candidate is campaigning, so there is no leader")

// Election is leader election on one ZooKeeper path: each candidate creates an ephemeral
// sequential node "_c_<id>-latch-<seq>" holding its value (Curator's LeaderLatch names), the
// lowest node leads, and every other candidate watches only its immediate predecessor
// (exists-with-watch, re-listing when it is already gone), so a leader's end wakes one
// candidate. It is a *Lock underneath, with everything the package documentation says of
// one: the own node cleaned up on cancellation, a timeout or a lost reply; Lost(), which
// tells a leader it can no longer be sure it leads before a new leader acts; and a fencing
// token above every earlier leader's, for the leader to hand to whatever it writes to.
type Election struct {
	l    *Lock
	conn WatchConn
}

// NewElection returns an election on the directory path (created on first use if missing).
func NewElection(conn WatchConn, path string, opts ...Option) *Election {
	return &Election{l: newLock(conn, path, electionKind, opts), conn: conn}
}

// Campaign enters the election with value (stored in the own node, for Leader to read) and
// blocks until this candidate leads, ctx is done, or the session is lost. On any failure it
// deletes its own node before returning.
func (e *Election) Campaign(ctx context.Context, value []byte) error {
	return e.l.lockWith(ctx, slices.Clone(value))
}

// Resign ends the leadership by deleting the own node; the next candidate then leads. After a
// loss it still deletes what is left and returns an error wrapping ErrLost.
func (e *Election) Resign(ctx context.Context) error { return e.l.Unlock(ctx) }

// Lost returns a channel closed when the leader can no longer be sure it leads (see Lock.Lost).
// When not leading it returns an already closed channel.
func (e *Election) Lost() <-chan struct{} { return e.l.Lost() }

// Token returns the fencing token of the current leadership, or 0 when not leading.
func (e *Election) Token() int64 { return e.l.Token() }

// Path returns the full path of the own node while leading, or "".
func (e *Election) Path() string { return e.l.Path() }

// Leader returns the value of the candidate that leads now (the lowest election node), as
// seen by this connection's server, or an error wrapping ErrNoLeader when nobody campaigns.
// A node that goes away between the listing and the read makes it list again.
func (e *Election) Leader(ctx context.Context) ([]byte, error) {
	dir := e.l.dir
	if !validDir(dir) {
		return nil, fmt.Errorf("recipe: election %q: %w", dir, ErrBadPath)
	}
	var retry retrier
	for {
		names, _, err := children(ctx, e.conn, dir)
		if errors.Is(err, zk.ErrNoNode) {
			return nil, fmt.Errorf("recipe: election %s: %w", dir, ErrNoLeader)
		}
		var value []byte
		if err == nil {
			first, ok := lowest(names, latchMarker)
			if !ok {
				return nil, fmt.Errorf("recipe: election %s: %w", dir, ErrNoLeader)
			}
			value, err = get(ctx, e.conn, dir+"/"+first)
			if errors.Is(err, zk.ErrNoNode) {
				continue // the leader went away: list again
			}
		}
		if transient(err) {
			if err = retry.pause(ctx, err); err == nil {
				continue
			}
		}
		if err != nil {
			return nil, fmt.Errorf("recipe: election %s: read the leader: %w", dir, err)
		}
		return value, nil
	}
}

// lowest returns the name of the node with marker that comes first in sequence order.
func lowest(names []string, marker string) (string, bool) {
	first, firstSeq, found := "", int32(0), false
	for _, name := range names {
		if _, m, seq, ok := parseNode(name); ok && m == marker && (!found || before(seq, firstSeq)) {
			first, firstSeq, found = name, seq, true
		}
	}
	return first, found
}
