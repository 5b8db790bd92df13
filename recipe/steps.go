package recipe

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// Lock node names are "_c_<id><marker><sequence>", the protected form go-zookeeper's
// CreateProtectedEphemeralSequential and Curator produce, so the locks interoperate: the
// mutex's marker is "-lock-" (Curator's InterProcessMutex, go-zookeeper's zk.Lock), the
// read-write lock's "-__READ__" and "-__WRIT__" (Curator's InterProcessReadWriteLock).
const (
	protectedPrefix = "_c_"
	lockMarker      = "-lock-"
	readMarker      = "-__READ__"
	writeMarker     = "-__WRIT__"
	latchMarker     = "-latch-" // Curator's LeaderLatch
	leaseMarker     = "-lease-" // Curator's InterProcessSemaphoreV2
)

// markers are the node markers parseNode knows.
var markers = []string{lockMarker, readMarker, writeMarker, latchMarker, leaseMarker}

// create makes the own ephemeral sequential node (step 1). When the reply is lost it
// looks for a node carrying id before it creates another one, so no node is orphaned.
// inflight counts creates whose outcome is not known yet, for cleanup.
func (l *Lock) create(ctx context.Context, id string, inflight *sync.WaitGroup) (string, error) {
	prefix := l.dir + "/" + protectedPrefix + id + l.kind.marker
	var retry retrier
	for {
		inflight.Add(1)
		node, err := call(ctx, func() (string, error) {
			defer inflight.Done()
			return l.conn.Create(prefix, l.data, zk.FlagEphemeralSequential, l.acl)
		})
		switch {
		case err == nil:
			return node, nil
		case errors.Is(err, zk.ErrNoNode):
			if err := l.createParents(ctx); err != nil {
				return "", err
			}
			continue
		case !transient(err):
			return "", fmt.Errorf("create lock node: %w", err)
		}
		// The create may or may not have been applied: look before creating again.
		for {
			if err := retry.pause(ctx, err); err != nil {
				return "", fmt.Errorf("create lock node: %w", err)
			}
			var names []string
			names, _, err = children(ctx, l.conn, l.dir)
			if transient(err) {
				continue
			} else if err != nil {
				return "", fmt.Errorf("look for lock node after lost reply: %w", err)
			}
			for _, name := range names {
				if nodeID, _, _, ok := parseNode(name); ok && nodeID == id {
					return l.dir + "/" + name, nil
				}
			}
			break
		}
	}
}

// createOwn creates the own node of hold h (create) and, with WithSuspendOnDisconnect, starts
// following the session for it.
func (l *Lock) createOwn(ctx context.Context, h *hold, id string, inflight *sync.WaitGroup) (string, error) {
	node, err := l.create(ctx, id, inflight)
	if err != nil {
		return "", err
	}
	h.node = node
	if l.sessionEvents != nil {
		go h.followSession(l.sessionEvents)
	}
	return node, nil
}

// createParents creates the lock directory and its ancestors as persistent nodes.
func (l *Lock) createParents(ctx context.Context) error {
	var retry retrier
	for i := 1; i <= len(l.dir); i++ {
		if i < len(l.dir) && l.dir[i] != '/' {
			continue
		}
		_, err := create(ctx, l.conn, l.dir[:i], nil, 0, l.acl)
		if transient(err) {
			err = retry.pause(ctx, err)
			i-- // retry this level; ErrNodeExists tells us if the lost create was applied
		}
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create lock directory %s: %w", l.dir[:i], err)
		}
	}
	return nil
}

// predecessor lists the lock directory without a watch (step 2) and returns the nearest
// node before the own node that blocks it (any earlier lock node for a mutex or a write
// lock; the nearest earlier write node for a read lock), or "" when none does, and the
// directory's pzxid in that listing (the fencing token when nothing blocks). It ignores
// children that are not lock nodes and deletes stray nodes carrying the own id.
func (l *Lock) predecessor(ctx context.Context, id, node string) (string, int64, error) {
	names, stat, err := children(ctx, l.conn, l.dir)
	if err != nil {
		return "", 0, fmt.Errorf("list %s: %w", l.dir, err)
	}
	own := node[len(l.dir)+1:]
	_, _, ownSeq, _ := parseNode(own)
	found, pred, predSeq := false, "", int32(0)
	for _, name := range names {
		nodeID, marker, seq, ok := parseNode(name)
		switch {
		case !ok:
		case name == own:
			found = true
		case nodeID == id: // a duplicate left by a lost create reply: ours, so delete it
			err := remove(ctx, l.conn, l.dir+"/"+name)
			if err != nil && !errors.Is(err, zk.ErrNoNode) {
				return "", 0, fmt.Errorf("delete duplicate lock node %s: %w", name, err)
			}
		case before(seq, ownSeq) && slices.Contains(l.kind.blockedBy, marker) && (pred == "" || before(predSeq, seq)):
			pred, predSeq = name, seq
		}
	}
	if !found {
		return "", 0, fmt.Errorf("own node %s is no longer listed: %w", node, ErrLost)
	}
	if stat == nil {
		return "", 0, fmt.Errorf("list %s: the reply has no stat", l.dir)
	}
	return pred, stat.Pzxid, nil
}

// cleanup deletes every node carrying id, with a fresh bounded context, once no
// create is in flight any more (step 5).
func (l *Lock) cleanup(id string, inflight *sync.WaitGroup) error {
	ctx, cancel := context.WithTimeout(context.Background(), l.cleanupTimeout)
	defer cancel()
	settled := make(chan struct{})
	go func() { inflight.Wait(); close(settled) }()
	select {
	case <-settled:
	case <-ctx.Done():
		return fmt.Errorf("recipe: cleanup: a create is still in flight, its node may live until the session ends: %w", ctx.Err())
	}
	var retry retrier
again:
	names, _, err := children(ctx, l.conn, l.dir)
	if transient(err) {
		if err = retry.pause(ctx, err); err == nil {
			goto again
		}
	}
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	} else if err != nil {
		return fmt.Errorf("recipe: cleanup: list %s: %w", l.dir, err)
	}
	for _, name := range names {
		if nodeID, _, _, ok := parseNode(name); ok && nodeID == id {
			err := remove(ctx, l.conn, l.dir+"/"+name)
			if transient(err) {
				if err = retry.pause(ctx, err); err == nil {
					goto again
				}
			}
			if err != nil && !errors.Is(err, zk.ErrNoNode) {
				return fmt.Errorf("recipe: cleanup: delete %s: %w", name, err)
			}
		}
	}
	return nil
}

// followOwn keeps an exists watch on the own node while the lock is held, and marks
// the hold lost when the node is gone, belongs to another session than the
// connection's (an expiry after which go-zookeeper opened a new one), or the watch
// fires for anything but a data change (deleted, or not watching any more because the
// session expired or closed). Transient failures are retried; others err on the safe
// side: lost.
func (h *hold) followOwn(conn Conn) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-h.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	var retry retrier
	for {
		r, err := existsW(ctx, conn, h.node)
		if transient(err) {
			if retry.pause(ctx, err) == nil {
				continue
			}
		}
		if err != nil || !r.ok || r.stat.EphemeralOwner != conn.SessionID() {
			h.markLost()
			return
		}
		retry = retrier{}
		select {
		case ev, ok := <-r.events:
			if !ok || ev.Type != zk.EventNodeDataChanged {
				h.markLost()
				return
			}
		case <-h.done:
			h.markLost()
			return
		}
	}
}

// await waits for a watch event on events, ctx, or the loss of hold h, and returns the reason
// to give up, if any: a watch that stopped (the session expired or closed) means the hold is lost.
//
// When several are ready at once (they came while the caller was busy with another call) the order is
// fixed: ctx, then the loss, then the event. select alone would pick at random, and a run on the model
// must go the same way every time its decisions are the same.
func (h *hold) await(ctx context.Context, events <-chan zk.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-h.lost:
		return ErrLost
	default:
	}
	select {
	case ev := <-events:
		if ev.Err != nil {
			return fmt.Errorf("%w: %w", ErrLost, ev.Err)
		}
		return nil
	case <-h.lost:
		return ErrLost
	case <-ctx.Done():
		return ctx.Err()
	}
}

// followSession marks the hold lost on the first session event, once the lock is held,
// that says the connection is not (fully) up: the "suspended" state.
func (h *hold) followSession(events <-chan zk.Event) {
	for {
		select {
		case ev, ok := <-events:
			suspended := !ok
			switch ev.State {
			case zk.StateDisconnected, zk.StateConnecting, zk.StateExpired, zk.StateAuthFailed, zk.StateConnectedReadOnly:
				suspended = suspended || ev.Type == zk.EventSession
			}
			select {
			case <-h.acquired:
				if suspended {
					h.markLost()
					return
				}
			default:
			}
			if !ok {
				return
			}
		case <-h.done:
			return
		}
	}
}

// exists is ExistsW's reply as one value.
type exists struct {
	ok     bool
	stat   *zk.Stat
	events <-chan zk.Event
}

// contextConn is a Conn whose calls end with a context, as the model's *model.Conn's do (see its
// CreateContext): on one, the helpers below make their call on the calling goroutine; on any other they make
// it through call, a goroutine a call. Either way they return the call's result, or ctx's error (and zero
// values) when ctx is done first, the call going on without its caller.
type contextConn interface {
	// ContextCaller is the value whose calls these are: a wrapper that embeds a contextConn has the
	// embedded one's calls promoted, which would bypass the wrapper's own methods (see withContext).
	ContextCaller() any
	CreateContext(ctx context.Context, path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	ChildrenContext(ctx context.Context, path string) ([]string, *zk.Stat, error)
	ExistsWContext(ctx context.Context, path string) (bool, *zk.Stat, <-chan zk.Event, error)
	DeleteContext(ctx context.Context, path string, version int32) error
	GetContext(ctx context.Context, path string) ([]byte, *zk.Stat, error)
}

// withContext returns conn as a contextConn when it is one itself, not a wrapper around one.
func withContext(conn Conn) (contextConn, bool) {
	cc, ok := conn.(contextConn)
	return cc, ok && cc.ContextCaller() == any(conn)
}

// existsW is conn's ExistsW, ended by ctx (see contextConn).
func existsW(ctx context.Context, conn Conn, path string) (exists, error) {
	if cc, ok := withContext(conn); ok {
		ok, stat, events, err := cc.ExistsWContext(ctx, path)
		return exists{ok, stat, events}, err
	}
	return call(ctx, func() (exists, error) {
		ok, stat, events, err := conn.ExistsW(path)
		return exists{ok, stat, events}, err
	})
}

// children is conn's Children, ended by ctx (see contextConn).
func children(ctx context.Context, conn Conn, path string) ([]string, *zk.Stat, error) {
	if cc, ok := withContext(conn); ok {
		return cc.ChildrenContext(ctx, path)
	}
	type listing struct {
		names []string
		stat  *zk.Stat
	}
	r, err := call(ctx, func() (listing, error) { names, stat, err := conn.Children(path); return listing{names, stat}, err })
	return r.names, r.stat, err
}

// create is conn's Create, ended by ctx (see contextConn).
func create(ctx context.Context, conn Conn, path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	if cc, ok := withContext(conn); ok {
		return cc.CreateContext(ctx, path, data, flags, acl)
	}
	return call(ctx, func() (string, error) { return conn.Create(path, data, flags, acl) })
}

// remove is conn's Delete of path at any version, ended by ctx (see contextConn).
func remove(ctx context.Context, conn Conn, path string) error {
	if cc, ok := withContext(conn); ok {
		return cc.DeleteContext(ctx, path, -1)
	}
	_, err := call(ctx, func() (struct{}, error) { return struct{}{}, conn.Delete(path, -1) })
	return err
}

// get is conn's Get of path's data, ended by ctx (see contextConn).
func get(ctx context.Context, conn WatchConn, path string) ([]byte, error) {
	if cc, ok := withContext(conn); ok {
		data, _, err := cc.GetContext(ctx, path)
		return data, err
	}
	return call(ctx, func() ([]byte, error) { data, _, err := conn.Get(path); return data, err })
}

// call runs a ZooKeeper call, which takes no context, and returns early with ctx's
// error when ctx is done first. The call itself goes on; callers clean up after it.
func call[T any](ctx context.Context, f func() (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() { v, err := f(); done <- result{v, err} }()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// parseNode splits a lock node name "_c_<id><marker><sequence>" (markers: "-lock-",
// "-__READ__", "-__WRIT__"). ok is false for any other name. The id is hex, with dashes
// allowed so Curator's UUIDs parse too.
func parseNode(name string) (id, marker string, seq int32, ok bool) {
	rest, ok := strings.CutPrefix(name, protectedPrefix)
	if !ok {
		return "", "", 0, false
	}
	for _, m := range markers {
		// The marker nearest the end: an id may hold dashes, never a marker's other characters.
		i := strings.LastIndex(rest, m)
		if i < 0 {
			continue
		}
		id, seqText := rest[:i], rest[i+len(m):]
		if id == "" || strings.Trim(id, "0123456789abcdef-") != "" {
			return "", "", 0, false
		}
		n, err := strconv.ParseInt(seqText, 10, 32)
		if err != nil { // a wrapped sequence is negative: "-2147483648"
			return "", "", 0, false
		}
		return id, m, int32(n), true
	}
	return "", "", 0, false
}

// before orders sequence numbers across the int32 wrap (serial number arithmetic):
// a comes before b when b is less than 2^31 steps after a.
func before(a, b int32) bool { return a-b < 0 }

// newID returns 32 random hex digits from r.
func newID(r io.Reader) (string, error) {
	var b [16]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", fmt.Errorf("recipe: read random id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

func validDir(p string) bool {
	return len(p) > 1 && p[0] == '/' && !strings.HasSuffix(p, "/") && !strings.Contains(p, "//")
}

// transient reports whether a call failed only for want of a connection and may be
// retried: its reply was lost (lostReply), or go-zookeeper returned ErrNoServer for a
// request it never sent because no server answered.
func transient(err error) bool {
	return lostReply(err) || errors.Is(err, zk.ErrNoServer)
}

// lostReply reports whether a call's request may or may not have been applied: go-zookeeper
// returns ErrConnectionClosed for a request in flight when the connection dropped, and the
// write error itself (a *net.OpError: "broken pipe", "connection reset", a write timeout)
// for the request it was sending when the connection failed under it, part of which may
// have reached the server.
func lostReply(err error) bool {
	if err == nil {
		return false // the common case, without errors.As's allocation
	}
	var op *net.OpError
	return errors.Is(err, zk.ErrConnectionClosed) || errors.As(err, &op) && op.Op == "write"
}

// maxAttempts bounds how many times in a row a step retries after transient errors:
// a partition longer than that (minutes with go-zookeeper, which waits for a server
// before failing a call) or a closed client ends the attempt with an error.
const maxAttempts = 100

// retrier paces the retries of one step after transient errors.
type retrier struct{ failures int }

// next decides what a waiting step does after err: again is true when err was transient and
// the hold h is not lost, and the pause before the next attempt is over; otherwise it returns
// the error to give up with (nil for none).
func (r *retrier) next(ctx context.Context, h *hold, err error) (again bool, _ error) {
	if err == nil || !transient(err) || isClosed(h.lost) {
		return false, err
	}
	if err := r.pause(ctx, err); err != nil {
		return false, err
	}
	return true, nil
}

// pause waits before the next attempt after the transient error err, growing the wait
// from 2ms to a second; it returns an error when ctx is done or attempts run out.
func (r *retrier) pause(ctx context.Context, err error) error {
	if r.failures++; r.failures > maxAttempts {
		return fmt.Errorf("gave up after %d attempts: %w", maxAttempts, err)
	}
	t := time.NewTimer(min(time.Millisecond<<min(r.failures, 10), time.Second))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
