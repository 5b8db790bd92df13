package herd

import (
	"context"
	"errors"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkmodel/zkmodel/realzk"
)

// Primitive names a coordination primitive the herd experiment measures.
type Primitive string

// The primitives. Beyond the mutex, each runs in package recipe's
// implementation on *zk.Conn, Curator 5.4's and kazoo 2.8's.
const (
	// Mutex is the mutex, in the variants of Variants.
	Mutex Primitive = "mutex"
	// RWLock is the read-write lock: recipe.NewRWLock, Curator's
	// InterProcessReadWriteLock, kazoo's ReadLock and WriteLock. A quarter
	// of the contenders write (Experiment.WriterEvery).
	RWLock Primitive = "rwlock"
	// Semaphore is the counting semaphore: recipe.NewSemaphore, Curator's
	// InterProcessSemaphoreV2, kazoo's Semaphore, with
	// Experiment.Leases leases.
	Semaphore Primitive = "semaphore"
	// Election is leader election: recipe.NewElection (Campaign,
	// Resign), Curator's LeaderLatch (a new latch per candidacy; closing it
	// resigns) and kazoo's Election (whose run returns at once).
	Election Primitive = "election"
)

// Primitives lists every primitive, in the order the experiment runs
// them.
var Primitives = []Primitive{Mutex, RWLock, Semaphore, Election}

// herdCellSpec is what one cell runs.
type herdCellSpec struct {
	primitive Primitive
	variant   Variant
	proxies   herdProxies // the counting proxies the contenders connect through; none for the mutex
}

// path is where the cell's primitive lives under the cell's directory: the
// directory itself for the mutex, a child named after the primitive
// otherwise (kazoo's semaphore puts its admission lock beside it).
func (s herdCellSpec) path(dir string) string {
	if s.primitive == Mutex {
		return dir
	}
	return dir + "/" + string(s.primitive)
}

// param is the drivers' parameter of the primitive: the read-write lock's
// spacing of writers, the semaphore's leases.
func (s herdCellSpec) param(x Experiment) int {
	switch s.primitive {
	case RWLock:
		return x.WriterEvery
	case Semaphore:
		return x.Leases
	}
	return 0
}

// herdProxies are counting proxies, one in front of each server.
type herdProxies []*realzk.Proxy

// startHerdProxies starts a counting proxy in front of each of addrs, whose
// notifications it sorts with classifyWake.
func startHerdProxies(ctx context.Context, addrs []string) (herdProxies, error) {
	var ps herdProxies
	for _, addr := range addrs {
		p, err := realzk.NewProxy(ctx, addr, realzk.CountWire(classifyWake))
		if err != nil {
			ps.close()
			return nil, err
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// addrs are the proxies' addresses, for the contenders to connect to.
func (ps herdProxies) addrs() []string {
	var a []string
	for _, p := range ps {
		a = append(a, p.Addr())
	}
	return a
}

// counts sums the proxies' counts (zero for none).
func (ps herdProxies) counts() realzk.WireCounts {
	var w realzk.WireCounts
	for _, p := range ps {
		w = w.Add(p.WireCounts())
	}
	return w
}

func (ps herdProxies) close() error {
	var errs []error
	for _, p := range ps {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}

// The classes of the herd's notifications, by what changed: the node names of
// package recipe, Curator and kazoo tell read nodes from the others.
const (
	// wakeRead: a read lock's node went (recipe's and Curator's
	// "-__READ__", kazoo's "__rlock__").
	wakeRead = "read"
	// wakeExclusive: a write lock's, a mutex's or a candidate's node went
	// ("-__WRIT__", "-lock-" and "-latch-"; kazoo's "__lock__"): for the
	// semaphore, a node of its admission mutex.
	wakeExclusive = "exclusive"
	// wakeChildren: a directory's children changed: for the semaphore, its
	// leases.
	wakeChildren = "children"
)

// classifyWake is the herd's NotificationClassifier.
func classifyWake(eventType int32, path string) string {
	switch zk.EventType(eventType) {
	case zk.EventNodeChildrenChanged:
		return wakeChildren
	case zk.EventNodeDeleted:
		name := path[strings.LastIndex(path, "/")+1:]
		switch {
		case strings.Contains(name, "-__READ__") || strings.Contains(name, "__rlock__"):
			return wakeRead
		case strings.Contains(name, "-__WRIT__") || strings.Contains(name, "-lock-") || strings.Contains(name, "-latch-") ||
			strings.Contains(name, "__lock__"):
			return wakeExclusive
		}
	}
	return ""
}
