package realzk

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/model"
)

// flwTarget is a 3-server ensemble that allows every four-letter word, and a standalone server with
// ZooKeeper 3.8's default whitelist.
type flwTarget struct {
	name  string
	addrs []string
	plain string
}

// TestFourLetterWordsRealAndModel: go-zookeeper's FLWSrvr, FLWRuok and FLWCons, and the shape of srvr and
// mntr, are the same on a real ZooKeeper 3.8 and on the model. FLWSrvr cannot parse 3.8's version line on
// either; FLWCons reports a failure (the word's own connection line does not match its regexp) and still
// gives the session's line.
func TestFourLetterWordsRealAndModel(t *testing.T) {
	real := Shared(t)
	realPlain := startForTest(t, Config{Servers: 1, FourLetterWords: "srvr"})
	modelAll := model.NewServer(model.WithEnsemble(3), model.WithFourLetterWords("*"))
	t.Cleanup(func() { modelAll.Close() })
	modelAddrs, err := modelAll.ListenEnsemble(3)
	if err != nil {
		t.Fatal(err)
	}
	modelPlain := model.NewServer()
	t.Cleanup(func() { modelPlain.Close() })
	modelPlainAddr, err := modelPlain.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	shapes := map[string][]string{}
	for _, tg := range []flwTarget{
		{"real", real.Addrs(), realPlain.Addrs()[0]},
		{"model", modelAddrs, modelPlainAddr},
	} {
		conn, events, err := zk.Connect(tg.addrs[:1], 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(testLogger{t}))
		if err != nil {
			t.Fatal(err)
		}
		waitState(t, events, zk.StateHasSession, 20*time.Second)
		sid := conn.SessionID()
		waitAllSynced(t, tg.name, tg.addrs)

		stats, ok := zk.FLWSrvr(tg.addrs, 10*time.Second)
		if ok || len(stats) != 3 || stats[0].Error == nil || !strings.Contains(stats[0].Error.Error(), "no regex matches") {
			t.Errorf("%s: FLWSrvr: ok=%v %+v; want 3.8's version line unparsed", tg.name, ok, stats)
		}
		if oks := zk.FLWRuok(append(slices.Clone(tg.addrs), tg.plain), 10*time.Second); !slices.Equal(oks, []bool{true, true, true, false}) {
			t.Errorf("%s: FLWRuok(3 servers allowing all words, 1 with the default whitelist) = %v", tg.name, oks)
		}
		cons, ok := zk.FLWCons(tg.addrs[:1], 10*time.Second)
		found := false
		if len(cons) == 1 {
			for _, c := range cons[0].Clients {
				found = found || c.SessionID == sid && c.Timeout == 10000
			}
		}
		if ok || len(cons) != 1 || cons[0].Error != nil || !found {
			t.Errorf("%s: FLWCons: ok=%v %+v; want ok=false and session %#x with timeout 10000", tg.name, ok, cons, sid)
		}
		if got, err := FourLetter(context.Background(), tg.plain, "ruok"); err != nil || got != "ruok is not executed because it is not in the whitelist.\n" {
			t.Errorf("%s: ruok with the default whitelist: %q, %v", tg.name, got, err)
		}
		modes := map[string]int{}
		for _, addr := range tg.addrs {
			srvr, err := FourLetter(context.Background(), addr, "srvr")
			if err != nil {
				t.Fatal(err)
			}
			mode, _ := ServerMode(context.Background(), addr)
			modes[mode]++
			mntr, err := FourLetter(context.Background(), addr, "mntr")
			if err != nil {
				t.Fatal(err)
			}
			shapes[tg.name] = append(shapes[tg.name], mode+" srvr: "+lineKeys(srvr, ":"), mode+" mntr: "+lineKeys(mntr, "\t"))
		}
		if modes["leader"] != 1 || modes["follower"] != 2 {
			t.Errorf("%s: modes %v, want one leader and two followers", tg.name, modes)
		}
		conn.Close()
	}
	slices.Sort(shapes["real"])
	slices.Sort(shapes["model"])
	if !slices.Equal(shapes["real"], shapes["model"]) {
		t.Errorf("srvr and mntr keys differ:\nreal  %q\nmodel %q", shapes["real"], shapes["model"])
	}
}

// waitAllSynced waits until the ensemble's leader counts every other server as a synced follower: a
// follower that has just rejoined (Shared heals the ensemble a test before left short) already answers
// "Mode: follower" while the leader's mntr has no learner lines for it yet.
func waitAllSynced(t *testing.T, name string, addrs []string) {
	t.Helper()
	want := "zk_synced_followers\t" + strconv.Itoa(len(addrs)-1) + "\n"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var last string
	for {
		for _, addr := range addrs {
			if mode, err := ServerMode(ctx, addr); err == nil && mode == ModeLeader {
				mntr, err := FourLetter(ctx, addr, "mntr")
				if err == nil && strings.Contains(mntr, want) {
					return
				}
				last = fmt.Sprintf("leader %s: %v %q", addr, err, mntr)
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: the leader does not count %d synced followers: %s", name, len(addrs)-1, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// serverIDInKey is the follower's server id in a leader's mntr keys (zk_avg_1_learner_handler_qp_size).
var serverIDInKey = regexp.MustCompile(`_\d+_learner`)

// lineKeys returns the keys of an answer's lines (each line up to sep), the server ids in mntr's learner keys
// replaced by N, sorted: the answer's shape.
func lineKeys(answer, sep string) string {
	var keys []string
	for line := range strings.SplitSeq(strings.TrimSuffix(answer, "\n"), "\n") {
		key, _, _ := strings.Cut(line, sep)
		keys = append(keys, serverIDInKey.ReplaceAllString(key, "_N_learner"))
	}
	slices.Sort(keys)
	return strings.Join(keys, ",")
}
