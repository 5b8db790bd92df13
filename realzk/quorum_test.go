package realzk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/zkmodel/zkmodel/jute"
)

// probeConnect sends addr a connect request for a new session, as a client that has seen lastZxid, and says
// what the server did: "answered" (a connect response), "closed unanswered" (EOF before any reply) or
// "refused" (the TCP dial failed).
func probeConnect(ctx context.Context, addr string, lastZxid int64) (string, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if errors.Is(err, syscall.ECONNREFUSED) {
		return "refused", nil
	}
	if err != nil {
		return "", fmt.Errorf("dial %s: %w", addr, err)
	}
	defer nc.Close()
	e := jute.NewEncoder(nil)
	req := jute.ConnectRequest{TimeOut: 1000, LastZxidSeen: lastZxid, Passwd: make([]byte, 16)}
	req.Encode(e)
	if _, err := nc.Write(jute.AppendFrame(nil, e.Bytes())); err != nil {
		return "", fmt.Errorf("send a connect request to %s: %w", addr, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetReadDeadline(dl)
	}
	_, err = jute.ReadFrame(nc, jute.MaxBuffer)
	switch {
	case err == nil:
		return "answered", nil
	case errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET):
		return "closed unanswered", nil
	}
	return "", fmt.Errorf("read the answer of %s: %w", addr, err)
}

// quorumProbes is one scenario, run on the real ensemble and on the model's emulated one: what a server
// does with a connect request from a client ahead of it, from a client while a majority is stopped (the
// survivor, and a stopped server), and once the majority is back.
func quorumProbes(t *testing.T, servers validationServers) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		if err := servers.Heal(context.Background()); err != nil {
			t.Errorf("heal: %v", err)
		}
	})
	addrs := servers.Addrs()
	probe := func(what string, i int, lastZxid int64, want string) {
		t.Helper()
		got, err := probeConnect(ctx, addrs[i], lastZxid)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got != want {
			t.Errorf("%s (server %d): %s, want %s", what, i, got, want)
		}
	}
	probe("a client that has seen a later zxid than the server", 0, 1<<40, "closed unanswered")
	probe("a new session, all servers up", 0, 0, "answered")
	for _, i := range []int{1, 2} {
		if err := servers.Kill(i); err != nil {
			t.Fatal(err)
		}
	}
	// A surviving leader notices within a few ticks that it has lost its followers (a follower at once,
	// when the leader's connection closes): until then it still answers.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		got, err := probeConnect(ctx, addrs[0], 0)
		if err != nil {
			t.Fatalf("a new session on the survivor of a lost majority: %v", err)
		}
		if got == "closed unanswered" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a new session on the survivor of a lost majority: still %s 10s after the stops, want closed unanswered", got)
		}
	}
	probe("a new session on a stopped server", 1, 0, "refused")
	if err := servers.Restart(ctx, 1); err != nil {
		t.Fatal(err)
	}
	probe("a new session once the majority is back", 0, 0, "answered")
}

// TestQuorumProbes runs quorumProbes on the real ensemble and on the model's emulated one.
func TestQuorumProbes(t *testing.T) {
	t.Run("real", func(t *testing.T) { quorumProbes(t, Shared(t)) })
	t.Run("model", func(t *testing.T) { quorumProbes(t, newModelEnsemble(t)) })
}
