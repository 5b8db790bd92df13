package clients

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// The read-write lock scenarios: readers (A, B, …) then writers, each
// taking the lock iterations times.
const (
	rwReaders = 2
	rwWriters = 2
)

var readLine = regexp.MustCompile(`^read id=(\S+) iter=(\d+) node=(\S+) readers=(\d+)$`)

// rwScenario describes one read-write lock recipe's contender program.
type rwScenario struct {
	// command returns the contender process for id on connect under root,
	// a reader when read, taking the lock iters times.
	command func(ctx context.Context, connect, id string, read bool, iters int, root string) *exec.Cmd
	// readNode and writeNode match the recipe's lock node names; their
	// last group is the sequence number.
	readNode, writeNode *regexp.Regexp
	// readOnce makes each reader take the lock once, and the writers start
	// only once every reader is inside: for a recipe whose reader may wait
	// behind a write node created after its own, which deadlocks when that
	// writer waits for the reader (kazoo 2.8.0's ReadLock; see the README's
	// herd section). The readers still share, and the writers still wait for
	// them.
	readOnce bool
}

// runReadWrite runs the readers, and once each has its first lock node at
// ROOT/rw the writers, on tg under root, and checks what any correct
// read-write lock must give: every process exits 0 (the programs fail on a
// writer inside with anyone else); all readers were inside at once (they
// wait in their first iteration until one of them sees it, see
// java/ReadWriteContend.java); the writers' critical sections
// come one at a time, in the order of their lock nodes' sequence numbers;
// the lock nodes are named as the recipe names them; nothing is left
// behind. It returns the outcome without the random parts.
func runReadWrite(t *testing.T, tg target, sc rwScenario, root string) string {
	t.Helper()
	conn := freshRoot(t, tg, root, "counter", "inside")
	readIters := iterations
	if sc.readOnce {
		readIters = 1
	}
	before := func(i int) {
		if i == rwReaders {
			waitReadersIn(t, tg, conn, root, !sc.readOnce)
		}
	}
	results := runContenders(t, tg, rwReaders+rwWriters, before, func(ctx context.Context, id string) *exec.Cmd {
		if read := id < string(rune('A'+rwReaders)); read {
			return sc.command(ctx, tg.connect, id, true, readIters, root)
		}
		return sc.command(ctx, tg.connect, id, false, iterations, root)
	})

	reads, mostReaders := 0, 0
	var writes []acquisition
	for i, r := range results {
		iter := 0
		for line := range strings.Lines(r.stdout.String()) {
			line = strings.TrimRight(line, "\n")
			id, node := "", ""
			if i < rwReaders {
				m := readLine.FindStringSubmatch(line)
				if m == nil {
					t.Errorf("%s: reader %s printed %q, want only read lines", tg.name, r.id, line)
					continue
				}
				id, node = m[1], m[3]
				if !sc.readNode.MatchString(node) {
					t.Errorf("%s: reader %s held lock node %q, want a name matching %s", tg.name, r.id, node, sc.readNode)
				}
				n, _ := strconv.Atoi(m[4])
				mostReaders = max(mostReaders, n)
				reads++
			} else {
				m := acquiredLine.FindStringSubmatch(line)
				if m == nil {
					t.Errorf("%s: writer %s printed %q, want only acquired lines", tg.name, r.id, line)
					continue
				}
				id, node = m[1], m[3]
				a := acquisition{id: id, node: node}
				a.counter, _ = strconv.Atoi(m[4])
				nm := sc.writeNode.FindStringSubmatch(node)
				if nm == nil {
					t.Errorf("%s: writer %s held lock node %q, want a name matching %s", tg.name, r.id, node, sc.writeNode)
					continue
				}
				a.seq, _ = strconv.Atoi(nm[len(nm)-1])
				writes = append(writes, a)
			}
			if id != r.id || !strings.Contains(line, fmt.Sprintf(" iter=%d ", iter)) {
				t.Errorf("%s: contender %s line %d is %q, want id=%s iter=%d", tg.name, r.id, iter, line, r.id, iter)
			}
			iter++
		}
		if want := map[bool]int{true: readIters, false: iterations}[i < rwReaders]; iter != want {
			t.Errorf("%s: contender %s took the lock %d times, want %d:\n%s", tg.name, r.id, iter, want, r.stdout.String())
		}
	}
	if mostReaders != rwReaders {
		t.Errorf("%s: the most readers inside at once is %d, want %d", tg.name, mostReaders, rwReaders)
	}
	slices.SortFunc(writes, func(a, b acquisition) int { return a.counter - b.counter })
	for i, a := range writes {
		if a.counter != i {
			t.Errorf("%s: write %d saw counter=%d (%+v): two writers at once, or a lost update", tg.name, i, a.counter, a)
		}
		if i > 0 && a.seq <= writes[i-1].seq {
			t.Errorf("%s: writer %s of lock node %s wrote after %s of %s: want writers in sequence order", tg.name, a.id, a.node, writes[i-1].id, writes[i-1].node)
		}
	}
	var outcome strings.Builder
	fmt.Fprintf(&outcome, "reads %d, most readers inside at once %d\nwrites %d, one at a time in sequence order\n", reads, mostReaders, len(writes))

	checkCounter(t, tg, conn, root, rwWriters*iterations, &outcome)
	leftBehind(t, tg, conn, root, &outcome, "inside", "rw")
	return outcome.String()
}

// waitReadersIn returns once every reader is inside, or with nodesSuffice once every reader's first lock
// node exists under root/rw, or has: the readers may all be in and out again between two looks (seen once on
// a loaded machine, kazoo's readers done before the poll saw their two nodes), but the first of them to see
// all inside creates root/seen.
func waitReadersIn(t *testing.T, tg target, conn *zk.Conn, root string, nodesSuffice bool) {
	t.Helper()
	deadline := time.Now().Add(scenarioTimeout)
	for {
		children, _, err := conn.Children(root + "/rw")
		if nodesSuffice && err == nil && len(children) == rwReaders {
			return
		}
		seen, _, seenErr := conn.Exists(root + "/seen")
		if seenErr == nil && seen {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s/rw has children %v (%v) and %s/seen exists=%v (%v), want %d readers in", tg.name, root, children, err, root, seen, seenErr, rwReaders)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// rwArgs are the arguments both read-write programs take after their mode
// or class: CONNECT ID read|write ITERATIONS ROOT READERS.
func rwArgs(connect, id string, read bool, iters int, root string) []string {
	mode := "write"
	if read {
		mode = "read"
	}
	return []string{connect, id, mode, strconv.Itoa(iters), root, strconv.Itoa(rwReaders)}
}

// TestCuratorReadWriteLock: Curator 5.4's InterProcessReadWriteLock, readers
// and writers in separate JVMs (java/ReadWriteContend.java): readers share,
// writers exclude everyone — the same outcome on the model as on ZooKeeper.
func TestCuratorReadWriteLock(t *testing.T) {
	cp := curatorClassPath(t)
	sc := rwScenario{
		command: func(ctx context.Context, connect, id string, read bool, iters int, root string) *exec.Cmd {
			return curatorCommand(ctx, cp, "ReadWriteContend", rwArgs(connect, id, read, iters, root)...)
		},
		readNode:  regexp.MustCompile(curatorProtected + `__READ__([0-9]{10})$`),
		writeNode: regexp.MustCompile(curatorProtected + `__WRIT__([0-9]{10})$`),
	}
	sameOutcome(t, func(t *testing.T, tg target) string { return runReadWrite(t, tg, sc, "/curator-rwlock") })
}

// TestKazooReadWriteLock: kazoo 2.8's ReadLock and WriteLock, in separate
// Python processes (python/kazoo_lock.py rw) — the same checks as
// TestCuratorReadWriteLock, but for the readers taking the lock once, all
// before the writers: kazoo 2.8.0's ReadLock waits behind the last write node
// in the directory, even one created after its own, so a reader taking the
// lock while writers queue can deadlock with them (seen once on the real
// ensemble: two readers' 60 s timeouts in a fresh-clone make test).
func TestKazooReadWriteLock(t *testing.T) {
	needKazoo(t, "kazoo.recipe.lock")
	sc := rwScenario{
		command: func(ctx context.Context, connect, id string, read bool, iters int, root string) *exec.Cmd {
			return kazooCommand(ctx, "rw", rwArgs(connect, id, read, iters, root)...)
		},
		readNode:  regexp.MustCompile(`^[0-9a-f]{32}__rlock__([0-9]{10})$`),
		writeNode: kazooLockNode,
		readOnce:  true,
	}
	sameOutcome(t, func(t *testing.T, tg target) string { return runReadWrite(t, tg, sc, "/kazoo-rwlock") })
}
