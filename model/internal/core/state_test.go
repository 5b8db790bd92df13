package core

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAppendStateIsCanonical: two cores given the same commands (every scenario's) encode the same state after
// each one, and a change the dump does not show (a connection's identity, the container manager's last pass)
// changes the encoding.
func TestAppendStateIsCanonical(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenario: %v", err)
	}
	for _, file := range files {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		cases, err := parseScenarios(string(text))
		if err != nil {
			t.Fatal(err)
		}
		a := &scenarioRun{c: New(1, 0), names: map[int64]string{}, ids: map[string]int64{}}
		b := &scenarioRun{c: New(1, 0), names: map[int64]string{}, ids: map[string]int64{}}
		for i, sc := range cases {
			for _, r := range []*scenarioRun{a, b} {
				if _, err := r.do(sc.command, i == 0); err != nil {
					t.Fatalf("%s:%d: %v", file, sc.line, err)
				}
			}
			if sa, sb := a.c.AppendState(nil), b.c.AppendState(nil); !bytes.Equal(sa, sb) {
				t.Fatalf("%s:%d: %s: the same commands encode differently:\n%s\n%s", file, sc.line, sc.command, sa, sb)
			}
		}
	}

	a, b := New(1, 0), New(1, 0)
	sa, sb := a.CreateSession(10*time.Second), b.CreateSession(10*time.Second)
	a.Apply(sa, &Request{Op: OpAuth, Path: "digest", Data: []byte("u:p")})
	var da, db strings.Builder
	a.Dump(&da)
	b.Dump(&db)
	if da.String() != db.String() {
		t.Fatalf("an identity shows in the dump; the test wants a change only the encoding sees")
	}
	if bytes.Equal(a.AppendState(nil), b.AppendState(nil)) {
		t.Errorf("an added identity does not change the encoding:\n%s", a.AppendState(nil))
	}
	b.Apply(sb, &Request{Op: OpAuth, Path: "digest", Data: []byte("u:p")})
	if !bytes.Equal(a.AppendState(nil), b.AppendState(nil)) {
		t.Errorf("the same identity encodes differently")
	}
}
