package flwgolden

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPattern(t *testing.T) {
	for _, tc := range []struct {
		golden, answer string
		match          bool
	}{
		{"imok", "imok", true},
		{"imok", "imok\n", false},
		{"Zxid: {{hex}}\n", "Zxid: 0x100000000\n", true},
		{"Zxid: {{hex}}\n", "Zxid: 100000000\n", false},
		{"Received: {{int}}\n", "Received: -1\n", true},
		{"avg: {{float}}\n", "avg: 0.125\n", true},
		{"java.home={{text}}\nuser={{text}}\n", "java.home=/usr/lib/jvm\nuser=root\n", true},
		{"java.home={{text}}\nuser={{text}}\n", "java.home=/usr/lib/jvm\n", false},
		{"a.b (x)", "a.b (x)", true},
		{"a.b (x)", "aXb (x)", false},
		{"Sets (2)/(1):\n{{empty sets}}1 expire at {{text}}:\n", "Sets (2)/(1):\n1 expire at T:\n", true},
		{"Sets (2)/(1):\n{{empty sets}}1 expire at {{text}}:\n", "Sets (2)/(1):\n0 expire at S:\n0 expire at R:\n1 expire at T:\n", true},
		{"Sets (2)/(1):\n{{empty sets}}1 expire at {{text}}:\n", "Sets (2)/(1):\n2 expire at S:\n1 expire at T:\n", false},
	} {
		re, err := Pattern(tc.golden)
		if err != nil {
			t.Fatalf("Pattern(%q): %v", tc.golden, err)
		}
		if got := re.MatchString(tc.answer); got != tc.match {
			t.Errorf("Pattern(%q) matches %q: %v, want %v", tc.golden, tc.answer, got, tc.match)
		}
	}
	for _, bad := range []string{"x {{int", "x {{number}} y"} {
		if _, err := Pattern(bad); err == nil {
			t.Errorf("Pattern(%q): no error", bad)
		}
	}
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "standalone"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "standalone", "srvr.txt"), []byte("Mode: standalone\nNode count: {{int}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Check(dir, "standalone", "srvr", "Mode: standalone\nNode count: 5\n"); err != nil {
		t.Errorf("a matching answer: %v", err)
	}
	if err := Check(dir, "standalone", "srvr", "Mode: leader\nNode count: 5\n"); err == nil || !strings.Contains(err.Error(), `at line 1: got "Mode: leader\n", want "Mode: standalone\n"`) {
		t.Errorf("another mode: %v", err)
	}
	dump := "Sets (1)/(1):\n{{empty sets}}1 expire at {{text}}:\n\tip: {{text}}\n"
	if err := os.WriteFile(filepath.Join(dir, "standalone", "dump.txt"), []byte(dump), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Check(dir, "standalone", "dump", "Sets (1)/(1):\n0 expire at S:\n1 expire at T:\n\tip: x\n"); err != nil {
		t.Errorf("a dump with an empty bucket: %v", err)
	}
	err := Check(dir, "standalone", "dump", "Sets (1)/(1):\n0 expire at S:\n1 expire at T:\n\tid: x\n")
	if err == nil || !strings.Contains(err.Error(), `at line 4: got "\tid: x\n", want "\tip: {{text}}\n"`) {
		t.Errorf("a dump that differs after an empty bucket: %v", err)
	}
	if err := Check(dir, "leader", "srvr", ""); err == nil || !strings.Contains(err.Error(), "the golden answer of leader srvr") {
		t.Errorf("a missing golden answer: %v", err)
	}
}

// TestGoldenAnswersParse: every measured answer in model/testdata/flw is a valid pattern that matches
// itself with its marks filled in.
func TestGoldenAnswersParse(t *testing.T) {
	root := filepath.Join("..", "..", "model", "testdata", "flw")
	for _, scenario := range []string{"standalone", "leader", "follower", "noquorum", "default-whitelist", "default-whitelist-noquorum"} {
		for _, word := range Words {
			golden, err := os.ReadFile(filepath.Join(root, scenario, word+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			filled := strings.NewReplacer("{{int}}", "7", "{{float}}", "0.5", "{{hex}}", "0x1", "{{text}}", "x", "{{empty sets}}", "0 expire at x:\n0 expire at y:\n").Replace(string(golden))
			if err := Check(root, scenario, word, filled); err != nil {
				t.Error(err)
			}
		}
	}
}
