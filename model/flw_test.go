package model_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/conformance"
	"github.com/zkmodel/zkmodel/model"
)

// askWord sends a four-letter word (or any bytes) to addr and returns everything the server sends until it
// closes the connection.
func askWord(t *testing.T, addr, word string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, word); err != nil {
		t.Fatalf("send %q to %s: %v", word, addr, err)
	}
	answer, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("%q to %s: read: %v", word, addr, err)
	}
	return string(answer)
}

// TestFourLetterWordsGolden: every word, asked of a fresh server in each mode, with every word allowed and
// with 3.8's default whitelist, answers as Debian's ZooKeeper 3.8.0 answered (conformance/flw), but for the
// volatile figures.
func TestFourLetterWordsGolden(t *testing.T) {
	ensemble := func(opts ...model.Option) (*model.Server, []string) {
		srv := model.NewServer(append(opts, model.WithEnsemble(3))...)
		t.Cleanup(func() { srv.Close() })
		addrs, err := srv.ListenEnsemble(3)
		if err != nil {
			t.Fatal(err)
		}
		return srv, addrs
	}
	noQuorum := func(opts ...model.Option) string {
		srv, addrs := ensemble(opts...)
		for _, i := range []int{1, 2} {
			if err := srv.StopServer(i); err != nil {
				t.Fatal(err)
			}
		}
		return addrs[0]
	}
	all := model.WithFourLetterWords("*")
	_, ens := ensemble(all)
	scenarios := []struct {
		dir  string
		addr string
	}{
		{"standalone", listenStandalone(t, all)},
		{"leader", ens[2]}, // the model's leader is its last server
		{"follower", ens[0]},
		{"noquorum", noQuorum(all)},
		{"default-whitelist", listenStandalone(t)},
		{"default-whitelist-noquorum", noQuorum()},
	}
	for _, sc := range scenarios {
		for _, word := range conformance.FourLetterWords {
			if err := conformance.CheckFourLetterWord(sc.dir, word, askWord(t, sc.addr, word)); err != nil {
				t.Error(err)
			}
		}
	}
}

// TestFourLetterWordsFigures: the figures are the model's own: nodes, zxid, connections, sessions,
// ephemerals and watches, each server counting its own connections' watches.
func TestFourLetterWordsFigures(t *testing.T) {
	_, addrs, conn := ensembleWithSession(t)
	defer conn.Close()
	if _, err := conn.Create("/a", []byte("hello"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create("/a/eph", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	_, stat, _, err := conn.GetW("/a")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := conn.ChildrenW("/a"); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := conn.ExistsW("/nope"); err != nil {
		t.Fatal(err)
	}
	sid := conn.SessionID()
	zxid := stat.Pzxid // the ephemeral's creation: the last transaction

	srvr := askWord(t, addrs[0], "srvr")
	for _, want := range []string{"Connections: 2\n", fmt.Sprintf("Zxid: %#x\n", zxid), "Mode: follower\n", "Node count: 7\n"} {
		if !strings.Contains(srvr, want) {
			t.Errorf("srvr of server 0 lacks %q:\n%s", want, srvr)
		}
	}
	if leader := askWord(t, addrs[2], "srvr"); !strings.Contains(leader, "Connections: 1\n") || !strings.Contains(leader, "Mode: leader\n") {
		t.Errorf("srvr of server 2 (the leader, no client):\n%s", leader)
	}
	cons := askWord(t, addrs[0], "cons")
	if !strings.Contains(cons, fmt.Sprintf(",sid=%#x,", sid)) || !strings.Contains(cons, ",to=10000,") {
		t.Errorf("cons lacks session %#x with timeout 10000:\n%s", sid, cons)
	}
	want := map[string]string{
		"wchs": "1 connections watching 2 paths\nTotal watches:2\n",
		"wchc": fmt.Sprintf("%#x\n\t/a\n\t/nope\n\n", sid),
		"wchp": fmt.Sprintf("/a\n\t%#x\n/nope\n\t%#x\n\n", sid, sid),
	}
	for word, w := range want {
		if got := askWord(t, addrs[0], word); got != w {
			t.Errorf("%s of server 0: got %q, want %q", word, got, w)
		}
		if got := askWord(t, addrs[1], word); word == "wchs" && got != "0 connections watching 0 paths\nTotal watches:0\n" {
			t.Errorf("%s of server 1 (none of its connections watches): %q", word, got)
		}
	}
	mntr := askWord(t, addrs[0], "mntr")
	for _, w := range []string{"zk_server_state\tfollower\n", "zk_ephemerals_count\t1\n", "zk_num_alive_connections\t2\n",
		"zk_znode_count\t7\n", "zk_global_sessions\t1\n", "zk_watch_count\t3\n"} {
		if !strings.Contains(mntr, w) {
			t.Errorf("mntr of server 0 lacks %q", w)
		}
	}
	if dump := askWord(t, addrs[2], "dump"); !strings.Contains(dump, fmt.Sprintf("Sessions with Ephemerals (1):\n%#x:\n\t/a/eph\n", sid)) {
		t.Errorf("dump of the leader does not list the ephemeral:\n%s", dump)
	}
	if stat := askWord(t, addrs[0], "stat"); !strings.Contains(stat, "Clients:\n /127.0.0.1:") || strings.Count(stat, "](queued=") != 2 {
		t.Errorf("stat of server 0 does not list both connections:\n%s", stat)
	}
}

// TestFourLetterWordsGoZookeeper: go-zookeeper's helpers get what they get from a real 3.8 server (see
// differential's TestFourLetterWordsRealAndModel): FLWSrvr cannot parse 3.8's version line, FLWRuok sees imok
// (false when ruok is not in the whitelist), FLWCons reports a failure for the word's own connection line
// but parses the session's.
func TestFourLetterWordsGoZookeeper(t *testing.T) {
	addr := listenStandalone(t, model.WithFourLetterWords("*"))
	plainAddr := listenStandalone(t)
	conn, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(quietLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	waitSession(t, conn)
	checkGoZookeeperFLW(t, addr, plainAddr, conn.SessionID())
}

// checkGoZookeeperFLW asserts what go-zookeeper's FLWSrvr, FLWRuok and FLWCons give for a server that
// allows every word (addr, with one session sid) and one with the default whitelist (plainAddr).
func checkGoZookeeperFLW(t *testing.T, addr, plainAddr string, sid int64) {
	t.Helper()
	stats, ok := zk.FLWSrvr([]string{addr}, 10*time.Second)
	if ok || len(stats) != 1 || stats[0].Error == nil || !strings.Contains(stats[0].Error.Error(), "no regex matches") {
		t.Errorf("FLWSrvr: ok=%v stats=%+v; want a failure to parse 3.8's version line", ok, stats)
	}
	if oks := zk.FLWRuok([]string{addr, plainAddr}, 10*time.Second); len(oks) != 2 || !oks[0] || oks[1] {
		t.Errorf("FLWRuok(all words, default whitelist) = %v, want [true false]", oks)
	}
	cons, ok := zk.FLWCons([]string{addr}, 10*time.Second)
	if ok || len(cons) != 1 || cons[0].Error != nil || len(cons[0].Clients) != 1 || cons[0].Clients[0].SessionID != sid {
		t.Errorf("FLWCons: ok=%v %+v; want ok=false (the word's own line does not parse) and the session %#x", ok, cons, sid)
	} else if c := cons[0].Clients[0]; c.Timeout != 10000 || c.Addr == "" {
		t.Errorf("FLWCons: client %+v: want timeout 10000 and an address", c)
	}
}

// TestFourLetterWordsBadInput: what is no four-letter word changes nothing and holds up no other client:
// an unknown word and an upper-case one close without an answer, as do a partial word then EOF and a word
// after a session's handshake (read as a too-long frame); a partial word then nothing keeps its connection
// open without stalling anyone; a word with more bytes after it is answered.
func TestFourLetterWordsBadInput(t *testing.T) {
	addr := listenStandalone(t, model.WithFourLetterWords("*"))
	before := askWord(t, addr, "srvr")

	// A partial word, then nothing: the server waits (as ZooKeeper does) while other clients go on.
	waiting, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer waiting.Close()
	if _, err := io.WriteString(waiting, "ru"); err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{"abcd", "RUOK", "kill", "hash"} {
		if got := askWord(t, addr, in); got != "" {
			t.Errorf("%q: got %q, want the connection closed without a byte", in, got)
		}
	}
	halfClosed := func(in string) string {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(conn, in); err != nil {
			t.Fatal(err)
		}
		if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(conn)
		if err != nil {
			t.Fatalf("%q then EOF: %v", in, err)
		}
		return string(got)
	}
	if got := halfClosed("ru"); got != "" {
		t.Errorf("partial word then EOF: got %q, want nothing", got)
	}
	if got := halfClosed("ruok"); got != "imok" {
		t.Errorf("ruok then EOF: got %q, want imok", got)
	}
	for _, in := range []string{"ruok\n", "ruokxyzzy"} {
		if got := askWord(t, addr, in); got != "imok" {
			t.Errorf("%q: got %q, want imok (the first four bytes are the word)", in, got)
		}
	}
	if got := askWord(t, addr, "gtmk"); got != "306" {
		t.Errorf("gtmk: got %q, want 306", got)
	}
	mask := make([]byte, 8)
	binary.BigEndian.PutUint64(mask, 511)
	if got := askWord(t, addr, "stmk"+string(mask)); got != "511" {
		t.Errorf("stmk 511: got %q", got)
	}
	if got := askWord(t, addr, "stmk"); got != "" {
		t.Errorf("stmk without its mask: got %q, want nothing", got)
	}

	// A word after a session's handshake is a frame far too long: the connection drops, the session stays.
	conn, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(quietLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	waitSession(t, conn)
	if _, err := conn.Create("/still-here", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	_ = raw.SetDeadline(time.Now().Add(10 * time.Second))
	if err := writeConnectRequest(raw); err != nil {
		t.Fatal(err)
	}
	var head [4]byte
	if _, err := io.ReadFull(raw, head[:]); err != nil {
		t.Fatalf("read the connect response: %v", err)
	}
	if _, err := io.CopyN(io.Discard, raw, int64(binary.BigEndian.Uint32(head[:]))); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(raw, "ruok"); err != nil {
		t.Fatal(err)
	}
	if rest, _ := io.ReadAll(raw); len(rest) != 0 {
		t.Errorf("ruok after a handshake: got %q, want the connection closed", rest)
	}

	if _, _, err := conn.Exists("/still-here"); err != nil {
		t.Errorf("another client after the bad input: %v", err)
	}
	after := askWord(t, addr, "srvr")
	want := strings.Replace(before, "Node count: 5\n", "Node count: 6\n", 1)
	want = strings.Replace(want, "Connections: 1\n", "Connections: 3\n", 1) // the waiting one and conn's
	want = strings.Replace(want, "Zxid: 0x0\n", "Zxid: 0x3\n", 1)           // two sessions and the create
	if after != want {
		t.Errorf("srvr after the bad input:\n%s\nwant (only the create and the two open connections changed it)\n%s", after, want)
	}
	if _, err := waiting.Write([]byte("ok")); err != nil { // "ruok" at last
		t.Fatal(err)
	}
	_ = waiting.SetDeadline(time.Now().Add(10 * time.Second))
	if got, err := io.ReadAll(waiting); err != nil || string(got) != "imok" {
		t.Errorf("the partial word, completed: got %q, %v; want imok", got, err)
	}
}

// listenStandalone serves a fresh standalone model on loopback TCP until t ends and returns its address.
func listenStandalone(t *testing.T, opts ...model.Option) string {
	t.Helper()
	srv := model.NewServer(opts...)
	t.Cleanup(func() { srv.Close() })
	addr, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// writeConnectRequest sends a connect request for a new session.
func writeConnectRequest(w io.Writer) error {
	body := make([]byte, 0, 44)
	body = binary.BigEndian.AppendUint32(body, 0)     // protocol version
	body = binary.BigEndian.AppendUint64(body, 0)     // last zxid seen
	body = binary.BigEndian.AppendUint32(body, 10000) // timeout
	body = binary.BigEndian.AppendUint64(body, 0)     // session id
	body = binary.BigEndian.AppendUint32(body, 16)    // password length
	body = append(body, make([]byte, 16)...)
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	_, err := w.Write(append(frame, body...))
	return err
}

// waitSession waits until conn has a session.
func waitSession(t *testing.T, conn *zk.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for conn.State() != zk.StateHasSession {
		select {
		case <-ctx.Done():
			t.Fatalf("no session: state %s", conn.State())
		case <-time.After(time.Millisecond):
		}
	}
}

// TestNamespaceMetricsPerMember: in an ensemble, a namespace's writes are listed by every server and its reads
// by the server that served them, from its last start (differential's TestNamespaceMetricsRealAndModel measures
// the figures on a real server).
func TestNamespaceMetricsPerMember(t *testing.T) {
	srv, addrs, conn := ensembleWithSession(t)
	if _, err := conn.Create("/ns", []byte("12345"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := conn.Get("/ns"); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	const (
		write = "zk_cnt_ns_write_per_namespace\t1\nzk_sum_ns_write_per_namespace\t8\n" // "/ns" and 5 bytes
		read  = "zk_cnt_ns_read_per_namespace\t1\nzk_sum_ns_read_per_namespace\t76\n"  // path, data and a stat's 68
	)
	for i, addr := range addrs {
		mntr := askWord(t, addr, "mntr")
		if !strings.Contains(mntr, write) {
			t.Errorf("mntr of server %d lacks the write:\n%s", i, write)
		}
		if got := strings.Contains(mntr, read); got != (i == 0) {
			t.Errorf("mntr of server %d lists the read: %v; only server 0 served it", i, got)
		}
	}
	if err := srv.StopServer(0); err != nil {
		t.Fatal(err)
	}
	if err := srv.StartServer(0); err != nil {
		t.Fatal(err)
	}
	if mntr := askWord(t, addrs[0], "mntr"); strings.Contains(mntr, "_ns_read_per_namespace") || !strings.Contains(mntr, write) {
		t.Errorf("server 0 after a restart: reads should start afresh, writes stay:\n%s", mntr)
	}
}

// ensembleWithSession starts a 3-server model answering every four-letter word, and a go-zookeeper session
// on its server 0.
func ensembleWithSession(t *testing.T) (*model.Server, []string, *zk.Conn) {
	t.Helper()
	srv := model.NewServer(model.WithEnsemble(3), model.WithFourLetterWords("*"))
	t.Cleanup(func() { srv.Close() })
	addrs, err := srv.ListenEnsemble(3)
	if err != nil {
		t.Fatal(err)
	}
	conn, _, err := zk.Connect([]string{addrs[0]}, 10*time.Second, zk.WithLogger(quietLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	waitSession(t, conn)
	return srv, addrs, conn
}

// TestDumpExpiryBuckets: dump lists the servers' expiry queues as 3.8 does (measured on Debian's 3.8.0, see
// model/cnxnexpiry.go): connections in 10-second buckets, sessions in tick-wide ones, and the buckets a
// connection or session has left, empty, until their time passes.
func TestDumpExpiryBuckets(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	srv := model.NewServer(model.WithTickTime(2*time.Second), model.WithFourLetterWords("*"), model.WithStartTime(start))
	t.Cleanup(func() { srv.Close() })
	addr, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	at := func(ms int64) string {
		return start.Add(time.Duration(ms) * time.Millisecond).Format("Mon Jan 02 15:04:05 MST 2006")
	}
	connections := func(dump string) string {
		_, conns, _ := strings.Cut(dump, "Connections dump:\n")
		return regexp.MustCompile(`127\.0\.0\.1:\d+`).ReplaceAllString(conns, "ADDR")
	}
	// A word's own connection, alone: the bucket after now+10s.
	want := "Connections Sets (1)/(1):\n1 expire at " + at(20000) + ":\n\tip: /ADDR sessionId: 0x0\n"
	if got := connections(askWord(t, addr, "dump")); got != want {
		t.Errorf("dump at 0s:\n%s\nwant\n%s", got, want)
	}
	// 12 s on, the first word's bucket is still there, empty.
	srv.Advance(12 * time.Second)
	want = "Connections Sets (2)/(1):\n0 expire at " + at(20000) + ":\n1 expire at " + at(30000) + ":\n\tip: /ADDR sessionId: 0x0\n"
	if got := connections(askWord(t, addr, "dump")); got != want {
		t.Errorf("dump at 12s:\n%s\nwant\n%s", got, want)
	}
	// 10 s later the first bucket has passed.
	srv.Advance(10 * time.Second)
	want = "Connections Sets (2)/(1):\n0 expire at " + at(30000) + ":\n1 expire at " + at(40000) + ":\n\tip: /ADDR sessionId: 0x0\n"
	if got := connections(askWord(t, addr, "dump")); got != want {
		t.Errorf("dump at 22s:\n%s\nwant\n%s", got, want)
	}

	// A session heard from 4 s after it began leaves its first bucket (the tick after its timeout) behind.
	conn, _, err := srv.Connect(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	sid := conn.SessionID()
	srv.Advance(4 * time.Second) // now 26 s: the session's bucket was 22+10 → 34 s
	if _, _, err := conn.Exists("/"); err != nil {
		t.Fatal(err)
	}
	sessions, _, _ := strings.Cut(askWord(t, addr, "dump"), "ephemeral nodes dump:")
	want = fmt.Sprintf("SessionTracker dump:\nSession Sets (2)/(1):\n0 expire at %s:\n1 expire at %s:\n\t%#x\n", at(34000), at(38000), sid)
	if sessions != want {
		t.Errorf("session sets:\n%s\nwant\n%s", sessions, want)
	}
	srv.Advance(9 * time.Second) // 35 s: the first bucket has passed (the client's pings meanwhile leave others)
	sessions, _, _ = strings.Cut(askWord(t, addr, "dump"), "ephemeral nodes dump:")
	if strings.Contains(sessions, at(34000)) || strings.Count(sessions, fmt.Sprintf("\t%#x\n", sid)) != 1 ||
		!strings.Contains(sessions, "/(1):\n") {
		t.Errorf("session sets 9s later: want the 34s bucket gone and the session listed once:\n%s", sessions)
	}
}
