package check

import (
	"slices"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/model"
)

// TestLockNodesListsTheEphemeralsLeftUnderTheLock: what a run's clients leave behind is read from the model's
// dump: the ephemeral nodes under the lock's directory, whoever owns them, and not its persistent ones nor
// nodes elsewhere.
func TestLockNodesListsTheEphemeralsLeftUnderTheLock(t *testing.T) {
	srv := model.NewServer()
	conn, _, err := srv.Connect(sessionTimeout)
	if err != nil {
		t.Fatal(err)
	}
	acl := zk.WorldACL(zk.PermAll)
	for _, n := range []struct {
		path  string
		flags int32
	}{{lockDir, 0}, {lockDir + "/a", zk.FlagEphemeral}, {lockDir + "/leases", 0}, {lockDir + "/n-", zk.FlagEphemeralSequential}, {"/other", zk.FlagEphemeral}} {
		if _, err := conn.Create(n.path, []byte("x y"), n.flags, acl); err != nil {
			t.Fatalf("create %s: %v", n.path, err)
		}
	}
	want := []string{lockDir + "/a", lockDir + "/n-0000000002"}
	if got := lockNodes(srv.Dump()); !slices.Equal(got, want) {
		t.Fatalf("lockNodes = %q, want %q\ndump:\n%s", got, want, srv.Dump())
	}
	if got := lockNodes(""); got != nil {
		t.Fatalf("lockNodes of an empty dump = %q, want none", got)
	}
}

// TestFirstFieldsAreStringsFields: the properties' two-word reading of a record agrees with strings.Fields.
func TestFirstFieldsAreStringsFields(t *testing.T) {
	for _, s := range []string{"", "  ", "create", "existsW /lock/n-1 -> true version=0", " \t getChildren  /lock\u00a0x ", "/lock/n-0000000001 zxid=5"} {
		f := strings.Fields(s)
		first, second, n := firstFields(s)
		want := f[:min(len(f), 2)]
		got := []string{first, second}[:n]
		if !slices.Equal(got, want) || n == 0 && first != "" || n < 2 && second != "" {
			t.Errorf("firstFields(%q) = %q, %q, %d; want the first two of %q", s, first, second, n, f)
		}
	}
}
