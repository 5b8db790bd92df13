package check

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/recipe"
)

// This file points the checker at a user's semaphore and election, as a user's own test would: through
// NewSemaphoreLocker and NewElectionLocker, on recipe.Conn (Run) and on *zk.Conn (RunZK).

// TestRunAcceptsAUsersSemaphore: Run checks a semaphore made by the user's Factory on recipe.Conn — here the
// recipe's, with one lease (TestPrimitiveRecipesPassAndShare explores two) — with every fault kind.
func TestRunAcceptsAUsersSemaphore(t *testing.T) {
	f := func(conn recipe.Conn, path string) Locker {
		return NewSemaphoreLocker(recipe.NewSemaphore(conn.(recipe.WatchConn), path, 1, recipe.WithRandom(RandFor(conn))))
	}
	rep := Run(t, f, Config{Name: "users-semaphore", Primitive: Semaphore, Leases: 1, Faults: AllFaults, Checks: 100, TraceDir: t.TempDir()})
	if rep.Failed {
		t.Fatalf("users-semaphore: %s: %s", rep.Property, rep.Verdict)
	}
}

// TestRunZKAcceptsAUsersSemaphoreAndElection: RunZK checks a semaphore and an election written against
// *zk.Conn, as it checks a mutex: the recipe's, built by the user's own ZKFactory. The semaphore has one
// lease, so that a few runs reach every lease held (with two, a few runs in a hundred do).
func TestRunZKAcceptsAUsersSemaphoreAndElection(t *testing.T) {
	sem := func(conn *zk.Conn, path string) Locker {
		return NewSemaphoreLocker(recipe.NewSemaphore(conn, path, 1, recipe.WithRandom(RandFor(conn))))
	}
	rep := RunZK(t, sem, Config{Name: "users-semaphore-wire", Primitive: Semaphore, Leases: 1, Faults: AllFaults, Checks: 30, TraceDir: t.TempDir()})
	if rep.Failed {
		t.Fatalf("users-semaphore-wire: %s: %s", rep.Property, rep.Verdict)
	}
	elect := func(conn *zk.Conn, path string) Locker {
		return NewElectionLocker(recipe.NewElection(conn, path, recipe.WithRandom(RandFor(conn))), []byte("worker"))
	}
	rep = RunZK(t, elect, Config{Name: "users-election-wire", Primitive: Election, Faults: AllFaults, Checks: 30, TraceDir: t.TempDir()})
	if rep.Failed {
		t.Fatalf("users-election-wire: %s: %s", rep.Property, rep.Verdict)
	}
}

// TestRunZKChecksAUsersOwnElection: a user's own election on *zk.Conn (userElection below, no recipe in it)
// passes RunZK's exploration without faults, and the same election with the leader's check left out (it
// leads as soon as its node exists) is caught: two leaders at once.
func TestRunZKChecksAUsersOwnElection(t *testing.T) {
	for _, c := range []struct {
		name   string
		eager  bool
		expect string
	}{{"users-own-election", false, ""}, {"users-own-election-eager", true, "safety"}} {
		t.Run(c.name, func(t *testing.T) {
			f := func(conn *zk.Conn, path string) Locker {
				return NewElectionLocker(&userElection{conn: conn, dir: path, eager: c.eager}, []byte(c.name))
			}
			cfg := Config{Name: c.name, Primitive: Election, Faults: 0, Checks: 30, TraceDir: t.TempDir()}
			if c.expect == "" {
				if rep := RunZK(t, f, cfg); rep.Failed {
					t.Fatalf("%s: %s: %s", c.name, rep.Property, rep.Verdict)
				}
				return
			}
			out := seededFailure(t, Variant{Name: c.name, ZKFactory: f, Config: cfg}, cfg.withDefaults(), 200)
			if out.property != c.expect {
				t.Fatalf("%s: caught by %s (%s), want %s", c.name, out.property, out.verdict, c.expect)
			}
		})
	}
}

// userElection is an election as a user might write it on *zk.Conn, without faults in mind: an ephemeral
// sequential node, the lowest leads, the others watch their predecessor. With eager it leads at once.
type userElection struct {
	conn  *zk.Conn
	dir   string
	eager bool
	node  string
	token int64
}

func (e *userElection) Campaign(ctx context.Context, value []byte) error {
	node, err := e.conn.Create(e.dir+"/n-", value, zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll))
	if err != nil {
		return fmt.Errorf("user election: create: %w", err)
	}
	for {
		kids, _, err := e.conn.Children(e.dir)
		if err != nil {
			return fmt.Errorf("user election: list: %w", err)
		}
		slices.Sort(kids) // one prefix and ten-digit sequence numbers: name order is sequence order
		me := slices.Index(kids, strings.TrimPrefix(node, e.dir+"/"))
		if me < 0 {
			return errors.New("user election: my node is gone")
		}
		if me == 0 || e.eager {
			ok, st, err := e.conn.Exists(node)
			if err != nil || !ok {
				return fmt.Errorf("user election: confirm my node: %v, %w", ok, err)
			}
			e.node, e.token = node, st.Czxid
			return nil
		}
		ok, _, ch, err := e.conn.ExistsW(e.dir + "/" + kids[me-1])
		if err != nil {
			return fmt.Errorf("user election: watch: %w", err)
		}
		if !ok {
			continue
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return errors.Join(ctx.Err(), e.conn.Delete(node, -1))
		}
	}
}

func (e *userElection) Resign(context.Context) error {
	node := e.node
	e.node, e.token = "", 0
	if err := e.conn.Delete(node, -1); err != nil {
		return fmt.Errorf("user election: resign: %w", err)
	}
	return nil
}

func (e *userElection) Token() int64 { return e.token }

// TestRunProvesAUsersLockWithDPOR: a user's proof of a lock within a preemption bound, by DPOR (Config.DPOR)
// through Run as a user calls it: every complete schedule of two clients with at most two preemptions
// passes, one search (one worker), in fewer schedules than the same bound without reduction. (Mutants under
// DPOR: TestProve, whose rows without a fault reduce by it.)
func TestRunProvesAUsersLockWithDPOR(t *testing.T) {
	lock := func(conn recipe.Conn, path string) Locker {
		return recipe.NewLock(conn.(recipe.WatchConn), path, recipe.WithRandom(RandFor(conn)))
	}
	cfg := Config{Name: "users-proof", Clients: 2, Rounds: 1, Exhaustive: true, Preemptions: 2, TraceDir: t.TempDir()}
	plain := cfg
	plain.NoReduction = true
	full := Run(t, lock, plain)
	cfg.DPOR = true
	rep := Run(t, lock, cfg)
	if rep.Failed || !rep.Exhausted || rep.Workers != 1 || rep.Schedules == 0 || rep.Schedules >= full.Schedules {
		t.Errorf("DPOR: %s (workers %d, schedules %d); without reduction: %d schedules", rep, rep.Workers, rep.Schedules, full.Schedules)
	}
}
