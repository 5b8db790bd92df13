package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBadFlagsStartNothing: every bad flag is refused with a message naming
// it, before a server starts or the output directory is made.
func TestBadFlagsStartNothing(t *testing.T) {
	out := filepath.Join(t.TempDir(), "herd")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-clients", "1"}, "-clients"},
		{[]string{"-clients", "10,x"}, "-clients"},
		{[]string{"-clients", ""}, "-clients"},
		{[]string{"-duration", "10ms"}, "100ms"},
		{[]string{"-rounds", "0"}, "rounds"},
		{[]string{"-variants", "recipe,nope"}, "unknown variant"},
		{[]string{"-variants", "recipe,recipe"}, "given twice"},
		{[]string{"-primitives", "mutex,barrier"}, "unknown primitive"},
		{[]string{"-primitives", ""}, "no primitives"},
		{[]string{"-impls", "recipe,zk.Lock"}, "unknown implementation"},
		{[]string{"-primitive-clients", "1"}, "-primitive-clients"},
		{[]string{"-primitive-clients", "2"}, "more clients than leases"},
		{[]string{"-leases", "0"}, "-leases"},
		{[]string{"-writer-every", "0"}, "-writer-every"},
		{[]string{"-primitive-duration", "1ms"}, "100ms"},
		{[]string{"-bystanders", "0"}, "-bystanders"},
		{[]string{"-rate", "0"}, "-rate"},
		{[]string{"-out", ""}, "-out"},
		{[]string{"-nope"}, "not defined"},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		args := append([]string{"-out", out}, tc.args...)
		err := run(args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("herd %s: %v, want an error saying %q", strings.Join(args, " "), err, tc.want)
		}
		if _, statErr := os.Stat(out); !os.IsNotExist(statErr) {
			t.Fatalf("herd %s made %s (%v) before refusing its flags", strings.Join(args, " "), out, statErr)
		}
	}
}

func TestGoodPrimitiveFlags(t *testing.T) {
	opts, err := parseFlags([]string{"-primitives", "rwlock, election", "-impls", "kazoo", "-primitive-clients", "3,20", "-leases", "1",
		"-writer-every", "2", "-primitive-duration", "1s", "-variants", ""}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if x := opts.experiment; len(x.Primitives) != 2 || x.Primitives[1] != "election" || len(x.Implementations) != 1 || x.Implementations[0] != "kazoo" ||
		len(x.PrimitiveClients) != 2 || x.PrimitiveClients[1] != 20 || x.Leases != 1 || x.WriterEvery != 2 || x.PrimitiveDuration != time.Second {
		t.Errorf("parsed %+v; want rwlock and election in kazoo at N=3,20, 1 lease, a writer every 2, 1s cells", x)
	}
}

func TestGoodFlags(t *testing.T) {
	opts, err := parseFlags([]string{"-clients", "10, 50", "-duration", "2s", "-rounds", "2", "-variants", "recipe,curator", "-out", "x"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	x := opts.experiment
	if len(x.Clients) != 2 || x.Clients[1] != 50 || x.Rounds != 2 || len(x.Variants) != 2 || x.Variants[1] != "curator" || opts.out != "x" {
		t.Errorf("parsed %+v, out %q; want N=10,50, 2 rounds, recipe and curator, out x", x, opts.out)
	}
}
