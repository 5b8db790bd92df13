package check

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// The properties, checked on every run. See the package documentation for what each one means and why
// safety is stated for valid holds.

const never = math.MaxInt64 // the return time of an operation whose outcome is unknown

// lockOp is one acquisition or release in the lock history.
type lockOp struct {
	client  int
	acquire bool
	call    int64
	ret     int64
	note    string
}

// lockModel is mutual exclusion: at most one client holds at a time. State: the holder (0: nobody).
var lockModel = porcupine.Model{
	Init: func() any { return 0 },
	Step: func(state, input, _ any) (bool, any) {
		holder, op := state.(int), input.(lockOp)
		if op.acquire {
			return holder == 0, op.client
		}
		return holder == op.client, 0
	},
	DescribeOperation: func(input, _ any) string {
		op := input.(lockOp)
		if op.acquire {
			return fmt.Sprintf("c%d acquires", op.client)
		}
		return fmt.Sprintf("c%d releases (%s)", op.client, op.note)
	},
	DescribeState: func(state any) string {
		if state.(int) == 0 {
			return "free"
		}
		return fmt.Sprintf("held by c%d", state.(int))
	},
}

type registerState struct {
	value    int
	maxToken int64
}

// registerModel treats each critical section (fenced read, then write of read+1) as one atomic operation on
// the register: linearizable histories are those in which critical sections never interleaved harmfully.
var registerModel = porcupine.Model{
	Init: func() any { return registerState{} },
	Step: func(state, input, _ any) (bool, any) {
		s, op := state.(registerState), input.(*csOp)
		if !op.readOK {
			return op.token != 0 && op.token < s.maxToken, s
		}
		if op.read != s.value || (op.token != 0 && op.token < s.maxToken) {
			return false, s
		}
		next := registerState{value: s.value, maxToken: max(s.maxToken, op.token)}
		if op.wrote && op.writeOK {
			next.value++
		}
		return true, next
	},
	DescribeOperation: func(input, _ any) string {
		op := input.(*csOp)
		switch {
		case !op.readOK:
			return fmt.Sprintf("token %d: read refused", op.token)
		case !op.wrote:
			return fmt.Sprintf("token %d: read %d, aborted", op.token, op.read)
		case op.writeOK:
			return fmt.Sprintf("token %d: read %d, wrote %d", op.token, op.read, op.read+1)
		}
		return fmt.Sprintf("token %d: read %d, write refused", op.token, op.read)
	},
	DescribeState: func(state any) string {
		s := state.(registerState)
		return fmt.Sprintf("value %d, highest token %d", s.value, s.maxToken)
	},
}

// evaluate checks the properties in order of gravity and records the first violation.
func (o *outcome) evaluate(r *run, stuck []int, leftovers []string) {
	o.lockOps = lockHistory(o.history)
	if res := porcupine.CheckOperations(lockModel, toOps(o.lockOps)); !res {
		o.property = "safety"
		o.verdict = "two clients held the lock at once (porcupine: the lock history has no linearization; valid holds overlapped)"
		return
	}
	if !porcupine.CheckOperations(registerModel, csOperations(o.history)) {
		o.property = "fenced-register"
		o.verdict = "critical sections interleaved: a read-modify-write of the fenced register lost an update (porcupine: not linearizable)"
		return
	}
	if v := herd(o.history); v != "" {
		o.property, o.verdict = "no-herd", v
		return
	}
	if len(stuck) > 0 {
		o.property = "liveness"
		o.verdict = fmt.Sprintf("after the faults stopped and every pending step was taken, %s still blocked in Lock: waiting for a watch that can never fire", clientList(stuck))
		return
	}
	if len(leftovers) > 0 {
		o.property = "hygiene"
		o.verdict = fmt.Sprintf("every client was done, but lock nodes were left behind: %s", strings.Join(leftovers, ", "))
	}
}

func clientList(ids []int) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("c%d", id)
	}
	if len(ids) == 1 {
		return "client " + parts[0] + " was"
	}
	return "clients " + strings.Join(parts, ", ") + " were"
}

// lockHistory turns the history into acquisitions and releases. A hold is valid from Lock's success until
// its Unlock begins or its session ends, whichever is first: a holder whose session expired may not know it
// yet, so the release of such a hold is placed at the expiry.
func lockHistory(h []*event) []lockOp {
	var ops []lockOp
	type open struct {
		call, ok int64
		session  int64
		ended    bool
	}
	holds := map[int]*open{}
	calls := map[int]int64{}
	expired := map[int64]bool{}
	for _, e := range h {
		switch e.kind {
		case "lock":
			calls[e.client] = e.ts
		case "lock-ok":
			if expired[e.session] {
				// The session ended while the successful reply was on its way: the hold was never valid, and
				// the holder cannot know yet. Fencing is what protects the register from it.
				continue
			}
			holds[e.client] = &open{call: calls[e.client], ok: e.ts, session: e.session}
			ops = append(ops, lockOp{client: e.client, acquire: true, call: calls[e.client], ret: e.ts})
		case "model:expire":
			expired[e.session] = true
			for c, o := range holds {
				if o.session == e.session && !o.ended {
					o.ended = true
					ops = append(ops, lockOp{client: c, call: e.ts, ret: e.ts, note: "its session expired"})
				}
			}
		case "unlock":
			if o := holds[e.client]; o != nil && !o.ended {
				o.ended = true
				calls[e.client] = e.ts
				ops = append(ops, lockOp{client: e.client, call: e.ts, ret: never, note: "Unlock"})
			}
		case "unlock-ok":
			if o := holds[e.client]; o != nil {
				for i := len(ops) - 1; i >= 0; i-- {
					if ops[i].client == e.client && !ops[i].acquire && ops[i].ret == never {
						ops[i].ret = e.ts
						break
					}
				}
			}
			delete(holds, e.client)
		case "unlock-err":
			delete(holds, e.client) // outcome unknown: the release may take effect any time after Unlock began
		}
	}
	return ops
}

func toOps(ops []lockOp) []porcupine.Operation {
	out := make([]porcupine.Operation, len(ops))
	for i, op := range ops {
		out[i] = porcupine.Operation{ClientId: op.client - 1, Input: op, Call: op.call, Output: nil, Return: op.ret}
	}
	return out
}

// csOperations gives each complete critical section its interval: from the read request to the last answer.
func csOperations(h []*event) []porcupine.Operation {
	type span struct {
		client    int
		call, ret int64
	}
	spans := map[*csOp]*span{}
	var order []*csOp
	for _, e := range h {
		if e.op == nil || e.op.incomplete {
			continue
		}
		s, ok := spans[e.op]
		if !ok {
			s = &span{client: e.client, call: e.ts}
			spans[e.op] = s
			order = append(order, e.op)
		}
		s.ret = e.ts
	}
	out := make([]porcupine.Operation, 0, len(order))
	for _, op := range order {
		s := spans[op]
		out = append(out, porcupine.Operation{ClientId: s.client - 1, Input: op, Call: s.call, Return: s.ret})
	}
	return out
}

// herd reports a change that woke more than one waiter: a change is one path in one transaction (a session
// closing releases each of its nodes separately), and a notification counts when it reaches a client inside a
// Lock call, for a path that client set a watch on during that same call, and the client is not the one whose
// request caused it. Nothing after the run's shutdown counts.
func herd(h []*event) string {
	inLock := map[int]bool{}
	watched := map[int]map[string]bool{}
	type change struct {
		zxid int64
		path string
	}
	actor := map[int64]int{}
	woken := map[change][]int{}
	lastActor := 0
	var changes []change
	for _, e := range h {
		if e.kind == "shutdown" {
			break // the run is over: closing every client releases at once, and nobody waits any more
		}
		switch {
		case e.kind == "lock":
			inLock[e.client], watched[e.client] = true, map[string]bool{}
		case e.kind == "lock-ok" || e.kind == "lock-err" || e.kind == "cancelled":
			// A cancelled client no longer waits; go-zookeeper cannot remove the watches it left behind.
			inLock[e.client] = false
		case e.kind == "model:apply":
			lastActor = e.client
			if f := strings.Fields(e.text); len(f) > 1 && strings.HasSuffix(f[0], "W") && inLock[e.client] {
				watched[e.client][f[1]] = true
			}
		case e.kind == "model:expire":
			lastActor = e.client
		case e.kind == "model:notify":
			if _, ok := actor[e.zxid]; !ok {
				actor[e.zxid] = lastActor
			}
			ch := change{e.zxid, e.path}
			if _, ok := woken[ch]; !ok {
				changes = append(changes, ch)
			}
			if e.client != actor[e.zxid] && inLock[e.client] && watched[e.client][e.path] {
				woken[ch] = append(woken[ch], e.client)
			} else if woken[ch] == nil {
				woken[ch] = []int{}
			}
		}
	}
	for _, ch := range changes {
		if w := woken[ch]; len(w) > 1 {
			return fmt.Sprintf("one change (zxid %d, %s) woke %d waiters (%s); each release should wake only the next client in line", ch.zxid, ch.path, len(w), strings.TrimSuffix(strings.TrimPrefix(clientList(w), "clients "), " were"))
		}
	}
	return ""
}

// visualize writes porcupine's HTML view of the failing history, for safety and register violations.
func (o *outcome) visualize(path string) error {
	var (
		m   porcupine.Model
		ops []porcupine.Operation
	)
	switch o.property {
	case "safety":
		m, ops = lockModel, toOps(o.lockOps)
	case "fenced-register":
		m, ops = registerModel, csOperations(o.history)
	default:
		return nil
	}
	for i := range ops {
		if ops[i].Return == never {
			ops[i].Return = int64(len(o.history) + 1)
		}
	}
	_, info := porcupine.CheckOperationsVerbose(m, ops, 10*time.Second)
	return porcupine.VisualizePath(m, info, path)
}
