package recipe

// RWLock is a distributed read-write lock on one ZooKeeper path: any number of readers
// hold it at once, a writer alone. Both sides are a *Lock with the mutex's qualities
// (context everywhere, the own node cleaned up on cancellation, timeout or a lost reply,
// fencing tokens, Lost()); they differ in the node they create and in what they wait
// behind:
//
//   - a reader creates "_c_<id>-__READ__<seq>" and holds once no write node is before
//     it; otherwise it watches only the nearest write node before it (exists-with-watch,
//     re-listing when it is already gone), so a release by a reader wakes no reader and a
//     writer's release wakes the readers directly behind it;
//   - a writer creates "_c_<id>-__WRIT__<seq>" and holds once no node at all is before
//     it, watching its immediate predecessor, reader or writer.
//
// Requests are served in arrival order: a reader behind a waiting writer waits for it, so
// writers do not starve. The node names are Curator's InterProcessReadWriteLock's.
type RWLock struct {
	read, write *Lock
}

// NewRWLock returns a read-write lock on the directory path (created on first use if
// missing). The options apply to both sides.
func NewRWLock(conn Conn, path string, opts ...Option) *RWLock {
	return &RWLock{read: newLock(conn, path, readKind, opts), write: newLock(conn, path, writeKind, opts)}
}

// ReadLock returns the shared side. Each call returns the same *Lock: one hold at a time,
// like any Lock; use another RWLock value (or session) for more concurrent readers.
func (rw *RWLock) ReadLock() *Lock { return rw.read }

// WriteLock returns the exclusive side.
func (rw *RWLock) WriteLock() *Lock { return rw.write }
