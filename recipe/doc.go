// Package recipe is a ZooKeeper mutual-exclusion lock, a read-write lock, a counting
// semaphore and leader election that run unchanged on go-zookeeper's *zk.Conn and on the
// in-memory model's *model.Conn (both satisfy Conn and WatchConn).
//
//	l := recipe.NewLock(conn, "/locks/orders")
//	if err := l.Lock(ctx); err != nil { … }
//	defer l.Unlock(context.Background())
//	writeWithFence(l.Token()) // storage rejects tokens lower than one it has seen
//	select { case <-l.Lost(): stop(); default: }
//
// # The algorithm, and why each step is there
//
// Waiters form a queue of ephemeral sequential nodes under the lock path; the first in
// line holds the lock. Every step closes a specific hole:
//
//  1. Create an ephemeral sequential node named "_c_<random id>-lock-". Ephemeral, so a
//     crashed holder's node vanishes with its session. The random id (Curator's
//     "protected" name; go-zookeeper's zk.Lock uses the same form, so the two
//     interoperate) exists for one failure: a create whose reply is lost
//     (zk.ErrConnectionClosed) may or may not have been applied. Creating again could
//     leave the first node as an orphan that every later waiter queues behind until the
//     session ends, so the lock first lists the children and adopts a node carrying its
//     id. Should a duplicate appear anyway, step 2 deletes it.
//  2. List the children without a watch and order the lock nodes by their numeric
//     sequence suffix, not by name: the suffix is a Java int printed %010d, so after
//     2147483647 comes "-2147483648", which sorts first as text. Sequence numbers are
//     compared in serial-number arithmetic (a is before b when b-a, wrapping in int32,
//     is positive), which is right across the wrap as long as the live nodes span less
//     than 2^31 numbers. Children that are not lock nodes are ignored.
//  3. If no lock node comes before the own node, the lock is held. Otherwise watch the
//     immediate predecessor only, with exists: watching the first node, or the
//     children, would wake every waiter on each release (the herd effect) when only one
//     can proceed. exists also reports whether the predecessor is still there; if it
//     went away between the listing and the watch, no event would ever come, so the
//     lock lists again at once. This closes the race.
//  4. Wait for the predecessor's event, ctx, or the loss of the session; then go to 2.
//     The predecessor going away does not mean the own node is first now: a waiter
//     in the middle may have given up, so the lock re-lists rather than assuming.
//  5. On cancellation, timeout or error after step 1, delete the own node with a fresh
//     context bounded by WithCleanupTimeout (the caller's ctx is already done), after
//     waiting for any create still on its way, and return a wrapped error. If the
//     session expired while waiting, Lock returns an error wrapping ErrLost: the lock
//     was not acquired, and the node went with the session.
//  6. A Lock value holds the lock at most once: a second Lock fails with ErrLocked
//     instead of deadlocking behind itself.
//
// Calls to ZooKeeper take no context in go-zookeeper, so each runs in a goroutine that
// Lock stops waiting for when ctx is done. A call that fails for want of a connection
// (zk.ErrConnectionClosed, zk.ErrNoServer, or the *net.OpError of a write the connection
// broke under) is retried with a growing pause, and a step
// gives up after 100 failures in a row, which also ends the attempt on a closed client.
//
// # Knowing whether the lock is still held
//
// go-zookeeper reconnects on its own, and after an expiry it silently opens a new
// session on the same *zk.Conn: the old session's ephemeral node is gone, but calls
// keep working. Comparing SessionID() at chosen moments would leave gaps between them,
// so the lock relies on watches. While waiting, the watch on the predecessor serves:
// when the session expires, go-zookeeper (and the model) sends EventNotWatching with
// zk.ErrSessionExpired to every watch, and Lock ends with ErrLost. While holding, the
// first call of Lost() sets an exists watch on the own node, in the background, kept
// until release: if anyone deletes the node the watch gets NodeDeleted, on expiry
// EventNotWatching, and either closes Lost(). The exists reply also yields the node's
// owner session, checked against SessionID(): a node left by a session that has just
// expired closes Lost() at once. A holder that never asks for Lost() does not pay for
// the watch.
//
// # Requests per acquisition
//
// An uncontended acquisition and release take 3 requests (create, list, delete); a
// contended one 5 (create, list, exists on the predecessor, list again after its
// deletion, delete) — the floor for a lock that watches its predecessor and re-lists
// rather than assuming. Lost() adds one exists per hold. After the predecessor's
// deletion only one read (the list) stands between the notification and the hold.
//
// # The fencing token
//
// The token is the lock directory's pzxid in the listing that found the own node
// first: the zxid of the latest creation or deletion of a child, a 64-bit,
// ensemble-wide, monotonic transaction id. That listing shows the own node, so it was
// read before the node's deletion, and the next holder's deciding listing no longer
// shows it, so its pzxid is at least that deletion's zxid: each holder's token is
// larger than the one before, across expiries, and across a deleted and recreated
// directory. It costs no request beyond the listing the lock makes anyway. The
// sequence suffix would not do: it is an int32 that wraps, and it restarts with the
// directory.
//
// By default Lost() closes only when the session is known to be gone. A disconnected
// holder cannot tell whether its session will survive: other processes may take the
// lock once the server expires it, before this client hears of it. With
// WithSuspendOnDisconnect(events), Lost() closes already at the first session event
// reporting the connection down (Curator's "suspended" state). The state reaches the
// lock the way go-zookeeper delivers it, as zk.EventSession values on a channel; the
// lock reads that channel from Lock until release, so it must be the Lock's alone.
// An event sent just before acquisition but read after it can close Lost() spuriously,
// which errs on the safe side. After a reconnection that kept the session, Unlock
// still works and returns nil: the node was never deleted, so nobody else held the lock.
//
// Unlock deletes the own node. After a loss it returns an error wrapping ErrLost
// (and still deletes whatever is left); a delete whose reply was lost is retried, and a
// retry that finds the node gone counts as released.
//
// # Read-write lock
//
// NewRWLock gives a shared side (ReadLock) and an exclusive side (WriteLock) on one
// directory, each a *Lock with everything above. A reader's node waits only behind the
// nearest earlier write node, a writer's behind its immediate predecessor of either kind;
// the node names are Curator's InterProcessReadWriteLock's ("-__READ__", "-__WRIT__").
//
// # Semaphore
//
// NewSemaphore(conn, path, n) admits at most n holders at once, with Curator's
// InterProcessSemaphoreV2 algorithm and node names: a mutex (path+"/locks", the Lock above)
// admits one acquirer at a time, which creates its lease under path+"/leases", lists the
// leases with a watch until there are at most n, and then leaves the mutex. Only the mutex
// holder watches the leases and the others wait in the mutex's queue, so a release wakes
// one waiter. The token is the leases directory's pzxid in the granting listing; the mutex
// serialises grants, so tokens increase from grant to grant (a counting semaphore gives no
// single holder a fence against the others: the token orders grants).
//
// # Election
//
// NewElection(conn, path) is the Lock above with Curator's LeaderLatch node names
// ("-latch-") and the candidate's value as the node's data: Campaign blocks until the
// candidate leads, Resign ends it, Lost() tells the leader it can no longer be sure it
// leads, Token() is its fence, and Leader reads the leader's value.
//
// The recipes' behavioural rules are in package conformance (conformance.RunRecipes, beside
// the server's rules in conformance.Run), run here on the model and by realzk on a real
// 3-server ensemble.
package recipe
