package check

import (
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// This file caches the states the preemption-bounded search has explored (stateful model checking): a
// schedule that reaches a state the search has already explored from, with no more of the bound spent, is
// cut there, for every continuation of it is a continuation of the explored one — same runs, same verdicts.
//
// What a state is. At a decision point every client goroutine is blocked (the scheduler waits for them), so
// the run's future depends only on:
//
//   - the model's whole state (model.Server.AppendState): the tree with every stat, ACL and children's
//     order, the sessions, the watches, the clock, the zxid and session-id counters, the reaper, the
//     ensemble's members, and each connection's transport — requests in flight, replies and events not yet
//     delivered with their whole content, its state and the watches it holds;
//   - each client's program position. A client is deterministic (the project's determinism rule), so its
//     position is a function of what it has observed: the digest folds, for every decision that concerns the
//     client (its label names it; server-wide decisions concern every client), the label, the bubble's clock
//     and the client's transport state just before the step (so the reply or event delivered, whole) and,
//     for a register access, the register; and every event the client did or the model recorded of it, in
//     the history's order;
//   - the scheduler's side: the register, each client's workload fields (in a Lock call, its deadline, a
//     register request waiting, done), the bubble's and the model's clocks, and the choices offered; and,
//     outside the hash, where the run is in the bound — the running client, the preemptions and faults
//     spent, the decisions taken (see spent).
//
// What the properties read of the past. The properties judge the whole history, so two schedules may merge
// only if every continuation gets the same verdict after either. The key therefore also holds, in the
// history's global order, every event a property reads across clients: the clients' locks, releases,
// critical-section accesses, cancellations and told-of-loss records, the sessions' expiries, and every
// change of the tree (a model apply that is not a pure read) — the events the sleep sets' independence
// already treats as visible. The rest of what the properties read (a client's own reads and watch events,
// the notifications of a change) is ordered within its client's digest, and a notification carries the
// change's zxid. So two schedules that merge have the same projection for every property, and judging one's
// continuations judges the other's.
//
// What remains for the cache to merge is the order of what no property sees and does not change the tree: a
// reply delivered to one client before or after another client's request, two clients' reads, sends and
// reconnections. A client's own inputs are never reordered: two goroutines of one client (a holder's loss
// watcher and its critical section) may or may not commute, and nothing outside the client's code says.
// Spending: a state is covered by an earlier visit that spent no more faults and decisions and no more
// preemptions with the same running client, or fewer with any (every continuation left to the later visit
// was left to the earlier one too).
//
// The digests are kept in the search's path (frame.tracked): a run replaying a prefix restores them at
// each point instead of folding it again, so only the new part of each run costs anything.
//
// Soundness is also shown by measurement: TestStateCacheAgreesWithFullSearch searches the recipe, every
// primitive and every mutant with and without the cache and requires the same violated properties and the
// same reachability of the sharing. The cache is per subtree of
// the split search (exhaustive_split.go), so the counts do not depend on how many workers ran it. Runs on
// go-zookeeper's clients are not cached: their connection's state lives in go-zookeeper's goroutines and
// buffers, outside the model.

// errCached ends a run at a state the search has explored from: it is counted as pruned.
var errCached = fmt.Errorf("%w: the state was explored before", errPruned)

// stateKey identifies a state: two independent 64-bit hashes of its encoding.
type stateKey [2]uint64

// spent is how much of the bound a visit to a state had used, and the client running there (-1: none yet,
// so that the first progress decision is free whichever client it is).
type spent struct{ preempts, faults, decisions, running int }

// covers reports whether every continuation of a visit with b spent is a continuation of one with a spent:
// a spent no more faults and decisions, and no more preemptions with the same running client (or none), or
// fewer with any — one preemption more buys a switch to whichever client b's continuation runs first.
func (a spent) covers(b spent) bool {
	if a.faults > b.faults || a.decisions > b.decisions {
		return false
	}
	return a.preempts < b.preempts || a.preempts == b.preempts && (a.running == b.running || a.running < 0)
}

// spentOf is what a run at its k-th decision point has spent, where the point offers faults or not. The
// running client is left out (-1) where it cannot matter: before the first progress decision, and where the
// running client has no progress choice and no fault is offered — the next decision is then a progress one,
// free whichever client it runs, and makes that client the running one, so every visit to the state has the
// same continuations whichever client ran before it.
func spentOf(p *preemption, faults, k int, faultsOffered bool) spent {
	s := spent{preempts: p.preempts, faults: faults, decisions: k, running: p.running}
	if !p.started || !p.runnable && !faultsOffered {
		s.running = -1
	}
	return s
}

// stateCache is the explored states of one search. Most states are visited once: the first visit is kept
// in a map without pointers (which the garbage collector need not scan, and a search keeps a million), the
// others beside it.
type stateCache struct {
	mu    sync.Mutex
	first map[stateKey]packedSpent
	more  map[stateKey][]spent
	hits  int
}

// packedSpent is a spent in one word: 16 bits each, running offset by one (0: none yet).
type packedSpent uint64

func pack(s spent) packedSpent {
	return packedSpent(uint64(s.preempts)&0xffff | uint64(s.faults)&0xffff<<16 | uint64(s.decisions)&0xffff<<32 | uint64(s.running+1)&0xffff<<48)
}

func (p packedSpent) unpack() spent {
	return spent{preempts: int(p & 0xffff), faults: int(p >> 16 & 0xffff), decisions: int(p >> 32 & 0xffff), running: int(p>>48&0xffff) - 1}
}

func newStateCache() *stateCache {
	return &stateCache{first: map[stateKey]packedSpent{}, more: map[stateKey][]spent{}}
}

// visit reports whether an earlier visit covers the state k with s spent; if none does, it records this one.
func (c *stateCache) visit(k stateKey, s spent) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, seen := c.first[k]
	if !seen {
		c.first[k] = pack(s)
		return false
	}
	if p.unpack().covers(s) {
		c.hits++
		return true
	}
	for _, v := range c.more[k] {
		if v.covers(s) {
			c.hits++
			return true
		}
	}
	c.more[k] = append(slices.DeleteFunc(c.more[k], s.covers), s)
	return false
}

// states is how many distinct states the cache holds.
func (c *stateCache) states() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.first)
}

var stateSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func digestOf(b []byte) stateKey {
	return stateKey{maphash.Bytes(stateSeeds[0], b), maphash.Bytes(stateSeeds[1], b)}
}

// stateTracker follows one run's state for the cache: the clients' digests and the cross-client
// projection, folded decision by decision.
type stateTracker struct {
	clients   map[int]stateKey // by client id; 0: what the server recorded of no client
	global    stateKey         // the cross-client events the properties read, in order
	seen      int              // r.events already folded
	faults    int              // faults taken so far
	buf       []byte
	state     []byte // key's buffer
	batch     []*event
	bubbleAt0 time.Time
}

// trackedState is a tracker's digests at a decision point, kept in the search's path.
type trackedState struct {
	clients map[int]stateKey
	global  stateKey
	faults  int
}

func (t *stateTracker) snapshot() *trackedState {
	return &trackedState{clients: maps.Clone(t.clients), global: t.global, faults: t.faults}
}

// restore takes the digests a point of the path had when the search first came to it: the run replaying
// the path has been where that one was, so it skips the folding.
func (t *stateTracker) restore(r *run, s *trackedState) {
	clear(t.clients)
	maps.Copy(t.clients, s.clients)
	t.global, t.faults = s.global, s.faults
	r.mu.Lock()
	t.seen = len(r.events)
	r.mu.Unlock()
}

// fold mixes b into the digest d.
func (t *stateTracker) fold(d stateKey, b []byte) stateKey {
	t.buf = appendDigest(t.buf[:0], d)
	t.buf = append(append(t.buf, '\n'), b...)
	return digestOf(t.buf)
}

// crossClient reports whether a property reads e in its order with other clients' events.
func crossClient(e *event) bool {
	if visibleKinds[e.kind] || e.kind == "shutdown" {
		return true
	}
	if e.kind != "model:apply" {
		return false
	}
	op, _, _ := strings.Cut(e.text, " ")
	return !readOps[strings.TrimSuffix(op, "W")]
}

// readOps are the requests that change nothing on the server (a watch they set is the setter's own
// state, and shows in its digest and the model's).
var readOps = map[string]bool{
	"exists": true, "getData": true, "getChildren": true, "getChildren2": true, "sync": true, "getACL": true,
	"getAllChildrenNumber": true, "getEphemerals": true, "checkWatches": true, "ping": true,
}

func appendEvent(b []byte, e *event) []byte {
	b = append(append(b, e.kind...), ' ')
	b = strconv.AppendInt(b, int64(e.client), 10)
	b = append(append(append(b, ' '), e.text...), ' ')
	b = strconv.AppendInt(b, e.session, 10)
	b = strconv.AppendInt(append(b, ' '), e.token, 10)
	b = strconv.AppendInt(append(b, ' '), e.zxid, 10)
	b = strconv.AppendBool(append(b, ' '), e.shared)
	b = append(append(b, ' '), e.path...)
	if e.err != nil {
		b = append(append(b, " err="...), e.err.Error()...)
	}
	if op := e.op; op != nil {
		b = strconv.AppendInt(append(b, " op="...), op.token, 10)
		for _, f := range [...]bool{op.lostAtRead, op.shared, op.readOK, op.wrote, op.writeOK, op.incomplete} {
			b = strconv.AppendBool(append(b, ' '), f)
		}
		b = strconv.AppendInt(append(b, ' '), int64(op.read), 10)
	}
	return append(b, '\n')
}

func appendDigest(b []byte, d stateKey) []byte {
	b = strconv.AppendUint(append(b, ' '), d[0], 16)
	return strconv.AppendUint(append(b, ' '), d[1], 16)
}

func appendRegister(b []byte, reg register) []byte {
	b = strconv.AppendInt(append(b, "register "...), int64(reg.value), 10)
	b = strconv.AppendInt(append(b, ' '), reg.maxToken, 10)
	b = strconv.AppendInt(append(b, ' '), reg.maxRead, 10)
	b = strconv.AppendBool(append(b, ' '), reg.open)
	return append(b, '\n')
}

// foldEvents folds the events recorded since the last decision point, in the history's order.
func (t *stateTracker) foldEvents(r *run) {
	r.mu.Lock()
	t.batch = append(t.batch[:0], r.events[t.seen:]...)
	t.seen = len(r.events)
	r.mu.Unlock()
	slices.SortStableFunc(t.batch, historyOrder)
	per := map[int][]byte{}
	var cross []byte
	for _, e := range t.batch {
		if e.kind == "decision" {
			continue // folded with what it did (foldDecision)
		}
		per[e.client] = appendEvent(per[e.client], e)
		if crossClient(e) && (!r.cfg.looseProjection || e.kind != "model:apply") {
			cross = appendEvent(cross, e)
		}
	}
	for c, b := range per {
		t.clients[c] = t.fold(t.clients[c], b)
	}

	if cross != nil {
		t.global = t.fold(t.global, cross)
	}
}

// foldDecision folds the decision about to be taken into the digests of the clients it concerns: its
// label, the bubble's clock, each client's transport state before the step and, for a register access, the
// register.
func (t *stateTracker) foldDecision(r *run, label string) {
	concerned := decisionClient(label)
	b := t.state[:0]
	for _, c := range r.clients {
		if concerned != 0 && c.id != concerned {
			continue
		}
		b = append(append(b[:0], label...), ' ')
		b = strconv.AppendInt(b, int64(time.Since(t.bubbleAt0)), 10)
		b = append(b, '\n')
		b = r.srv.AppendClientState(b, c.id)
		if strings.HasPrefix(label, "cs-") {
			b = appendRegister(b, r.reg)
		}
		t.clients[c.id] = t.fold(t.clients[c.id], b)
	}
	t.state = b
}

// key is the state at a decision point offering labels.
func (t *stateTracker) key(r *run, labels []string) stateKey {
	b := r.srv.AppendState(t.state[:0])
	r.mu.Lock()
	b = strconv.AppendInt(append(b, "elapsed "...), r.elapsed, 10)
	b = strconv.AppendInt(append(b, " bubble "...), int64(time.Since(t.bubbleAt0)), 10)
	b = appendRegister(append(b, ' '), r.reg)
	for _, c := range r.clients {
		b = strconv.AppendInt(append(b, 'c'), int64(c.id), 10)
		b = appendDigest(b, t.clients[c.id])
		b = strconv.AppendInt(append(b, ' '), c.deadline, 10)
		for _, f := range [...]bool{c.inLock, c.done, c.cancel != nil} {
			b = strconv.AppendBool(append(b, ' '), f)
		}
		b = strconv.AppendInt(append(b, ' '), int64(len(c.reqs)), 10)
		if q := c.pending; q != nil {
			for _, f := range [...]bool{q.write, q.hold, q.shared} {
				b = strconv.AppendBool(append(b, ' '), f)
			}
			b = strconv.AppendInt(append(b, ' '), q.token, 10)
			b = strconv.AppendInt(append(b, ' '), int64(q.value), 10)
		}
		b = append(b, '\n')
	}
	r.mu.Unlock()
	b = appendDigest(append(b, "server"...), t.clients[0])
	b = appendDigest(append(b, " global"...), t.global)
	for _, l := range labels {
		b = append(append(b, '\n'), l...)
	}
	t.state = b
	return digestOf(b)
}

// cachingOf says whether a search of cfg on kind caches states: under a preemption bound, with reduction,
// on the model's own clients, unless the search is DPOR's (dpor.go).
func cachingOf(kind clients, cfg Config, reduce bool) bool {
	return reduce && searchBound(cfg) >= 0 && kind.name == modelKind && !dporOf(cfg)
}
