package clients

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The semaphore scenarios: contenders share leases, each taking one
// iterations times.
const (
	semContenders = 4
	semLeases     = 2
)

var leasedLine = regexp.MustCompile(`^leased id=(\S+) iter=(\d+) node=(\S+) most=(\d+)$`)

// semaphoreScenario describes one semaphore recipe's contender program.
type semaphoreScenario struct {
	// command returns the contender process for id on connect under root.
	command func(ctx context.Context, connect, id, root string) *exec.Cmd
	// leaseNode matches the recipe's lease node names.
	leaseNode *regexp.Regexp
	// leaseDir and lockDir are where the recipe keeps its lease nodes and
	// the lock it takes leases under, relative to root.
	leaseDir, lockDir string
}

// runSemaphore runs the contenders on tg under root and checks what any
// correct semaphore must give: every process exits 0 and takes its leases;
// no one ever saw more holders than leases, and someone saw them all taken
// (the contenders wait for that, see java/SemaphoreLease.java); lease nodes
// are named as the recipe names them; no lease, lock node or holder is left
// behind. It returns the outcome without the random parts, for comparing
// targets.
func runSemaphore(t *testing.T, tg target, sc semaphoreScenario, root string) string {
	t.Helper()
	conn := freshRoot(t, tg, root, "holders", "done")
	results := runContenders(t, tg, semContenders, nil, func(ctx context.Context, id string) *exec.Cmd {
		return sc.command(ctx, tg.connect, id, root)
	})
	most, leased := 0, 0
	for _, r := range results {
		iter := 0
		for line := range strings.Lines(r.stdout.String()) {
			line = strings.TrimRight(line, "\n")
			m := leasedLine.FindStringSubmatch(line)
			if m == nil {
				t.Errorf("%s: contender %s printed %q, want only leased lines", tg.name, r.id, line)
				continue
			}
			if m[1] != r.id || m[2] != strconv.Itoa(iter) {
				t.Errorf("%s: contender %s line %d is %q, want id=%s iter=%d", tg.name, r.id, iter, line, r.id, iter)
			}
			if !sc.leaseNode.MatchString(m[3]) {
				t.Errorf("%s: contender %s held lease node %q, want a name matching %s", tg.name, r.id, m[3], sc.leaseNode)
			}
			n, _ := strconv.Atoi(m[4])
			most = max(most, n)
			iter++
		}
		if iter != iterations {
			t.Errorf("%s: contender %s took %d leases, want %d:\n%s", tg.name, r.id, iter, iterations, r.stdout.String())
		}
		leased += iter
	}
	if most != semLeases {
		t.Errorf("%s: the most holders anyone saw is %d, want %d (all leases taken at least once, never more)", tg.name, most, semLeases)
	}
	var outcome strings.Builder
	fmt.Fprintf(&outcome, "leases taken %d, most holders at once %d\n", leased, most)
	leftBehind(t, tg, conn, root, &outcome, "holders", sc.leaseDir, sc.lockDir)
	return outcome.String()
}

// semaphoreArgs are the arguments both semaphore programs take after their
// mode or class: CONNECT ID ITERATIONS ROOT LEASES CONTENDERS.
func semaphoreArgs(connect, id, root string) []string {
	return []string{connect, id, strconv.Itoa(iterations), root, strconv.Itoa(semLeases), strconv.Itoa(semContenders)}
}

// TestCuratorSemaphore: Curator 5.4's InterProcessSemaphoreV2 with more
// contenders (JVMs, java/SemaphoreLease.java) than leases — the same
// outcome on the model as on ZooKeeper.
func TestCuratorSemaphore(t *testing.T) {
	cp := curatorClassPath(t)
	sc := semaphoreScenario{
		command: func(ctx context.Context, connect, id, root string) *exec.Cmd {
			return curatorCommand(ctx, cp, "SemaphoreLease", semaphoreArgs(connect, id, root)...)
		},
		leaseNode: regexp.MustCompile(curatorProtected + `lease-[0-9]{10}$`),
		leaseDir:  "sem/leases",
		lockDir:   "sem/locks",
	}
	sameOutcome(t, func(t *testing.T, tg target) string { return runSemaphore(t, tg, sc, "/curator-semaphore") })
}

// TestKazooSemaphore: kazoo 2.8's Semaphore with more contenders (Python
// processes, python/kazoo_lock.py lease) than leases — the same outcome on
// the model as on ZooKeeper.
func TestKazooSemaphore(t *testing.T) {
	needKazoo(t, "kazoo.recipe.lock")
	sc := semaphoreScenario{
		command: func(ctx context.Context, connect, id, root string) *exec.Cmd {
			return kazooCommand(ctx, "lease", semaphoreArgs(connect, id, root)...)
		},
		leaseNode: regexp.MustCompile(`^[0-9a-f]{32}$`),
		leaseDir:  "sem",
		lockDir:   "sem-__lock__",
	}
	sameOutcome(t, func(t *testing.T, tg target) string { return runSemaphore(t, tg, sc, "/kazoo-semaphore") })
}
