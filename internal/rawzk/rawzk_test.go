package rawzk_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/internal/rawzk"
	"github.com/zkmodel/zkmodel/model"
)

var openACL = zk.WorldACL(zk.PermAll)

// TestAuthAndACLs checks, on the model through its listener, the ACL requests' encoding: digest auth grants
// what the ACL says, getACL shows the hashes to an ADMIN only, setACL checks the ACL version, the accepted
// credentials are sent again after a dropped connection, and an unknown scheme fails the call and costs the
// connection, not the session.
func TestAuthAndACLs(t *testing.T) {
	srv := model.NewServer()
	t.Cleanup(func() { _ = srv.Close() })
	addr, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	owner, events, err := rawzk.Connect(ctx, []string{addr}, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close(ctx)
	anon, _, err := rawzk.Connect(ctx, []string{addr}, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close(ctx)
	if err := owner.AddAuth(ctx, "digest", []byte("u:p")); err != nil {
		t.Fatalf("AddAuth(digest): %v", err)
	}
	acl := append(zk.DigestACL(zk.PermAll, "u", "p"), zk.ACL{Perms: zk.PermRead, Scheme: "world", ID: "anyone"})
	if _, err := owner.Create(ctx, "/n", []byte("x"), zk.FlagPersistent, acl); err != nil {
		t.Fatalf("Create with a digest ACL: %v", err)
	}
	if got, st, err := owner.GetACL(ctx, "/n"); err != nil || !slices.Equal(got, acl) || st.Aversion != 0 {
		t.Fatalf("GetACL as the owner = %v %v, %v; want %v, aversion 0", got, st, err, acl)
	}
	redacted := []zk.ACL{{Perms: zk.PermAll, Scheme: "digest", ID: "u:x"}, acl[1]}
	if got, _, err := anon.GetACL(ctx, "/n"); err != nil || !slices.Equal(got, redacted) {
		t.Fatalf("GetACL without ADMIN = %v, %v; want %v", got, err, redacted)
	}
	if _, err := anon.Set(ctx, "/n", nil, -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("Set without WRITE: %v, want zk.ErrNoAuth", err)
	}
	if _, err := owner.SetACL(ctx, "/n", openACL, 3); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("SetACL with a wrong aversion: %v, want zk.ErrBadVersion", err)
	}
	owner.Sever()
	if _, err := owner.SetACL(ctx, "/n", acl[:1], 0); err != nil { // needs the auth, sent again
		t.Fatalf("SetACL after a dropped connection: %v", err)
	}
	if _, err := anon.SetACL(ctx, "/missing", openACL, -1); !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("SetACL of a missing node: %v, want zk.ErrNoNode", err)
	}
	sid := owner.SessionID()
	for len(events) > 0 {
		<-events
	}
	if err := owner.AddAuth(ctx, "foo", []byte("bar")); !errors.Is(err, zk.ErrAuthFailed) {
		t.Fatalf("AddAuth(foo): %v, want zk.ErrAuthFailed", err)
	}
	for ev := range events {
		if ev.State == zk.StateHasSession {
			break
		}
	}
	if _, st, err := owner.GetACL(ctx, "/n"); err != nil || st.Aversion != 1 || owner.SessionID() != sid {
		t.Fatalf("after the failed auth: GetACL stat %v, %v, session %#x; want aversion 1, session %#x", st, err, owner.SessionID(), sid)
	}
}
