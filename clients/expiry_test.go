package clients

import (
	"context"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkmodel/zkmodel/realzk"
)

// holderTimeout is the session timeout the expiring holder asks for, in
// seconds: short, so that the real server expires it soon after its
// connection is frozen.
const holderTimeout = "2"

var (
	sessionLine = regexp.MustCompile(`^session (0x[0-9a-f]+)$`)
	holderLine  = regexp.MustCompile(`^acquired id=(\S+) node=[0-9a-f]{32}__lock__([0-9]{10})$`)
	anyLine     = func(re *regexp.Regexp) func(string) bool { return re.MatchString }
)

// TestKazooHolderExpires: kazoo client A holds the Lock, B waits; A's
// session expires (on the model: Server.Expire, what zkmodel's /expire
// does; on ZooKeeper: A's connection is frozen until the server expires
// the session). B must then hold the lock, A must learn its session is
// lost, and A's lock node must be gone — the same on both.
func TestKazooHolderExpires(t *testing.T) {
	sameOutcome(t, func(t *testing.T, tg target) string {
		const root = "/kazoo-expire"
		conn := dialZK(t, tg)
		if err := deleteTree(conn, root); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Create(root, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("%s: create %s: %v", tg.name, root, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
		defer cancel()
		holder := func(id, connect string) *process {
			cmd := exec.CommandContext(ctx, python, kazooScript, "hold", connect, id, root, holderTimeout)
			return startProcess(t, tg.name+": kazoo "+id, cmd)
		}

		aConnect := tg.connect
		var proxy *realzk.Proxy
		if tg.model == nil {
			var err error
			if proxy, err = realzk.NewProxy(ctx, strings.Split(tg.connect, ",")[0]); err != nil {
				t.Fatalf("%s: proxy: %v", tg.name, err)
			}
			defer proxy.Close()
			aConnect = proxy.Addr()
		}
		a := holder("A", aConnect)
		sid, err := strconv.ParseUint(sessionLine.FindStringSubmatch(a.waitLine(t, "its session", anyLine(sessionLine), 1))[1], 0, 64)
		if err != nil {
			t.Fatal(err)
		}
		aHeld := holderLine.FindStringSubmatch(a.waitLine(t, "acquired", anyLine(holderLine), 1))

		b := holder("B", tg.connect)
		waitChildren(t, tg, conn, root+"/lock", 2) // B waits behind A

		if tg.model != nil {
			tg.model.Expire(int64(sid))
		} else {
			proxy.Freeze()
		}
		bHeld := holderLine.FindStringSubmatch(b.waitLine(t, "acquired", anyLine(holderLine), 1))
		if proxy != nil {
			proxy.Unfreeze()
		}
		a.waitFor(t, "lost", 1)
		if err := a.finish(); err != nil {
			t.Errorf("%s: kazoo A: %v\nstderr:\n%s", tg.name, err, a.stderr.String())
		}
		left, _, err := conn.Children(root + "/lock")
		if err != nil {
			t.Fatalf("%s: %v", tg.name, err)
		}
		b.send(t, "release\n")
		b.waitFor(t, "released", 1)
		if err := b.finish(); err != nil {
			t.Errorf("%s: kazoo B: %v\nstderr:\n%s", tg.name, err, b.stderr.String())
		}
		if aHeld[2] != "0000000000" || bHeld[2] != "0000000001" || len(left) != 1 {
			t.Errorf("%s: A held sequence %s, B %s, lock nodes while B held: %v; want 0, 1 and B's alone", tg.name, aHeld[2], bHeld[2], left)
		}
		after, _, err := conn.Children(root + "/lock")
		if err != nil || len(after) != 0 {
			t.Errorf("%s: lock nodes after B released: %v (%v), want none", tg.name, after, err)
		}
		return "A held sequence " + aHeld[2] + ", its session expired, A saw LOST\n" +
			"B then held sequence " + bHeld[2] + " with " + strconv.Itoa(len(left)) + " lock node(s), released, " + strconv.Itoa(len(after)) + " left\n"
	})
}

// waitChildren waits until path has n children.
func waitChildren(t *testing.T, tg target, conn *zk.Conn, path string, n int) {
	t.Helper()
	deadline := time.Now().Add(scenarioTimeout)
	for {
		children, _, err := conn.Children(path)
		if err == nil && len(children) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s has children %v (%v), want %d", tg.name, path, children, err, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
