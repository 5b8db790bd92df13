package term

import (
	"os"
	"syscall"
	"testing"
)

// Without a terminal on standard input (as under go test, make or CI), Foreground leaves the process group
// alone: signals keep coming from whoever started the process.
func TestForegroundWithoutATerminalChangesNothing(t *testing.T) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	stdin := os.Stdin
	os.Stdin = null
	defer func() { os.Stdin = stdin }()
	before := syscall.Getpgrp()
	restore := Foreground()
	restore()
	if after := syscall.Getpgrp(); after != before {
		t.Fatalf("process group moved from %d to %d without a terminal", before, after)
	}
}
