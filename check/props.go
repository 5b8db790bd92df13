package check

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

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
	shared  bool // a reader's acquisition or release (ReadWrite)
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
	maxToken int64 // of exclusive accesses
	maxRead  int64 // of shared ones (ReadWrite's readers)
}

// stale says whether the register refuses op's token in state s (see register.admit).
func (s registerState) stale(op *csOp) bool {
	return op.token != 0 && (op.token < s.maxToken || !op.shared && op.token < s.maxRead)
}

// registerModel treats each critical section (fenced read, then write of read+1) as one atomic operation on
// the register: linearizable histories are those in which critical sections never interleaved harmfully.
var registerModel = porcupine.Model{
	Init: func() any { return registerState{} },
	Step: func(state, input, _ any) (bool, any) {
		s, op := state.(registerState), input.(*csOp)
		if !op.readOK {
			return s.stale(op), s
		}
		if op.read != s.value || s.stale(op) {
			return false, s
		}
		next := registerState{value: s.value, maxToken: max(s.maxToken, op.token), maxRead: s.maxRead}
		if op.shared {
			next.maxToken, next.maxRead = s.maxToken, max(s.maxRead, op.token)
		}
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
		if s.maxRead != 0 {
			return fmt.Sprintf("value %d, highest write token %d, highest read token %d", s.value, s.maxToken, s.maxRead)
		}
		return fmt.Sprintf("value %d, highest token %d", s.value, s.maxToken)
	},
}

// evaluate checks the properties in order of gravity and records the first violation.
func (o *outcome) evaluate(r *run, stuck []int, leftovers []string) {
	if r.cfg.Primitive != Mutex {
		o.evaluatePrimitive(r.cfg, stuck, leftovers)
		return
	}
	o.lockOps = lockHistory(o.history)
	if res := linearizable(lockModel, toOps(o.lockOps)); !res {
		o.property, o.verdict = "safety", safetyVerdict(o.history)
		return
	}
	if !linearizable(registerModel, csOperations(o.history)) {
		o.property = "fenced-register"
		o.verdict = "critical sections interleaved: a read-modify-write of the fenced register lost an update (porcupine: not linearizable)"
		return
	}
	o.evaluateRest(Mutex, stuck, leftovers)
}

// evaluateRest checks, for every primitive, the properties after the holds' and the register's: fencing,
// no-herd, liveness and hygiene.
func (o *outcome) evaluateRest(prim Primitive, stuck []int, leftovers []string) {
	if v := fencing(o.history); v != "" {
		o.property, o.verdict = "fencing", v
		return
	}
	if v := toldWhenLost(o.history); v != "" {
		o.property, o.verdict = "told-when-lost", v
		return
	}
	if v := herd(o.history, prim); v != "" {
		o.property, o.verdict = "no-herd", v
		return
	}
	if len(stuck) > 0 {
		o.property = "liveness"
		o.verdict = livenessVerdict(o.history, o.dump, stuck)
		return
	}
	if len(leftovers) > 0 {
		what := "lock nodes" // a mutex's words, as its traces have them
		if prim != Mutex {
			what = "nodes"
		}
		o.property = "hygiene"
		o.verdict = fmt.Sprintf("every client was done, but %s its clients created were left behind: %s", what, strings.Join(leftovers, ", "))
	}
}

// validHold is one valid hold of the lock: from Lock's success until Unlock began or the session ended.
type validHold struct {
	client     int
	shared     bool  // a read hold (ReadWrite)
	call       int64 // ts of the Lock call that acquired it
	token      int64
	session    int64
	from, to   int64 // ts
	begin, end int   // steps
	how        string
}

// validHolds lists the valid holds in the history, in the order they began; a hold still valid at the end
// of the history ends there, with how "still held at the end".
func validHolds(h []*event) []*validHold {
	var holds []*validHold
	open := map[int]*validHold{}
	expired := map[int64]bool{}
	calls := map[int]int64{}
	end := func(v *validHold, e *event, how string) {
		v.to, v.end, v.how = e.ts, e.step, how
		delete(open, v.client)
	}
	for _, e := range h {
		switch e.kind {
		case "lock":
			calls[e.client] = e.ts
		case "lock-ok":
			if expired[e.session] {
				continue // never valid: see lockHistory
			}
			v := &validHold{client: e.client, shared: e.shared, call: calls[e.client], token: e.token, session: e.session, from: e.ts, begin: e.step}
			open[e.client] = v
			holds = append(holds, v)
		case "model:expire":
			expired[e.session] = true
			for _, v := range open {
				if v.session == e.session {
					end(v, e, "its session expired")
				}
			}
		case "unlock":
			if v := open[e.client]; v != nil {
				end(v, e, "Unlock began")
			}
		}
	}
	last := int64(len(h) + 1)
	lastStep := 0
	if len(h) > 0 {
		lastStep = h[len(h)-1].step
	}
	for _, v := range holds {
		if v.to == 0 {
			v.to, v.end, v.how = last, lastStep, "still held at the end"
		}
	}
	return holds
}

// safetyVerdict names two overlapping valid holds: the clients, their tokens and the steps where each began
// and ended.
func safetyVerdict(h []*event) string {
	holds := validHolds(h)
	for i, a := range holds {
		for _, b := range holds[i+1:] {
			if a.client != b.client && b.from < a.to && a.from < b.to {
				return fmt.Sprintf("two clients held the lock at once: c%d (token %d) from step %d until step %d (%s), and c%d (token %d) from step %d until step %d (%s)",
					a.client, a.token, a.begin, a.end, a.how, b.client, b.token, b.begin, b.end, b.how)
			}
		}
	}
	return "two clients held the lock at once (porcupine: the lock history has no linearization; valid holds overlapped)"
}

// fencing reports a fenced access the register refused although its client held the lock validly and its
// Locker had not reported loss when it asked: the token did not exceed every earlier holder's, so the fence
// would shut out the rightful holder.
func fencing(h []*event) string {
	starts, ends := map[int64]*validHold{}, map[int64][]*validHold{}
	for _, v := range validHolds(h) {
		starts[v.from] = v
		ends[v.to] = append(ends[v.to], v)
	}
	valid := map[int]*validHold{} // client -> its valid hold now
	var (
		maxToken   int64
		maxClient  int
		maxStep    int
		maxWasRead bool
	)
	for _, e := range h {
		if v := starts[e.ts]; v != nil {
			valid[v.client] = v
		}
		for _, v := range ends[e.ts] {
			if valid[v.client] == v {
				delete(valid, v.client)
			}
		}
		if e.op == nil || e.op.token == 0 {
			continue
		}
		var admitted, refused bool
		switch e.kind {
		case "cs-value", "cs-refused":
			if e.op.readOK {
				admitted = true
			} else {
				refused = !e.op.lostAtRead
			}
		case "cs-write":
			if e.op.writeOK {
				admitted = true
			} else {
				refused = true
			}
		}
		if admitted && e.op.token >= maxToken {
			maxToken, maxClient, maxStep, maxWasRead = e.op.token, e.client, e.step, e.kind != "cs-write"
		}
		if v := valid[e.client]; refused && v != nil && v.token == e.op.token {
			access := "read"
			if e.kind == "cs-write" {
				access = "write"
			}
			by := "write"
			if maxWasRead {
				by = "read"
			}
			return fmt.Sprintf("the register refused c%d's %s at step %d although c%d held the lock validly (since step %d, token %d) and had not been told of loss: c%d's %s at step %d had used token %d; each holder's token must exceed every earlier holder's",
				e.client, access, e.step, e.client, v.begin, v.token, maxClient, by, maxStep, maxToken)
		}
	}
	return ""
}

// toldWhenLost reports a holder that lost its hold — its session expired, or a node its Lock call created
// was deleted by another client — and whose Locker's Lost() was still open lostBound later, with nothing
// else left to happen (see toldOfLoss): after Lock returned, it then entered its critical section unaware;
// before Unlock, it held on unaware. Lockers without Lost() are not asked, and nothing after the run's
// shutdown counts.
func toldWhenLost(h []*event) string {
	for _, e := range h {
		if e.kind == "shutdown" {
			break
		}
		if e.kind == "not-told" {
			return fmt.Sprintf("c%d was %s (step %d): a holder must be told of loss, through Lost(), within %s of virtual time", e.client, e.text, e.step, lostBound)
		}
	}
	return ""
}

// livenessVerdict says, for each client still blocked when the run ended, what it waits on: a watch on a
// node that still exists (and what that node's owner is doing), a watch on a node already gone, a watch
// that fired already, or no watch at all.
func livenessVerdict(h []*event, dump string, stuck []int) string {
	nodes := map[string]int64{} // lock node -> owner session
	for _, line := range strings.Split(dump, "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "node" {
			for _, kv := range f[2:] {
				if v, ok := strings.CutPrefix(kv, "owner="); ok {
					var owner int64
					fmt.Sscanf(v, "%v", &owner)
					nodes[f[1]] = owner
				}
			}
		}
	}
	owners := map[int64]int{} // session -> client
	type wait struct {
		path   string
		exists bool
		fired  int // the step whose event delivered the watch, or 0
		inLock bool
	}
	waits := map[int]*wait{}
	created := map[int]map[string]bool{} // the nodes each client created in its current Lock call
	for _, e := range h {
		if e.kind == "shutdown" {
			break
		}
		if e.session != 0 && e.client > 0 {
			owners[e.session] = e.client
		}
		switch e.kind {
		case "lock":
			waits[e.client] = &wait{inLock: true}
			created[e.client] = map[string]bool{}
		case "lock-ok", "lock-err":
			if w := waits[e.client]; w != nil {
				w.inLock = false
			}
		case "model:apply":
			w := waits[e.client]
			f0, f1, nf := firstFields(e.text)
			_, res, _ := strings.Cut(e.text, " -> ")
			if r0, _, nr := firstFields(res); nf > 0 && f0 == "create" && nr > 0 && created[e.client] != nil {
				created[e.client][r0] = true
			}
			if w == nil || nf < 2 || !strings.HasSuffix(f0, "W") {
				continue
			}
			w.path, w.fired = f1, 0
			w.exists = !strings.HasPrefix(res, "false") && !strings.HasPrefix(res, "error")
		case "model:event":
			if w := waits[e.client]; w != nil && w.path != "" && w.fired == 0 {
				if _, f1, nf := firstFields(e.text); nf > 1 && f1 == w.path {
					w.fired = e.step
				}
			}
		}
	}
	describe := func(c int) string {
		w := waits[c]
		switch {
		case w == nil || !w.inLock:
			return "not in Lock (blocked in its critical section or Unlock)"
		case w.path == "":
			return "in Lock with no watch at all"
		case w.fired > 0:
			return fmt.Sprintf("in Lock after its watch on %s fired at step %d: nothing else will wake it", w.path, w.fired)
		}
		owner, exists := nodes[w.path]
		if !exists {
			how := "which is already gone"
			if !w.exists {
				how = "which was already gone when it set the watch"
			}
			return fmt.Sprintf("in Lock on a watch on %s, %s: the watch can never fire", w.path, how)
		}
		who := ownerName(owners, owner)
		if oc := owners[owner]; oc != 0 && !created[oc][w.path] {
			who += fmt.Sprintf(", left behind: it is not the node of c%d's current Lock call", oc)
		}
		return fmt.Sprintf("in Lock on a watch on %s, which still exists (owner %s)", w.path, who)
	}
	parts := make([]string, 0, len(stuck))
	for _, c := range stuck {
		d := fmt.Sprintf("c%d is blocked %s", c, describe(c))
		if w := waits[c]; w != nil && w.path != "" && w.fired == 0 {
			if owner, ok := nodes[w.path]; ok {
				if oc := owners[owner]; oc != 0 && oc != c && slices.Contains(stuck, oc) {
					d += fmt.Sprintf(", and c%d is itself blocked", oc)
				}
			}
		}
		parts = append(parts, d)
	}
	return "after the faults stopped and every pending step was taken, clients were still blocked: " + strings.Join(parts, "; ")
}

func ownerName(owners map[int64]int, session int64) string {
	switch c := owners[session]; {
	case session == 0:
		return "none: a persistent node"
	case c == 0:
		return fmt.Sprintf("session %#x", session)
	default:
		return fmt.Sprintf("c%d, session %#x", c, session)
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
		shared   bool
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
			holds[e.client] = &open{call: calls[e.client], ok: e.ts, session: e.session, shared: e.shared}
			ops = append(ops, lockOp{client: e.client, acquire: true, call: calls[e.client], ret: e.ts, shared: e.shared})
		case "model:expire":
			expired[e.session] = true
			for c, o := range holds {
				if o.session == e.session && !o.ended {
					o.ended = true
					ops = append(ops, lockOp{client: c, call: e.ts, ret: e.ts, note: "its session expired", shared: o.shared})
				}
			}
		case "unlock":
			if o := holds[e.client]; o != nil && !o.ended {
				o.ended = true
				calls[e.client] = e.ts
				ops = append(ops, lockOp{client: e.client, call: e.ts, ret: never, note: "Unlock", shared: o.shared})
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
// request caused it. A waiter's watch on its own node (which tells it of loss) is no wake-up. Nothing after
// the run's shutdown counts.
//
// For a read-write lock, one write node's deletion may wake all the readers behind it: a change is a herd
// only when it woke more than one waiter and one of them waits for the write side.
//
// For the primitives beyond the mutex, a client whose session expired during its Lock call is no longer
// a waiter for the rest of that call: its place in line went with its session, and a watch it set on the
// new session with a request sent before (a semaphore's listing, say) fires while it gives up.
func herd(h []*event, prim Primitive) string {
	inLock := map[int]bool{}
	writer := map[int]bool{} // the client's current Lock call is for the write side
	watched := map[int]map[string]bool{}
	own := map[int]map[string]bool{} // the nodes each client created in its current Lock call
	type change struct {
		zxid int64
		path string
	}
	actor := map[int64]int{}
	woken := map[change][]int{}
	wokeWriter := map[change]int{} // the first waiter a change woke in a Lock call for the write side
	lastActor := 0
	var changes []change
	for _, e := range h {
		if e.kind == "shutdown" {
			break // the run is over: closing every client releases at once, and nobody waits any more
		}
		switch {
		case e.kind == "lock":
			inLock[e.client], watched[e.client], own[e.client] = true, emptied(watched[e.client]), emptied(own[e.client])
			writer[e.client] = !e.shared
		case e.kind == "lock-ok" || e.kind == "lock-err" || e.kind == "cancelled":
			// A cancelled client no longer waits; go-zookeeper cannot remove the watches it left behind.
			inLock[e.client] = false
		case e.kind == "model:apply":
			lastActor = e.client
			f0, f1, nf := firstFields(e.text)
			if nf > 1 && strings.HasSuffix(f0, "W") && inLock[e.client] {
				watched[e.client][f1] = true
			}
			if _, res, ok := strings.Cut(e.text, " -> "); ok && nf > 0 && f0 == "create" && inLock[e.client] {
				if r0, _, nr := firstFields(res); nr > 0 && strings.HasPrefix(r0, "/") {
					own[e.client][r0] = true
				}
			}
		case e.kind == "model:expire":
			lastActor = e.client
			if prim != Mutex && e.client != 0 {
				inLock[e.client] = false
			}
		case e.kind == "model:notify":
			if _, ok := actor[e.zxid]; !ok {
				actor[e.zxid] = lastActor
			}
			ch := change{e.zxid, e.path}
			if _, ok := woken[ch]; !ok {
				changes = append(changes, ch)
			}
			if e.client != actor[e.zxid] && inLock[e.client] && watched[e.client][e.path] && !own[e.client][e.path] {
				woken[ch] = append(woken[ch], e.client)
				if _, ok := wokeWriter[ch]; !ok && writer[e.client] {
					wokeWriter[ch] = e.client
				}
			} else if woken[ch] == nil {
				woken[ch] = []int{}
			}
		}
	}
	for _, ch := range changes {
		w := woken[ch]
		if len(w) > 1 && prim == ReadWrite {
			if c, ok := wokeWriter[ch]; ok {
				return fmt.Sprintf("one change (zxid %d, %s) woke %d waiters (%s), among them c%d, which waits for the write lock; a release may wake the readers behind it, but a writer should be woken alone", ch.zxid, ch.path, len(w), strings.TrimSuffix(strings.TrimPrefix(clientList(w), "clients "), " were"), c)
			}
			continue
		}
		if len(w) > 1 {
			return fmt.Sprintf("one change (zxid %d, %s) woke %d waiters (%s); each release should wake only the next client in line", ch.zxid, ch.path, len(w), strings.TrimSuffix(strings.TrimPrefix(clientList(w), "clients "), " were"))
		}
	}
	return ""
}

// emptied is m cleared for reuse, or a new map if m is nil: herd starts each Lock call's sets afresh.
func emptied(m map[string]bool) map[string]bool {
	if m == nil {
		return map[string]bool{}
	}
	clear(m)
	return m
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

// firstFields returns the first two fields of strings.Fields(s) ("" for a missing one) and how many of the
// two s has, without making the slice of them all: the properties read two words of every applied request.
func firstFields(s string) (first, second string, n int) {
	// ASCII text (the records are) is split here, as strings.Fields splits it; anything else goes to
	// strings.FieldsSeq, which knows Unicode's spaces.
	for i := 0; i < len(s) && n < 2; {
		for i < len(s) && asciiSpace(s[i]) {
			i++
		}
		start := i
		for i < len(s) && s[i] < utf8.RuneSelf && !asciiSpace(s[i]) {
			i++
		}
		if i < len(s) && s[i] >= utf8.RuneSelf {
			return firstFieldsUnicode(s)
		}
		if i == start {
			break
		}
		if n == 0 {
			first = s[start:i]
		} else {
			second = s[start:i]
		}
		n++
	}
	return first, second, n
}

// asciiSpace reports whether b is one of the ASCII bytes unicode.IsSpace counts as space.
func asciiSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\v' || b == '\f' || b == '\r'
}

// firstFieldsUnicode is firstFields for any text.
func firstFieldsUnicode(s string) (first, second string, n int) {
	for f := range strings.FieldsSeq(s) {
		if n == 0 {
			first = f
		} else {
			second = f
		}
		if n++; n == 2 {
			break
		}
	}
	return first, second, n
}

// linearizable is porcupine.CheckOperations(m, ops) for a model without partitions, answered without
// porcupine when the operations, in the order given, each returned before the next was called: then the
// history admits one order only, that one, and it is linearizable exactly when the model accepts the
// operations in it. Every critical section of a lock that kept mutual exclusion is such a history, and
// porcupine's search (a goroutine, a context and its entries per check, in every run) is left for histories
// that have a choice of order.
func linearizable(m porcupine.Model, ops []porcupine.Operation) bool {
	if m.Partition != nil || m.PartitionEvent != nil {
		return porcupine.CheckOperations(m, ops)
	}
	for i := range ops {
		if ops[i].Call > ops[i].Return || i > 0 && ops[i].Call <= ops[i-1].Return {
			return porcupine.CheckOperations(m, ops) // operations that overlap, or come out of order
		}
	}
	state := m.Init()
	for _, op := range ops {
		ok, next := m.Step(state, op.Input, op.Output)
		if !ok {
			return false
		}
		state = next
	}
	return true
}
