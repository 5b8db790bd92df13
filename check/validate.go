package check

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/zkmodel/zkmodel/internal/lockers"
)

// This file checks what a user's Factory or ZKFactory returned before a run uses it, so that a mistake is one
// sentence rather than a nil dereference inside the run's bubble (which aborts the whole test binary).

// nilLocker says how a Locker a Factory returned is nil — "a nil Locker", "a nil *pkg.T (a typed nil …)",
// "a Locker of NewElectionLocker whose Candidate is nil", "a pkg.T whose fields are all nil (l: a nil
// *zk.Lock) …" — or returns "" when it is not.
func nilLocker(l Locker) string {
	if l == nil {
		return "a nil Locker"
	}
	if isNilValue(l) {
		return fmt.Sprintf("a nil %T (a typed nil in a Locker: its methods would dereference nil)", l)
	}
	if name, role, inner, ok := adapted(l); ok {
		switch {
		case inner == nil:
			return fmt.Sprintf("a Locker of %s whose %s is nil", name, role)
		case isNilValue(inner):
			return fmt.Sprintf("a Locker of %s whose %s is a nil %T", name, role, inner)
		}
		return ""
	}
	if fields := nilFields(l); fields != "" {
		return fmt.Sprintf("a %T whose fields are all nil (%s; its methods would dereference nil)", l, fields)
	}
	return ""
}

// isNilValue reports whether v holds a nil pointer, map, func, channel, slice or interface.
func isNilValue(v any) bool {
	rv := reflect.ValueOf(v)
	return nilable(rv.Kind()) && rv.IsNil()
}

// nilable reports whether a value of the kind can be nil.
func nilable(k reflect.Kind) bool {
	switch k {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Chan, reflect.Slice, reflect.Interface, reflect.UnsafePointer:
		return true
	}
	return false
}

// nilFields describes the fields of a struct (or a pointer to one) that has fields and all of them nil —
// an adapter such as struct{ l *zk.Lock } around a nil lock — as "l: a nil *zk.Lock"; otherwise "".
func nilFields(v any) string {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Struct || rv.NumField() == 0 {
		return ""
	}
	var fields []string
	for i := range rv.NumField() {
		f := rv.Field(i)
		if !nilable(f.Kind()) || !f.IsNil() {
			return ""
		}
		fields = append(fields, fmt.Sprintf("%s: a nil %s", rv.Type().Field(i).Name, f.Type()))
	}
	return strings.Join(fields, ", ")
}

// adapted says what a Locker made by NewSemaphoreLocker or NewElectionLocker wraps: the constructor's name,
// the wrapped value's role and the value; ok is false for any other Locker.
func adapted(l Locker) (constructor, role string, inner any, ok bool) {
	switch a := l.(type) {
	case lockers.SemaphoreLocker:
		return "NewSemaphoreLocker", "Leaser", a.Leaser, true
	case lockers.ElectionLocker:
		return "NewElectionLocker", "Candidate", a.Candidate, true
	}
	return "", "", nil, false
}

// abandon ends a run whose setup failed: the clients it connected are closed (a go-zookeeper client's
// goroutines would otherwise outlive the bubble, which synctest reports as a deadlock) and forgotten.
func (r *run) abandon() {
	r.mu.Lock()
	for _, c := range r.clients {
		c.done = true // no workload started
	}
	r.mu.Unlock()
	r.shutdown()
}

// maxClients bounds Config.Clients, and maxClientRounds Clients × Rounds. A client's round costs about 16
// scheduler decisions without faults (measured: 3 clients of 2 rounds take 106 decisions, 300 take 9,583),
// and the fair drain that ends every run allows drainLimit (20,000) of them before it judges the run a
// livelock: past a few hundred rounds in all, a correct lock would be reported stuck. A run's cost also grows
// faster than its clients (one run of the recipe with every fault: 5 ms at 3 clients, 190 ms at 100, 1.6 s
// at 300), while the checker's bugs show with 2 to 5. 100 clients and 400 rounds in all keep a run under a
// third of the drain's budget and an exploration of the default 100 runs under half a minute.
const (
	maxClients      = 100
	maxClientRounds = 400
)

// validateScale refuses a Config whose size makes no sense: more clients or rounds than a run can drain, or
// a semaphore with a lease for every client (which never makes one wait). It judges the values the run will
// use, defaults included.
func (c Config) validateScale() error {
	d := c.withDefaults()
	if d.Clients > maxClients {
		return fmt.Errorf("check: Config.Clients is %d: at most %d (a run's cost grows faster than its clients, and the bugs the checker finds show with 2 to 5); use 3 to 10", c.Clients, maxClients)
	}
	if d.Clients*d.Rounds > maxClientRounds {
		return fmt.Errorf("check: Config.Clients × Config.Rounds is %d × %d = %d: at most %d rounds in all, or the fair drain that ends a run would cut a correct lock short; use fewer rounds (the default is 2)", d.Clients, d.Rounds, d.Clients*d.Rounds, maxClientRounds)
	}
	if d.Primitive == Semaphore && d.Leases >= d.Clients {
		leases := fmt.Sprint(c.Leases)
		if c.Leases == 0 {
			leases = fmt.Sprintf("0 (the default, %d)", d.Leases)
		}
		return fmt.Errorf("check: Config.Leases is %s with %d clients: with a lease for every client none ever waits, so the semaphore's admission is never tested; %s", leases, d.Clients, fewerLeases(d))
	}
	return nil
}

// fewerLeases says how to give a semaphore's Config fewer leases than clients.
func fewerLeases(d Config) string {
	if d.Clients < 2 {
		return fmt.Sprintf("set Config.Clients to %d or more", d.Leases+1)
	}
	return fmt.Sprintf("set Config.Leases to %d or fewer, or Config.Clients to %d or more", d.Clients-1, d.Leases+1)
}
