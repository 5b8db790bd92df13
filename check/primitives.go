package check

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
)

// This file is what the primitives beyond the mutex (Config.Primitive) are judged by: their porcupine
// models, the order their tokens must grow in, and the reachability of their sharing. The scheduler, the
// workload and the other properties are the mutex's.

// rwState is a read-write lock's state: the writer (0: none) and the readers, a bit per client.
type rwState struct {
	writer  int
	readers uint64
}

// rwModel is a read-write lock: a writer holds alone, readers share.
var rwModel = porcupine.Model{
	Init: func() any { return rwState{} },
	Step: func(state, input, _ any) (bool, any) {
		s, op := state.(rwState), input.(lockOp)
		bit := uint64(1) << (op.client - 1)
		switch {
		case op.acquire && op.shared:
			return s.writer == 0, rwState{writer: s.writer, readers: s.readers | bit}
		case op.acquire:
			return s.writer == 0 && s.readers == 0, rwState{writer: op.client, readers: s.readers}
		case op.shared:
			return s.readers&bit != 0, rwState{writer: s.writer, readers: s.readers &^ bit}
		}
		return s.writer == op.client, rwState{readers: s.readers}
	},
	DescribeOperation: func(input, _ any) string {
		op := input.(lockOp)
		side := "write"
		if op.shared {
			side = "read"
		}
		if op.acquire {
			return fmt.Sprintf("c%d acquires the %s lock", op.client, side)
		}
		return fmt.Sprintf("c%d releases the %s lock (%s)", op.client, side, op.note)
	},
	DescribeState: func(state any) string {
		s := state.(rwState)
		switch {
		case s.writer != 0:
			return fmt.Sprintf("written by c%d", s.writer)
		case s.readers != 0:
			return "read by " + strings.TrimSuffix(strings.TrimPrefix(clientList(bitClients(s.readers)), "clients "), " were")
		}
		return "free"
	},
}

// semaphoreModel is a counting semaphore of n leases: at most n holders at once. State: the holders, a bit
// per client.
func semaphoreModel(n int) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return uint64(0) },
		Step: func(state, input, _ any) (bool, any) {
			s, op := state.(uint64), input.(lockOp)
			bit := uint64(1) << (op.client - 1)
			if op.acquire {
				return s&bit == 0 && bits.OnesCount64(s) < n, s | bit
			}
			return s&bit != 0, s &^ bit
		},
		DescribeOperation: func(input, _ any) string {
			op := input.(lockOp)
			if op.acquire {
				return fmt.Sprintf("c%d acquires a lease", op.client)
			}
			return fmt.Sprintf("c%d releases its lease (%s)", op.client, op.note)
		},
		DescribeState: func(state any) string {
			if state.(uint64) == 0 {
				return "no lease held"
			}
			return "leases held by " + strings.TrimSuffix(strings.TrimPrefix(clientList(bitClients(state.(uint64))), "clients "), " were")
		},
	}
}

func bitClients(set uint64) []int {
	var ids []int
	for c := 1; set != 0; c, set = c+1, set>>1 {
		if set&1 != 0 {
			ids = append(ids, c)
		}
	}
	return ids
}

// holdModel is the porcupine model a primitive's holds are judged by.
func holdModel(cfg Config) porcupine.Model {
	switch cfg.Primitive {
	case ReadWrite:
		return rwModel
	case Semaphore:
		return semaphoreModel(cfg.Leases)
	}
	return lockModel
}

// evaluatePrimitive is evaluate for a read-write lock, a semaphore or an election: the properties in order
// of gravity, the first violation recorded.
func (o *outcome) evaluatePrimitive(cfg Config, stuck []int, leftovers []string) {
	o.lockOps = lockHistory(o.history)
	holds := validHolds(o.history)
	o.shared = reachedSharing(cfg, holds)
	if !linearizable(holdModel(cfg), toOps(o.lockOps)) {
		o.property, o.verdict = "safety", primitiveSafetyVerdict(cfg, o.history)
		return
	}
	if cfg.Primitive != Semaphore && !linearizable(registerModel, csOperations(o.history)) {
		o.property = "fenced-register"
		o.verdict = "critical sections interleaved: a fenced access of the register saw or lost what an exclusive holder's read-modify-write did (porcupine: not linearizable)"
		return
	}
	switch cfg.Primitive {
	case Semaphore:
		// The register admits every holder's access, so fencing is the order of the tokens.
		if v := tokenOrder(holds, true, "lease"); v != "" {
			o.property, o.verdict = "fencing", v
			return
		}
	case Election:
		if v := tokenOrder(holds, false, "leadership"); v != "" {
			o.property, o.verdict = "token-order", v
			return
		}
	}
	o.evaluateRest(cfg.Primitive, stuck, leftovers)
}

// primitiveSafetyVerdict names the valid holds that overlapped when they must not have.
func primitiveSafetyVerdict(cfg Config, h []*event) string {
	holds := validHolds(h)
	span := func(v *validHold) string {
		return fmt.Sprintf("c%d (token %d) from step %d until step %d (%s)", v.client, v.token, v.begin, v.end, v.how)
	}
	switch cfg.Primitive {
	case ReadWrite:
		side := func(v *validHold) string {
			if v.shared {
				return "read"
			}
			return "write"
		}
		for i, a := range holds {
			for _, b := range holds[i+1:] {
				if a.client != b.client && b.from < a.to && a.from < b.to && (!a.shared || !b.shared) {
					return fmt.Sprintf("a writer held the lock beside another holder: %s held the %s lock, and %s the %s lock", span(a), side(a), span(b), side(b))
				}
			}
		}
		return "a writer held the lock beside another holder (porcupine: the read-write history has no linearization)"
	case Semaphore:
		for _, b := range holds {
			var at []*validHold
			for _, a := range holds {
				if a.from <= b.from && b.from < a.to {
					at = append(at, a)
				}
			}
			if len(at) > cfg.Leases {
				parts := make([]string, len(at))
				for i, a := range at {
					parts[i] = span(a)
				}
				return fmt.Sprintf("%d clients held a lease at once, with %d leases: %s", len(at), cfg.Leases, strings.Join(parts, "; "))
			}
		}
		return fmt.Sprintf("more than %d clients held a lease at once (porcupine: the semaphore history has no linearization)", cfg.Leases)
	}
	return strings.Replace(safetyVerdict(h), "held the lock at once", "led at once", 1)
}

// tokenOrder reports a valid hold whose token does not exceed that of an earlier valid hold which had ended
// before it: before it began (after for a leader: leaders do not overlap), or before its Lock call (byCall,
// for a semaphore, whose holders may be granted in another order than their calls return).
func tokenOrder(holds []*validHold, byCall bool, what string) string {
	for _, b := range holds {
		if b.token == 0 {
			continue
		}
		start, since := b.from, "began"
		if byCall {
			start, since = b.call, "asked for it"
		}
		for _, a := range holds {
			if a != b && a.token != 0 && a.to < start && b.token <= a.token {
				return fmt.Sprintf("c%d's %s from step %d has token %d, not above the token %d of c%d's %s from step %d, which had ended (%s at step %d) before c%d %s: each token must exceed every earlier holder's",
					b.client, what, b.begin, b.token, a.token, a.client, what, a.begin, a.how, a.end, b.client, since)
			}
		}
	}
	return ""
}

// reachedSharing says whether the run reached what the primitive must allow: two valid read holds at once
// (ReadWrite), or Leases valid holds at once (Semaphore).
func reachedSharing(cfg Config, holds []*validHold) bool {
	var need int
	switch cfg.Primitive {
	case ReadWrite:
		need = 2
	case Semaphore:
		need = cfg.Leases
	default:
		return false
	}
	for _, b := range holds {
		if cfg.Primitive == ReadWrite && !b.shared {
			continue
		}
		n := 0
		for _, a := range holds {
			if (a.shared || cfg.Primitive != ReadWrite) && a.from <= b.from && b.from < a.to {
				n++
			}
		}
		if n >= need {
			return true
		}
	}
	return false
}

// reachability judges the runs of an exploration together: a read-write lock whose readers never shared,
// or a semaphore whose leases were never all held at once, in any of them, fails although every run kept
// every property. It returns the property and verdict, or two empty strings.
func reachability(cfg Config, runs int, reached bool) (property, verdict string) {
	if reached {
		return "", ""
	}
	switch cfg.Primitive {
	case ReadWrite:
		return "readers-share", fmt.Sprintf("in %d interleavings no two readers ever held the read lock at once: readers must share", runs)
	case Semaphore:
		return "leases-share", fmt.Sprintf("in %d interleavings the %d leases were never all held at once", runs, cfg.Leases)
	}
	return "", ""
}

// reachabilityProperties are the properties of all the runs together: their failures have no trace.
var reachabilityProperties = []string{"readers-share", "leases-share"}

func isReachability(property string) bool { return slices.Contains(reachabilityProperties, property) }
