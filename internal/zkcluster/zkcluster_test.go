package zkcluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteAnEnsemble: three servers get distinct ports, a myid each, the server.N lines of all three in
// every zoo.cfg, and the extra lines last.
func TestWriteAnEnsemble(t *testing.T) {
	base := t.TempDir()
	servers := Write(t, base, 3, "reconfigEnabled=true")
	seen := map[int]bool{}
	for i, s := range servers {
		if seen[s.ClientPort] {
			t.Errorf("client port %d given twice", s.ClientPort)
		}
		seen[s.ClientPort] = true
		if want := filepath.Join(base, "srv"+string(rune('1'+i))); s.Dir != want || s.Cfg != filepath.Join(want, "zoo.cfg") {
			t.Errorf("server %d: dir %s, cfg %s; want %s and its zoo.cfg", i, s.Dir, s.Cfg, want)
		}
		myid, err := os.ReadFile(filepath.Join(s.Dir, "myid"))
		if err != nil || string(myid) != string(rune('1'+i))+"\n" {
			t.Errorf("server %d: myid %q (%v)", i, myid, err)
		}
		raw, err := os.ReadFile(s.Cfg)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
		if lines[len(lines)-1] != "reconfigEnabled=true" || !strings.Contains(string(raw), "dataDir="+s.Dir+"\n") ||
			!strings.Contains(string(raw), "clientPort="+s.Addr()[len("127.0.0.1:"):]+"\n") || strings.Count(string(raw), "server.") != 3 {
			t.Errorf("server %d's zoo.cfg:\n%s", i, raw)
		}
	}
}

// TestWriteAStandaloneServer: one server has no server.N lines and no myid.
func TestWriteAStandaloneServer(t *testing.T) {
	s := Write(t, t.TempDir(), 1)[0]
	raw, err := os.ReadFile(s.Cfg)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "server.") {
		t.Errorf("a standalone zoo.cfg with server lines:\n%s", raw)
	}
	if _, err := os.Stat(filepath.Join(s.Dir, "myid")); !os.IsNotExist(err) {
		t.Errorf("a standalone server has a myid (%v)", err)
	}
}
