package check

import (
	"fmt"
	"sync"
)

// History records what clients of a real ZooKeeper (not the model) did, so that the checker's safety
// properties can judge it: the lock history must admit mutual exclusion of valid holds (porcupine), and the
// critical sections on a fenced register must be linearizable. Events are ordered by when they were
// recorded, so record each one right when it happens. History is safe for concurrent use.
type History struct {
	mu     sync.Mutex
	events []*event
	reg    register
	open   map[int]*csOp
}

// NewHistory returns an empty history.
func NewHistory() *History { return &History{open: map[int]*csOp{}} }

func (h *History) add(e *event) *event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.addLocked(e)
}

func (h *History) addLocked(e *event) *event {
	e.ts = int64(len(h.events) + 1)
	e.step = len(h.events) + 1
	h.events = append(h.events, e)
	return e
}

// LockCalled records that client is about to call Lock.
func (h *History) LockCalled(client int) {
	h.add(&event{client: client, kind: "lock", text: "Lock()"})
}

// LockReturned records Lock's result. On success give the token and the session the lock was taken on.
func (h *History) LockReturned(client int, token, session int64, err error) {
	if err != nil {
		h.add(&event{client: client, kind: "lock-err", text: fmt.Sprintf("Lock() failed: %v", err), err: err})
		return
	}
	h.add(&event{client: client, kind: "lock-ok", text: fmt.Sprintf("Lock() ok, token %d", token), token: token, session: session})
}

// UnlockCalled records that client is about to call Unlock.
func (h *History) UnlockCalled(client int) {
	h.add(&event{client: client, kind: "unlock", text: "Unlock()"})
}

// UnlockReturned records Unlock's result. An error leaves the release's moment unknown (any time after the
// call), which the check treats soundly.
func (h *History) UnlockReturned(client int, err error) {
	if err != nil {
		h.add(&event{client: client, kind: "unlock-err", text: fmt.Sprintf("Unlock() failed: %v", err), err: err})
		return
	}
	h.add(&event{client: client, kind: "unlock-ok", text: "Unlock() ok"})
}

// SessionLost records that session can no longer be relied on: call it no later than the session's actual
// end (for an expiry you inject, when you start it, e.g. when you freeze the client's traffic). A hold on
// that session is valid only until this moment.
func (h *History) SessionLost(session int64) {
	h.add(&event{kind: "model:expire", text: fmt.Sprintf("session %#x lost", session), session: session})
}

// Read performs the first half of client's critical section on the history's fenced register: a read with
// the fencing token (0: no token). It returns the value and whether the register admitted the token.
func (h *History) Read(client int, token int64) (int, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	op := &csOp{token: token}
	h.open[client] = op
	h.addLocked(&event{client: client, kind: "cs-read", text: fmt.Sprintf("read with token %d", token), op: op})
	op.readOK, op.read = h.reg.admit(token, false), h.reg.value
	h.addLocked(&event{client: client, kind: "cs-value", text: fmt.Sprintf("read %d (admitted %t)", op.read, op.readOK), op: op})
	if !op.readOK {
		delete(h.open, client)
	}
	return op.read, op.readOK
}

// Write performs the second half: write value with the token. It reports whether the register admitted it.
// A client that skips the write (it learnt it lost the lock) calls Abort instead.
func (h *History) Write(client int, token int64, value int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	op := h.open[client]
	if op == nil {
		op = &csOp{token: token, incomplete: true}
	}
	delete(h.open, client)
	op.wrote = true
	op.writeOK = h.reg.admit(token, false)
	if op.writeOK {
		h.reg.value = value
	}
	h.addLocked(&event{client: client, kind: "cs-write", text: fmt.Sprintf("write %d with token %d: %t", value, token, op.writeOK), op: op})
	return op.writeOK
}

// Abort ends client's critical section without a write.
func (h *History) Abort(client int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if op := h.open[client]; op != nil {
		h.addLocked(&event{client: client, kind: "cs-abort", text: "write skipped", op: op})
	}
	delete(h.open, client)
}

// Value returns the register's value.
func (h *History) Value() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reg.value
}

// Counts summarises the history.
type Counts struct {
	Acquired, Released, Failed int // Lock successes, Unlock successes, Lock failures
	Writes, Refused            int // register writes admitted and refused
}

// Counts counts what the history holds.
func (h *History) Counts() Counts {
	h.mu.Lock()
	defer h.mu.Unlock()
	var c Counts
	for _, e := range h.events {
		switch e.kind {
		case "lock-ok":
			c.Acquired++
		case "lock-err":
			c.Failed++
		case "unlock-ok":
			c.Released++
		case "cs-write":
			if e.op.writeOK {
				c.Writes++
			} else {
				c.Refused++
			}
		}
	}
	return c
}

// Check judges the history: it returns the violated property ("safety", "fenced-register" or "fencing")
// and a sentence, or two empty strings. Steps in the sentence are the history's events, numbered from 1.
func (h *History) Check() (property, verdict string) {
	h.mu.Lock()
	events := append([]*event(nil), h.events...)
	h.mu.Unlock()
	if !linearizable(lockModel, toOps(lockHistory(events))) {
		return "safety", safetyVerdict(events)
	}
	if !linearizable(registerModel, csOperations(events)) {
		return "fenced-register", "critical sections interleaved on the fenced register (porcupine: not linearizable)"
	}
	if v := fencing(events); v != "" {
		return "fencing", v
	}
	return "", ""
}
