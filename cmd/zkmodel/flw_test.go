package main

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// askWord sends word to addr and returns what comes back until the connection closes; with halfClose the
// client shuts its sending side after the word, as `echo ruok | nc -N` does.
func askWord(t *testing.T, addr, word string, halfClose bool) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, word); err != nil {
		t.Fatal(err)
	}
	if halfClose {
		if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
	}
	got, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("%s to %s: %v", word, addr, err)
	}
	return string(got)
}

// TestServeFourLetterWords: the gateway passes four-letter words and their answers through unharmed (long,
// short, after a half close): each server answers with its own mode, -4lw-whitelist sets the words, and
// go-zookeeper's helpers get what they get from a real 3.8 server.
func TestServeFourLetterWords(t *testing.T) {
	s := serveInProcess(t, "-addr", "127.0.0.1:0,127.0.0.1:0,127.0.0.1:0", "-4lw-whitelist", "*")
	addrs := strings.Split(s.Addr, ",")
	for i, mode := range []string{"follower", "follower", "leader"} {
		if got := askWord(t, addrs[i], "srvr", false); !strings.Contains(got, "\nMode: "+mode+"\n") || !strings.HasPrefix(got, "Zookeeper version: 3.8.0-") {
			t.Errorf("srvr of server %d: %q, want mode %s", i, got, mode)
		}
	}
	for _, tc := range []struct{ word, want string }{{"ruok", "imok"}, {"isro", "rw"}, {"gtmk", "306"}, {"abcd", ""}} {
		for _, half := range []bool{false, true} {
			if got := askWord(t, addrs[0], tc.word, half); got != tc.want {
				t.Errorf("%s (half close %v): %q, want %q", tc.word, half, got, tc.want)
			}
		}
	}
	if mntr := askWord(t, addrs[2], "mntr", true); strings.Count(mntr, "\n") < 400 || !strings.Contains(mntr, "zk_server_state\tleader\n") {
		t.Errorf("mntr of the leader: %d lines, want some 500 with zk_server_state leader", strings.Count(mntr, "\n"))
	}

	conn, _ := connect(t, addrs[0])
	if oks := zk.FLWRuok(addrs, 10*time.Second); len(oks) != 3 || !oks[0] || !oks[1] || !oks[2] {
		t.Errorf("FLWRuok = %v, want all true", oks)
	}
	if stats, ok := zk.FLWSrvr(addrs[:1], 10*time.Second); ok || stats[0].Error == nil {
		t.Errorf("FLWSrvr: ok=%v %+v; want 3.8's version line unparsed, as on a real server", ok, stats[0])
	}
	cons, ok := zk.FLWCons(addrs[:1], 10*time.Second)
	if ok || cons[0].Error != nil || len(cons[0].Clients) != 1 || cons[0].Clients[0].SessionID != conn.SessionID() {
		t.Errorf("FLWCons: ok=%v %+v; want ok=false and session %#x", ok, cons[0], conn.SessionID())
	}
	// The client's session is unharmed by all of this.
	if _, err := conn.Create("/after-words", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Errorf("create after the words: %v", err)
	}

	plain := serveInProcess(t, "-addr", "127.0.0.1:0")
	if got := askWord(t, plain.Addr, "ruok", false); got != "ruok is not executed because it is not in the whitelist.\n" {
		t.Errorf("ruok with the default whitelist: %q", got)
	}
	if got := askWord(t, plain.Addr, "srvr", false); !strings.Contains(got, "Mode: standalone\n") {
		t.Errorf("srvr with the default whitelist: %q", got)
	}
}
