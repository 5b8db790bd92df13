package model_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/internal/rawzk"
	"github.com/zkmodel/zkmodel/jute"
	"github.com/zkmodel/zkmodel/model"
)

// TestReadOnlyModeOnTheEnsemble: server 0 of an emulated 3-server ensemble with WithReadOnlyMode, left
// running alone, is read-only as a real 3.8 server is (measured through clients.TestStandInReadOnlyMode):
// reads are served to a read-only session, writes get NotReadOnly and spend no zxid, and when a second
// server starts the read-only connection closes and its session is gone. Without WithLocalSessions the
// read-only connect gets a NotReadOnly reply header; without WithReadOnlyMode, nothing is served.
func TestReadOnlyModeOnTheEnsemble(t *testing.T) {
	for _, tc := range []struct {
		name        string
		opts        []model.Option
		mode, isro  string
		connectWant string // what a connect asking for read-only gets
	}{
		{"local sessions", []model.Option{model.WithReadOnlyMode(), model.WithLocalSessions()}, "read-only", "ro", "session"},
		{"global sessions", []model.Option{model.WithReadOnlyMode()}, "read-only", "ro", "NotReadOnly"},
		{"off", nil, "not serving", "null", "closed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := model.NewTestServer(t, append([]model.Option{model.WithEnsemble(3), model.WithFourLetterWords("isro")}, tc.opts...)...)
			addrs, err := srv.ListenEnsemble(3)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			conn := model.ConnectZKT(t, srv, 10*time.Second)
			if _, err := conn.Create("/n", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			_, before, err := conn.Get("/n")
			if err != nil {
				t.Fatal(err)
			}
			for _, i := range []int{1, 2} {
				if err := srv.StopServer(i); err != nil {
					t.Fatal(err)
				}
			}
			if tc.isro == "ro" {
				// 3.8 serves read-only only max(2 s, tickTime) after it loses its quorum (TestReadOnlyDelay).
				srv.Advance(2*time.Second - time.Millisecond)
				if got := readOnlyState(ctx, t, srv, addrs[0]); got != "not serving, isro null, connect closed" {
					t.Errorf("1999 ms after the quorum is lost: %s, want not serving, isro null, connect closed", got)
				}
				srv.Advance(time.Millisecond)
			}
			if got, _ := srv.Mode(0); got != tc.mode {
				t.Errorf("Mode(0) = %q, want %q", got, tc.mode)
			}
			if got := strings.TrimSpace(askWord(t, addrs[0], "isro")); got != tc.isro {
				t.Errorf("isro = %q, want %q", got, tc.isro)
			}
			if _, _, err := rawzk.DialBare(ctx, addrs[0], jute.ConnectRequest{TimeOut: 10000, HasReadOnly: true}); !errors.Is(err, io.EOF) {
				t.Errorf("connect without readOnly: %v, want the connection closed", err)
			}
			b, resp, err := rawzk.DialBare(ctx, addrs[0], jute.ConnectRequest{TimeOut: 10000, HasReadOnly: true, ReadOnly: true})
			if b != nil {
				defer b.Close()
			}
			switch {
			case tc.connectWant == "NotReadOnly" && errors.Is(err, rawzk.ErrConnectNotReadOnly),
				tc.connectWant == "closed" && errors.Is(err, io.EOF):
				return
			case tc.connectWant != "session" || err != nil:
				t.Fatalf("connect with readOnly: %v (response %+v), want %s", err, resp, tc.connectWant)
			}
			if !resp.ReadOnly || resp.SessionID == 0 {
				t.Fatalf("connect response %+v, want a read-only session", resp)
			}
			read, _ := b.Do(jute.Request{Header: jute.RequestHeader{Type: jute.OpGetData}, Path: "/n"})
			write, _ := b.Do(jute.Request{Header: jute.RequestHeader{Type: jute.OpSetData}, Path: "/n", Version: -1})
			check, _ := b.Do(jute.Request{Header: jute.RequestHeader{Type: jute.OpCheck}, Path: "/n", Version: -1})
			if read != 0 || write != -119 || check != -119 {
				t.Errorf("getData %d, setData %d, check %d; want 0, -119, -119", read, write, check)
			}
			if err := srv.StartServer(1); err != nil {
				t.Fatal(err)
			}
			if !b.WaitClosed(ctx) {
				t.Error("the read-only connection stayed open after the quorum came back")
			}
			if got, _ := srv.Mode(0); got != "follower" {
				t.Errorf("Mode(0) = %q once the quorum is back, want follower", got)
			}
			stale, again, err := rawzk.DialBare(ctx, addrs[0], jute.ConnectRequest{TimeOut: 10000, SessionID: resp.SessionID, Passwd: resp.Passwd, HasReadOnly: true, ReadOnly: true})
			if stale != nil {
				stale.Close()
			}
			if err != nil || again.TimeOut != 0 {
				t.Errorf("resuming the read-only session once the quorum is back: %v %+v, want the expired-session response", err, again)
			}
			// Neither the read-only session, its refused writes nor its end was a transaction.
			if _, err := conn.Create("/m", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			_, after, err := conn.Get("/m")
			if err != nil {
				t.Fatal(err)
			}
			if after.Czxid != before.Czxid+1 {
				t.Errorf("/m's czxid %#x, want %#x, the next zxid after /n's", after.Czxid, before.Czxid+1)
			}
		})
	}
}

// TestReadOnlyDelay: a server of an emulated ensemble with WithReadOnlyMode that loses its quorum, or starts
// without one, is not serving — Mode "not serving", isro null, a connect request asking for read-only closed
// unanswered — until max(2 s, tickTime) of the virtual clock have passed, and read-only from then on, as 3.8's
// QuorumPeer runs it (measured through clients.TestStandInReadOnlyDelay: about 2.0 s with tickTime 500 ms,
// 3.05 s with tickTime 3 s).
func TestReadOnlyDelay(t *testing.T) {
	for _, tc := range []struct {
		tick, delay time.Duration
	}{
		{500 * time.Millisecond, 2 * time.Second},
		{2 * time.Second, 2 * time.Second},
		{3 * time.Second, 3 * time.Second},
	} {
		t.Run(tc.tick.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			srv := model.NewTestServer(t, model.WithEnsemble(3), model.WithTickTime(tc.tick), model.WithReadOnlyMode(),
				model.WithLocalSessions(), model.WithFourLetterWords("isro"))
			addrs, err := srv.ListenEnsemble(3)
			if err != nil {
				t.Fatal(err)
			}
			const before, after = "not serving, isro null, connect closed", "read-only, isro ro, a read-only session"
			var got []string
			observe := func(what string) { got = append(got, what+": "+readOnlyState(ctx, t, srv, addrs[0])) }
			for _, event := range []struct {
				name  string
				steps []model.Step
			}{
				{"quorum lost", []model.Step{{Kind: model.StopServer, Server: 1}, {Kind: model.StopServer, Server: 2}}},
				{"started alone", []model.Step{{Kind: model.StopServer, Server: 0}, {Kind: model.StartServer, Server: 0}}},
			} {
				for _, st := range event.steps {
					if err := srv.Do(st); err != nil {
						t.Fatal(err)
					}
				}
				observe(event.name)
				srv.Advance(tc.delay - time.Millisecond)
				observe("the delay but 1 ms later")
				srv.Advance(time.Millisecond)
				observe("the delay later")
			}
			want := []string{"quorum lost: " + before, "the delay but 1 ms later: " + before, "the delay later: " + after,
				"started alone: " + before, "the delay but 1 ms later: " + before, "the delay later: " + after}
			if !slices.Equal(got, want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// readOnlyState says what server 0 of srv (at addr) is to a client: its mode, isro's answer, and what a
// connect request asking for read-only gets.
func readOnlyState(ctx context.Context, t *testing.T, srv *model.Server, addr string) string {
	t.Helper()
	mode, err := srv.Mode(0)
	if err != nil {
		t.Fatal(err)
	}
	connect := ""
	b, resp, err := rawzk.DialBare(ctx, addr, jute.ConnectRequest{TimeOut: 10000, HasReadOnly: true, ReadOnly: true})
	switch {
	case errors.Is(err, io.EOF):
		connect = "connect closed"
	case err != nil:
		connect = "connect: " + err.Error()
	case resp.ReadOnly:
		connect = "a read-only session"
	default:
		connect = fmt.Sprintf("a session %+v", resp)
	}
	if b != nil {
		b.Close()
	}
	return fmt.Sprintf("%s, isro %s, %s", mode, strings.TrimSpace(askWord(t, addr, "isro")), connect)
}
