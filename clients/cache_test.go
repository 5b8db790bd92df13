package clients

import (
	"bytes"
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
)

// TestCuratorCache: Curator 5.4's CuratorCache, which keeps its copy of a
// tree with a persistent recursive watch (addWatch, ZooKeeper 3.6+), and
// Curator's own addWatch and removeWatches calls, in a JVM (java/CacheWatch.java):
// every cache event and watch event, in order, must be the same on the model
// and on ZooKeeper.
func TestCuratorCache(t *testing.T) {
	cp := curatorClassPath(t)
	sameOutcome(t, func(t *testing.T, tg target) string {
		const root = "/curator-cache"
		conn := dialZK(t, tg)
		if err := deleteTree(conn, root); err != nil {
			t.Fatalf("%s: %v", tg.name, err)
		}
		if _, err := conn.Create(root, []byte("r"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("%s: create %s: %v", tg.name, root, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
		defer cancel()
		args := append(slices.Clone(jvmFlags), "-cp", cp, "CacheWatch", tg.connect, root)
		var stdout, stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, java, args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: CacheWatch: %v (%s)\nstdout:\n%s\nstderr:\n%s", tg.name, err, installHint, stdout.String(), stderr.String())
		}
		out := stdout.String()
		if !strings.HasSuffix(out, "done\n") {
			t.Fatalf("%s: CacheWatch did not finish:\n%s", tg.name, out)
		}
		if err := deleteTree(conn, root); err != nil {
			t.Errorf("%s: %v", tg.name, err)
		}
		return out
	})
}
