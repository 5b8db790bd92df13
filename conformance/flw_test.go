package conformance

import (
	"io/fs"
	"path"
	"strings"
	"testing"
	"testing/fstest"
)

// TestFourLetterPattern: a golden answer matches its text literally and its marks as the figures they stand for.
func TestFourLetterPattern(t *testing.T) {
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
		re, err := fourLetterPattern(tc.golden)
		if err != nil {
			t.Fatalf("fourLetterPattern(%q): %v", tc.golden, err)
		}
		if got := re.MatchString(tc.answer); got != tc.match {
			t.Errorf("fourLetterPattern(%q) matches %q: %v, want %v", tc.golden, tc.answer, got, tc.match)
		}
	}
	for _, bad := range []string{"x {{int", "x {{number}} y"} {
		if _, err := fourLetterPattern(bad); err == nil {
			t.Errorf("fourLetterPattern(%q): no error", bad)
		}
	}
}

// TestCheckFourLetterWord: an answer is checked against its scenario's golden answer, and a difference is
// described by its first differing line, also past dump's empty buckets; a missing golden answer is an error.
func TestCheckFourLetterWord(t *testing.T) {
	dump := "Sets (1)/(1):\n{{empty sets}}1 expire at {{text}}:\n\tip: {{text}}\n"
	answers := fstest.MapFS{
		"flw/standalone/srvr.txt": {Data: []byte("Mode: standalone\nNode count: {{int}}\n")},
		"flw/standalone/dump.txt": {Data: []byte(dump)},
	}
	if err := checkFourLetterWord(answers, "standalone", "srvr", "Mode: standalone\nNode count: 5\n"); err != nil {
		t.Errorf("a matching answer: %v", err)
	}
	if err := checkFourLetterWord(answers, "standalone", "srvr", "Mode: leader\nNode count: 5\n"); err == nil || !strings.Contains(err.Error(), `at line 1: got "Mode: leader\n", want "Mode: standalone\n"`) {
		t.Errorf("another mode: %v", err)
	}
	if err := checkFourLetterWord(answers, "standalone", "dump", "Sets (1)/(1):\n0 expire at S:\n1 expire at T:\n\tip: x\n"); err != nil {
		t.Errorf("a dump with an empty bucket: %v", err)
	}
	err := checkFourLetterWord(answers, "standalone", "dump", "Sets (1)/(1):\n0 expire at S:\n1 expire at T:\n\tid: x\n")
	if err == nil || !strings.Contains(err.Error(), `at line 4: got "\tid: x\n", want "\tip: {{text}}\n"`) {
		t.Errorf("a dump that differs after an empty bucket: %v", err)
	}
	if err := checkFourLetterWord(answers, "leader", "srvr", ""); err == nil || !strings.Contains(err.Error(), "the golden answer of leader srvr") {
		t.Errorf("a missing golden answer: %v", err)
	}
	if err := CheckFourLetterWord("standalone", "kill", ""); err == nil || !strings.Contains(err.Error(), "the golden answer of standalone kill") {
		t.Errorf("a word that was not measured: %v", err)
	}
}

// TestGoldenAnswersParse: the measured answers are exactly one per word of FourLetterWords and scenario of
// FourLetterScenarios, and each is a valid pattern that matches itself with its marks filled in.
func TestGoldenAnswersParse(t *testing.T) {
	files, err := fs.Glob(measuredAnswers, "flw/*/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	if want := len(FourLetterScenarios) * len(FourLetterWords); len(files) != want {
		t.Errorf("%d measured answers, want %d (%d scenarios × %d words): %v", len(files), want, len(FourLetterScenarios), len(FourLetterWords), files)
	}
	for _, scenario := range FourLetterScenarios {
		for _, word := range FourLetterWords {
			golden, err := fs.ReadFile(measuredAnswers, path.Join("flw", scenario, word+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			filled := strings.NewReplacer("{{int}}", "7", "{{float}}", "0.5", "{{hex}}", "0x1", "{{text}}", "x", "{{empty sets}}", "0 expire at x:\n0 expire at y:\n").Replace(string(golden))
			if err := CheckFourLetterWord(scenario, word, filled); err != nil {
				t.Error(err)
			}
		}
	}
}
