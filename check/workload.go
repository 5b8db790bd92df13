package check

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/zkmodel/zkmodel/internal/lockers"
)

// This file is the workload every client runs, whatever kind of client it is: rounds of Lock, a fenced
// read-modify-write of the shared register, and Unlock.

// csOp is one critical section: its fenced read and write, and what the register answered.
type csOp struct {
	token int64
	// lostAtRead: the Locker's Lost() had closed when the client asked for the read, so the read may be
	// refused without breaking the fencing property. (A client told of loss skips the write.)
	lostAtRead bool
	// shared: a reader's critical section (ReadWrite): a fenced read alone, admitted by the register unless
	// a write with a higher token came before
	shared  bool
	readOK  bool
	read    int
	wrote   bool
	writeOK bool
	// incomplete: the run ended before the register answered (only when clients are stuck)
	incomplete bool
}

// register is the shared state the critical sections update. It refuses an exclusive access (a mutex
// holder's, a writer's, a leader's) whose fencing token is lower than one it has already seen, and a shared
// one (a reader's) whose token is lower than an exclusive access's; token 0 means "no token" and is never
// refused. A semaphore's register (open) admits everything: its holders share it by design.
type register struct {
	value    int
	maxToken int64 // the highest token of an admitted exclusive access
	maxRead  int64 // the highest token of an admitted shared access
	open     bool
}

func (r *register) admit(token int64, shared bool) bool {
	if token == 0 || r.open {
		return true
	}
	if token < r.maxToken || !shared && token < r.maxRead {
		return false
	}
	if shared {
		r.maxRead = max(r.maxRead, token)
	} else {
		r.maxToken = token
	}
	return true
}

type client struct {
	id     int
	conn   clientConn
	lock   Locker
	rlock  Locker // the read side, for ReadWrite
	reqs   chan regRequest
	cancel context.CancelCauseFunc
	// deadline in virtual milliseconds since the start, or 0
	deadline int64
	inLock   bool
	pending  *regRequest // the request waiting for the scheduler's answer (&waiting), or nil
	waiting  regRequest
	replies  chan regReply // where the client's register requests are answered, one at a time
	done     bool
	seq      int
	holds    *rand.Rand // a semaphore holder's hold times (holdSteps), or nil when the run has no seed
	callFrom int        // the index in the run's events where the current Lock call began
	loss     lossScan   // what holdLost has read since then
}

type regRequest struct {
	write  bool
	hold   bool // a semaphore holder goes on holding: the register is not touched
	shared bool
	token  int64
	value  int
	reply  chan regReply
}

type regReply struct {
	ok    bool
	value int
}

// workload is one client: Rounds times lock, a fenced read-modify-write of the register, unlock.
func (r *run) workload(c *client) {
	defer r.wg.Done()
	defer r.rand.enter()()
	defer func() {
		r.mu.Lock()
		c.done = true
		r.mu.Unlock()
	}()
	for round := 1; round <= r.cfg.Rounds; round++ {
		ctx, cancel := context.WithCancelCause(context.Background())
		r.mu.Lock()
		if r.stopping {
			r.mu.Unlock()
			cancel(nil)
			return
		}
		c.cancel, c.inLock = cancel, true
		c.callFrom = len(r.events)
		c.deadline = 0
		if r.cfg.Deadline > 0 && c.id%2 == 1 {
			c.deadline = r.elapsed + r.cfg.Deadline.Milliseconds()
		}
		r.mu.Unlock()
		lock, shared, name := c.lock, false, ""
		if r.cfg.Primitive == ReadWrite && (c.id+round)%2 == 1 {
			lock, shared, name = c.rlock, true, "R" // a reader this round
		}
		role := func(e *event) { e.shared = shared }
		r.react(c.id, "lock", name+"Lock() round "+strconv.Itoa(round), role)
		err := lock.Lock(ctx)
		r.mu.Lock()
		c.inLock, c.cancel = false, nil
		r.mu.Unlock()
		cancel(nil)
		if err != nil {
			r.react(c.id, "lock-err", fmt.Sprintf("%sLock() failed: %v", name, err), func(e *event) { e.err, e.shared = err, shared })
			continue
		}
		token := lock.Token()
		sess := c.conn.SessionID()
		r.react(c.id, "lock-ok", name+"Lock() ok, token "+strconv.FormatInt(token, 10)+", session "+sharpHex(sess), func(e *event) { e.token, e.session, e.shared = token, sess, shared })
		r.toldOfLoss(c, lock, sess, "before its critical section")
		r.critical(c, lock, token, shared)
		r.toldOfLoss(c, lock, sess, "before its Unlock")
		r.react(c.id, "unlock", name+"Unlock()", role)
		uerr := lock.Unlock(context.Background())
		if uerr != nil {
			r.react(c.id, "unlock-err", fmt.Sprintf("%sUnlock() failed: %v", name, uerr), func(e *event) { e.err, e.shared = uerr, shared })
		} else {
			r.react(c.id, "unlock-ok", name+"Unlock() ok", role)
		}
	}
}

// critical is the critical section: read the register, then write it plus one, both with the fencing token,
// each a step the scheduler takes. A Locker that reports loss (Lost) is asked before the write. A reader's
// (shared) critical section is the fenced read alone.
func (r *run) critical(c *client, lock Locker, token int64, shared bool) {
	op := &csOp{token: token, lostAtRead: lost(lock), shared: shared}
	r.react(c.id, "cs-read", "read register with token "+strconv.FormatInt(token, 10), func(e *event) { e.op = op })
	rep := r.register(c, regRequest{token: token, shared: shared})
	op.readOK, op.read = rep.ok, rep.value
	if rep.value < 0 {
		op.incomplete = true
		return
	}
	if !rep.ok {
		r.react(c.id, "cs-refused", fmt.Sprintf("register refused the read: token %d is stale", token), func(e *event) { e.op = op })
		return
	}
	r.react(c.id, "cs-value", "register read "+strconv.Itoa(rep.value), func(e *event) { e.op = op })
	if shared {
		return
	}
	if lost(lock) {
		r.react(c.id, "cs-abort", "lock lost: write skipped", func(e *event) { e.op = op })
		return
	}
	op.wrote = true
	rep = r.register(c, regRequest{write: true, token: token, value: op.read + 1})
	op.writeOK = rep.ok
	if rep.value < 0 {
		op.incomplete = true
		return
	}
	verdict := "accepted"
	if !rep.ok {
		verdict = "refused: stale token"
	}
	r.react(c.id, "cs-write", "write "+strconv.Itoa(op.read+1)+" with token "+strconv.FormatInt(token, 10)+": "+verdict, func(e *event) { e.op = op })
	if r.cfg.Primitive == Semaphore {
		r.hold(c, lock)
	}
}

// maxHoldSteps bounds a semaphore holder's hold (holdSteps).
const maxHoldSteps = 8

// hold keeps a semaphore holder's lease for a number of steps drawn from the run's seed (0 to maxHoldSteps,
// none in a run without a seed), each a choice the scheduler takes ("cs-hold cN") when it decides: so that
// holds overlap, and a semaphore that admits a holder too many meets as many holders as there are clients.
// A holder told of loss stops holding.
func (r *run) hold(c *client, lock Locker) {
	if c.holds == nil {
		return
	}
	n := c.holds.IntN(maxHoldSteps + 1)
	if n == 0 {
		return
	}
	r.react(c.id, "cs-hold", fmt.Sprintf("holds its lease for %d more steps", n), nil)
	for range n {
		if lost(lock) {
			return
		}
		if rep := r.register(c, regRequest{hold: true}); rep.value < 0 {
			return // the run is over
		}
	}
}

// lost reports whether a Locker that reports loss (Lost) has closed its channel.
func lost(l Locker) bool {
	if l, ok := l.(interface{ Lost() <-chan struct{} }); ok {
		select {
		case <-l.Lost():
			return true
		default:
		}
	}
	return false
}

func (r *run) register(c *client, req regRequest) regReply {
	req.reply = c.replies
	c.reqs <- req
	return <-req.reply
}

// lostBound is how long a holder whose hold was lost may take to be told (its Locker's Lost() closed), in
// virtual time with nothing else to do: the bubble's clock runs only when no step is pending, so by then
// every message that could tell it has been delivered.
const lostBound = 2 * sessionTimeout

// toldOfLoss is the told-when-lost check, at a point of the hold (after Lock returned, and before Unlock):
// when the hold is lost — its session expired, or a node its Lock call created was deleted by another
// client — a Locker that reports loss (a non-nil Lost()) must close Lost() within lostBound. The client waits
// for that (so the scheduler goes on meanwhile) and records whether it was told ("told-lost") or not
// ("not-told"); then it goes on, into its critical section or Unlock. A Locker without Lost() is not asked.
func (r *run) toldOfLoss(c *client, lock Locker, session int64, where string) {
	how := r.holdLost(c, session)
	if how == "" {
		return
	}
	ch := lockers.LostOf(lock)
	if ch == nil {
		return
	}
	told := true
	select {
	case <-ch:
	default:
		timer := time.NewTimer(lostBound)
		select {
		case <-ch:
		case <-timer.C:
			told = false
		}
		timer.Stop()
	}
	if told {
		r.react(c.id, "told-lost", fmt.Sprintf("told of loss %s: %s", where, how), nil)
		return
	}
	r.react(c.id, "not-told", fmt.Sprintf("not told of loss %s: %s, and Lost() was still open %s later", where, how, lostBound), nil)
}

// holdLost says how the client's current hold, on the given session, was lost (its session expired, or a
// node its Lock call created was deleted by another client), or "" if it was not, from the run's records
// since the Lock call began. They are in the order they came, and every one of the steps before the current
// one is among them: the scheduler waits for the clients to be quiet before it takes a step.
//
// The records only grow while a Lock call's hold lasts, so the client keeps what it has read of them
// (lossScan) and reads on from there: asking twice a round reads each record once.
func (r *run) holdLost(c *client, session int64) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ls := &c.loss
	if ls.from != c.callFrom || ls.session != session || ls.next < ls.from {
		*ls = lossScan{from: c.callFrom, session: session, next: c.callFrom}
	}
	for ; ls.how == "" && ls.next < len(r.events); ls.next++ {
		e := r.events[ls.next]
		switch e.kind {
		case "model:expire":
			if e.session == session {
				ls.how = fmt.Sprintf("its session %#x expired at step %d", session, e.step)
			}
		case "model:apply":
			f0, f1, nf := firstFields(e.text)
			if nf < 2 {
				continue
			}
			_, res, _ := strings.Cut(e.text, " -> ")
			switch {
			case f0 == "create" && e.client == c.id:
				if path, _, nr := firstFields(res); nr > 0 && strings.HasPrefix(path, "/") {
					if ls.own == nil {
						ls.own = map[string]bool{}
					}
					ls.own[path] = true
				}
			case f0 == "delete" && e.client != c.id && ls.own[f1] && strings.HasPrefix(res, "ok"):
				ls.how = fmt.Sprintf("its node %s was deleted by c%d at step %d", f1, e.client, e.step)
			}
		}
	}
	return ls.how
}

// lossScan is what holdLost has read of the run's records for a client's current Lock call: from the
// call's first record, on the session, up to next; the nodes the call created (own), and how the hold was
// lost, once a record says so ("" until then).
type lossScan struct {
	from    int
	session int64
	next    int
	own     map[string]bool
	how     string
}

// sharpHex is fmt's %#x of v: "0x1f", "-0x1f" (the workload's texts are made at every step, without fmt).
func sharpHex(v int64) string {
	if v < 0 {
		return "-0x" + strconv.FormatUint(uint64(-v), 16)
	}
	return "0x" + strconv.FormatUint(uint64(v), 16)
}
