package model_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/internal/rawzk"
	"github.com/zkmodel/zkmodel/model"
)

// TestApplySettings: settings given to a running server replace its own (SASL users, the super digest,
// skipACL), settings not given return to their defaults, the tree stays, and what a running server cannot
// change is refused.
func TestApplySettings(t *testing.T) {
	superDigest := zk.DigestACL(zk.PermAll, "super", "pw")[0].ID
	srv := model.NewServer(model.WithSASL(model.SASLConfig{Users: map[string]string{"alice": "a-pw"}}), model.WithSuperDigest(superDigest))
	t.Cleanup(func() { _ = srv.Close() })
	dial := srv.Dialer()
	dialer := func(_ context.Context, addr string) (net.Conn, error) { return dial("tcp", addr, 5*time.Second) }
	login := func(user, password string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, _, err := rawzk.ConnectDigestMD5(ctx, []string{"model"}, 10*time.Second, dialer, user, password)
		if err == nil {
			_ = c.Close(ctx)
		}
		return err
	}
	owner, _, err := srv.Connect(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	if _, err := owner.Create("/kept", []byte("k"), 0, zk.DigestACL(zk.PermAll, "u", "p")); err != nil {
		t.Fatal(err)
	}
	if err := login("alice", "a-pw"); err != nil {
		t.Fatalf("alice's login before: %v", err)
	}
	if err := srv.ApplySettings(model.WithSASL(model.SASLConfig{Users: map[string]string{"bob": "b-pw"}}), model.WithSkipACL()); err != nil {
		t.Fatalf("ApplySettings: %v", err)
	}
	if err := login("alice", "a-pw"); !errors.Is(err, zk.ErrAuthFailed) {
		t.Fatalf("alice's login after the new JAAS users: %v, want %v", err, zk.ErrAuthFailed)
	}
	if err := login("bob", "b-pw"); err != nil {
		t.Fatalf("bob's login after the new JAAS users: %v", err)
	}
	anon, _, err := srv.Connect(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	if data, _, err := anon.Get("/kept"); err != nil || string(data) != "k" {
		t.Fatalf("Get(/kept) with skipACL: %q, %v; want the node kept, readable by anyone", data, err)
	}
	// Without WithSuperDigest and WithSkipACL: no super user, ACLs checked again.
	if err := srv.ApplySettings(); err != nil {
		t.Fatalf("ApplySettings(): %v", err)
	}
	if err := anon.AddAuth("digest", []byte("super:pw")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := anon.Get("/kept"); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("Get(/kept) as super:pw once the super digest is gone: %v, want %v", err, zk.ErrNoAuth)
	}
	for _, o := range []model.Option{model.WithTickTime(time.Second), model.WithSeed(7), model.WithEnsemble(3)} {
		if err := srv.ApplySettings(o); err == nil {
			t.Fatal("ApplySettings took an option a running server cannot change")
		}
	}
}
