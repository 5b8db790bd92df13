package clients

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkmodel/zkmodel/realzk"
)

// TestStandInReadOnlyDelay: a server of three with -Dreadonlymode.enabled=true and localSessionsEnabled=true,
// left without a quorum (the other running server stopped) or started alone, through Debian's zkServer.sh and
// through the stand-in from the same zoo.cfg files, is first not serving — isro answers null and a connect
// request asking for read-only is closed unanswered — and then read-only: isro ro, the same connect gets a
// read-only session. 3.8 waits max(2000 ms, tickTime) in LOOKING before it starts its read-only server
// (QuorumPeer.run); the test asserts the order of what a client sees, not the times, which it logs.
func TestStandInReadOnlyDelay(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*scenarioTimeout)
	t.Cleanup(cancel)
	// What Debian's zkServer.sh gives (measured; the real side runs first and is held to it too).
	const (
		steps = "isro null; connect with readOnly: connection closed without an answer; isro ro; connect with readOnly: session (the one asked for: false), readOnly byte true, exists /g -101, an ephemeral create -119\n"
		want  = "quorum lost: " + steps + "started alone: " + steps
	)
	for _, sc := range []struct {
		name  string
		extra []string
	}{
		{"tickTime 500", nil},
		{"tickTime 3000", []string{"tickTime=3000"}},
	} {
		for _, side := range standinSides {
			t.Run(sc.name+"/"+side.name, func(t *testing.T) {
				s := startTwoOfThree(ctx, t, clusterConfig{script: side.script, jvmFlags: "-Dreadonlymode.enabled=true",
					extra: append([]string{"localSessionsEnabled=true"}, sc.extra...)})
				p, g, _ := quorumSession(ctx, t, s.addrs[0])
				g.Close()
				var out strings.Builder
				if err := s.stop(1); err != nil {
					t.Fatal(err)
				}
				lost := time.Now()
				fmt.Fprintf(&out, "quorum lost: %s\n", untilReadOnly(ctx, t, p, lost))
				if err := s.stop(0); err != nil {
					t.Fatal(err)
				}
				if err := s.launch(ctx, 0); err != nil {
					t.Fatal(err)
				}
				started := time.Now()
				if err := s.waitServingOrLooking(ctx, 0); err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(&out, "started alone: %s\n", untilReadOnly(ctx, t, p, started))
				if got := out.String(); got != want {
					t.Errorf("%s printed\n%s\nwant\n%s", side.name, got, want)
				}
			})
		}
	}
}

// untilReadOnly asks p's server isro until it answers ro, and says which answers came, in order (a repeated
// answer once; an rw from before the server noticed the loss left out), with what a connect request asking
// for read-only got while isro answered null and once it answered ro. It logs how long after since each
// answer first came.
func untilReadOnly(ctx context.Context, t *testing.T, p *prober, since time.Time) string {
	t.Helper()
	var seen []string
	last := ""
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
		got, err := realzk.FourLetter(wctx, p.addr, "isro")
		wcancel()
		answer := strings.TrimSpace(got)
		if err != nil {
			answer = "no answer"
		}
		if answer != last && !(last == "" && answer == "rw") {
			t.Logf("%s: isro %q %v after", p.addr, answer, time.Since(since).Round(10*time.Millisecond))
			seen = append(seen, "isro "+answer)
			switch answer {
			case "null":
				seen = append(seen, "connect with readOnly: "+p.outcome(true, 0, nil))
			case "ro":
				seen = append(seen, "connect with readOnly: "+p.outcome(true, 0, nil))
				return strings.Join(seen, "; ")
			}
		}
		if answer != "rw" || last != "" {
			last = answer
		}
		time.Sleep(20 * time.Millisecond)
	}
	return strings.Join(seen, "; ") + "; no ro within 60 s"
}

// waitServingOrLooking returns once server i accepts connections (the four-letter words answer).
func (s *standin) waitServingOrLooking(ctx context.Context, i int) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		if _, err := realzk.FourLetter(ctx, s.addrs[i], "isro"); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("server %d (%s) does not answer isro: %w", i+1, s.addrs[i], ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
