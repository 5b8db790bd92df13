package differential

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/model"
	"github.com/zkmodel/zkmodel/realzk"
)

// The four-letter words side by side: the same words, after the same requests, asked of a real ZooKeeper 3.8
// and of the model, and the answers' shapes and figures compared (the answers themselves are checked against
// those measured on 3.8.0 by conformance.CheckFourLetterWord, in model/flw_test.go and
// clients/standin_words_test.go).

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
	real := realzk.Shared(t)
	realPlain := realzk.StartForTest(t, realzk.Config{Servers: 1, FourLetterWords: "srvr"})
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
		conn, events, err := zk.Connect(tg.addrs[:1], 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(wordsLogger{t}))
		if err != nil {
			t.Fatal(err)
		}
		awaitSession(t, events)
		sid := conn.SessionID()

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
		if got, err := realzk.FourLetter(context.Background(), tg.plain, "ruok"); err != nil || got != "ruok is not executed because it is not in the whitelist.\n" {
			t.Errorf("%s: ruok with the default whitelist: %q, %v", tg.name, got, err)
		}
		// A write and a read through every server, so that each lists the summaries of a namespace's writes
		// and reads (a shared ensemble lists those of earlier tests' namespaces too: lineKeys folds them).
		for _, addr := range tg.addrs {
			touchNamespace(t, addr)
		}
		modes := map[string]int{}
		for _, addr := range tg.addrs {
			srvr, err := realzk.FourLetter(context.Background(), addr, "srvr")
			if err != nil {
				t.Fatal(err)
			}
			mode, _ := realzk.ServerMode(context.Background(), addr)
			modes[mode]++
			mntr, err := realzk.FourLetter(context.Background(), addr, "mntr")
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
		t.Errorf("srvr and mntr keys differ:\n%s", shapeDiff(shapes["real"], shapes["model"]))
	}
}

// shapeDiff describes how two lists of shapes ("<mode> <word>: key,key,…", sorted) differ: for each answer of
// one that the other lacks, the keys that the other's answer of the same mode and word does not have.
func shapeDiff(real, model []string) string {
	var b strings.Builder
	for _, side := range []struct {
		name        string
		mine, other []string
	}{{"real", real, model}, {"model", model, real}} {
		for _, shape := range side.mine {
			if slices.Contains(side.other, shape) {
				continue
			}
			head, keys, _ := strings.Cut(shape, ": ")
			var theirs []string
			for _, o := range side.other {
				if h, k, _ := strings.Cut(o, ": "); h == head {
					theirs = append(theirs, strings.Split(k, ",")...)
				}
			}
			var extra []string
			for k := range strings.SplitSeq(keys, ",") {
				if !slices.Contains(theirs, k) {
					extra = append(extra, k)
				}
			}
			fmt.Fprintf(&b, "%s %s has keys the other lacks: %v\n", side.name, head, extra)
		}
	}
	return b.String()
}

// touchNamespace writes and reads a node of its own namespace through the server at addr.
func touchNamespace(t *testing.T, addr string) {
	t.Helper()
	c, events, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(wordsLogger{t}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	awaitSession(t, events)
	p, err := c.Create("/flw-namespace-", []byte("x"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Get(p); err != nil {
		t.Fatal(err)
	}
}

// TestNamespaceMetricsRealAndModel: the per-namespace summaries of mntr (zk_{avg,min,max,cnt,sum}_<ns>_write_per_namespace
// and …_read_per_namespace) are, line for line and figure for figure, the same on a fresh standalone ZooKeeper 3.8
// and on a fresh model after the same requests: which requests count, how many bytes each, and in what order
// mntr lists them.
func TestNamespaceMetricsRealAndModel(t *testing.T) {
	real := realzk.StartForTest(t, realzk.Config{Servers: 1, FourLetterWords: "*"})
	m := model.NewServer(model.WithFourLetterWords("*"))
	t.Cleanup(func() { m.Close() })
	modelAddr, err := m.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	answers := map[string]string{}
	for _, tg := range []struct{ name, addr string }{{"real", real.Addrs()[0]}, {"model", modelAddr}} {
		c, events, err := zk.Connect([]string{tg.addr}, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(wordsLogger{t}))
		if err != nil {
			t.Fatal(err)
		}
		awaitSession(t, events)
		acl := zk.WorldACL(zk.PermAll)
		must := func(what string, err error) {
			if err != nil {
				t.Fatalf("%s: %s: %v", tg.name, what, err)
			}
		}
		_, err = c.Create("/a", []byte("12345"), 0, acl)
		must("create /a", err)
		_, err = c.Create("/a", []byte("12345"), 0, acl) // fails: counts nothing
		if err != zk.ErrNodeExists {
			t.Fatalf("%s: second create /a: %v", tg.name, err)
		}
		_, _, err = c.Get("/a")
		must("get /a", err)
		_, _, err = c.Exists("/a")
		must("exists /a", err)
		_, _, err = c.Exists("/missing") // not counted
		must("exists /missing", err)
		_, _, err = c.Get("/") // the root is in no namespace
		must("get /", err)
		_, _, err = c.Children("/")
		must("children /", err)
		_, _, err = c.GetACL("/a")
		must("getACL /a", err)
		_, err = c.Sync("/a")
		must("sync /a", err)
		_, err = c.Multi(&zk.CreateRequest{Path: "/a/m", Data: []byte("xy"), Acl: acl},
			&zk.SetDataRequest{Path: "/a/m", Data: []byte("abc"), Version: -1},
			&zk.CheckVersionRequest{Path: "/a", Version: -1})
		must("multi", err)
		if _, err := c.Multi(&zk.DeleteRequest{Path: "/a/m", Version: -1}, &zk.CheckVersionRequest{Path: "/a", Version: 77}); err == nil {
			t.Fatalf("%s: the multi with a bad check succeeded", tg.name)
		}
		_, _, err = c.Children("/a")
		must("children /a", err)
		_, err = c.Set("/a/m", []byte("1234567"), -1)
		must("set /a/m", err)
		_, err = c.Set("/a/m", []byte("1"), 99) // bad version: not counted
		if err != zk.ErrBadVersion {
			t.Fatalf("%s: set with a bad version: %v", tg.name, err)
		}
		must("delete /a/m", c.Delete("/a/m", -1))
		_, err = c.Create("/s", nil, zk.FlagSequence, acl)
		must("create /s", err)
		_, err = c.Create("/a/e", []byte("1"), zk.FlagEphemeral, acl)
		must("create /a/e", err)
		_, _, err = c.Get("/zookeeper/config")
		must("get /zookeeper/config", err)
		c.Close() // deletes the ephemeral /a/e: a write
		var got string
		for range 100 { // the close is applied after its reply
			mntr, err := realzk.FourLetter(context.Background(), tg.addr, "mntr")
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			for line := range strings.SplitSeq(mntr, "\n") {
				if strings.Contains(line, "_per_namespace\t") {
					lines = append(lines, line)
				}
			}
			if got = strings.Join(lines, "\n"); strings.Contains(got, "zk_cnt_a_write_per_namespace\t6") {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		answers[tg.name] = got
	}
	if answers["real"] != answers["model"] {
		t.Errorf("per-namespace summaries differ:\nreal:\n%s\nmodel:\n%s", answers["real"], answers["model"])
	}
	if !strings.Contains(answers["real"], "zk_avg_a_write_per_namespace\t") {
		t.Errorf("real 3.8 lists no per-namespace summary:\n%s", answers["real"])
	}
}

// serverIDInKey is the follower's server id in a leader's mntr keys (zk_avg_1_learner_handler_qp_size);
// namespaceInKey is the namespace in a per-namespace summary's (zk_avg_a_write_per_namespace);
// ackLatencyKey is a leader's summary of one server's acks (zk_avg_2_ack_latency). 3.8's Leader.processAck
// records an ack's latency only for a proposal whose zxid is a multiple of zookeeper.leader.ackLoggingFrequency
// (1000), so those keys appear on a leader once the ensemble has passed such a zxid: the shared real ensemble
// passes one when earlier tests have written enough (a make test run did, 1 s into this test), a fresh one
// has not. The model never shows them (docs/fidelity.md, Known differences); lineKeys leaves them out.
var (
	serverIDInKey  = regexp.MustCompile(`_\d+_learner`)
	namespaceInKey = regexp.MustCompile(`^(zk_[a-z]+)_.*_(read|write)_per_namespace$`)
	ackLatencyKey  = regexp.MustCompile(`^zk_[a-z0-9]+_\d+_ack_latency$`)
)

// lineKeys returns the keys of an answer's lines (each line up to sep), the server ids in mntr's learner keys
// replaced by N and the namespaces of its per-namespace summaries by NS, a leader's ack-latency summaries left
// out, sorted and without repeats: the answer's shape, whatever namespaces the server has served and however
// many zxids it has spent.
func lineKeys(answer, sep string) string {
	var keys []string
	for line := range strings.SplitSeq(strings.TrimSuffix(answer, "\n"), "\n") {
		key, _, _ := strings.Cut(line, sep)
		if ackLatencyKey.MatchString(key) {
			continue
		}
		key = serverIDInKey.ReplaceAllString(key, "_N_learner")
		keys = append(keys, namespaceInKey.ReplaceAllString(key, "${1}_NS_${2}_per_namespace"))
	}
	slices.Sort(keys)
	return strings.Join(slices.Compact(keys), ",")
}

// wordsLogger sends go-zookeeper's log lines to the test log.
type wordsLogger struct{ t testing.TB }

func (l wordsLogger) Printf(format string, args ...any) { l.t.Logf("zk: "+format, args...) }

// awaitSession reads session events until the session is established, failing t after 20 s.
func awaitSession(t testing.TB, events <-chan zk.Event) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("event channel closed while waiting for the session")
			}
			if ev.Type == zk.EventSession && ev.State == zk.StateHasSession {
				return
			}
		case <-deadline:
			t.Fatal("no session within 20s")
		}
	}
}
