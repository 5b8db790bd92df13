package check

import (
	"slices"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/model"
)

// TestLeftoverNodes: what a run's clients leave behind is read from the model's dump and the history: the
// ephemeral nodes under the lock's directory, whoever owns them, and every node a client created, ephemeral
// or persistent, unless it is structure (a node something was created under, or a plain create's path that
// was asked for more than once); not the lock's own directory, nor nodes elsewhere nobody created in the run.
func TestLeftoverNodes(t *testing.T) {
	srv := model.NewServer()
	conn, _, err := srv.Connect(sessionTimeout)
	if err != nil {
		t.Fatal(err)
	}
	acl := zk.WorldACL(zk.PermAll)
	for _, n := range []struct {
		path  string
		flags int32
	}{{lockDir, 0}, {lockDir + "/a", zk.FlagEphemeral}, {lockDir + "/leases", 0}, {lockDir + "/n-", zk.FlagEphemeralSequential},
		{"/other", zk.FlagEphemeral}, {lockDir + "/leases/x", 0}, {lockDir + "/record", 0}, {lockDir + "/locks", 0}, {lockDir + "/p-", zk.FlagSequence}} {
		if _, err := conn.Create(n.path, []byte("x y"), n.flags, acl); err != nil {
			t.Fatalf("create %s: %v", n.path, err)
		}
	}
	want := []string{lockDir + "/a", lockDir + "/n-0000000002"}
	if got := leftoverNodes(nil, srv.Dump()); !slices.Equal(got, want) {
		t.Fatalf("leftoverNodes without a history = %q, want %q\ndump:\n%s", got, want, srv.Dump())
	}
	apply := func(client int, text string) *event { return &event{kind: "model:apply", client: client, text: text} }
	h := []*event{
		apply(1, `create /lock/leases flags=0 data="" -> /lock/leases zxid=7`),
		apply(1, `create /lock/leases/x flags=0 data="" -> /lock/leases/x zxid=8`),
		apply(2, `create /lock/record flags=0 data="" -> /lock/record zxid=9`),
		apply(2, `create /lock/locks flags=0 data="" -> /lock/locks zxid=10`),
		apply(3, `create /lock/locks flags=0 data="" -> error "zk: node already exists" zxid=10`),
		apply(3, `create /lock/p- flags=2 data="" -> /lock/p-0000000005 zxid=11`),
		apply(0, `create /other flags=1 data="" -> /other zxid=12`),
		{kind: "shutdown"},
		apply(1, `create /lock/leases/x flags=0 data="" -> error "zk: node already exists" zxid=13`),
	}
	want = []string{lockDir + "/a", lockDir + "/leases/x (persistent)", lockDir + "/n-0000000002", lockDir + "/p-0000000005 (persistent)", lockDir + "/record (persistent)"}
	if got := leftoverNodes(h, srv.Dump()); !slices.Equal(got, want) {
		t.Fatalf("leftoverNodes = %q, want %q\ndump:\n%s", got, want, srv.Dump())
	}
	if got := leftoverNodes(h, ""); got != nil {
		t.Fatalf("leftoverNodes of an empty dump = %q, want none", got)
	}
}

// TestFirstFieldsAreStringsFields: the properties' two-word reading of a record agrees with strings.Fields.
func TestFirstFieldsAreStringsFields(t *testing.T) {
	for _, s := range []string{"", "  ", "create", "existsW /lock/n-1 -> true version=0", " \t getChildren  /lock\u00a0x ", "/lock/n-0000000001 zxid=5",
		"\u00a0a b", "a\u0085b c", "é b", "a b\u00a0c", "a\v\fb\rc", "a b c d"} {
		f := strings.Fields(s)
		first, second, n := firstFields(s)
		want := f[:min(len(f), 2)]
		got := []string{first, second}[:n]
		if !slices.Equal(got, want) || n == 0 && first != "" || n < 2 && second != "" {
			t.Errorf("firstFields(%q) = %q, %q, %d; want the first two of %q", s, first, second, n, f)
		}
	}
}
