package clients

import (
	"bufio"
	"bytes"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// process is a client program the test talks to: it writes the program's
// stdin and waits for lines on its stdout.
type process struct {
	name   string // for messages, e.g. "model: zkCli.sh"
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr bytes.Buffer
	done   chan struct{} // closed when stdout is read to its end

	mu    sync.Mutex
	lines []string // stdout so far, each line trimmed
}

// startProcess starts cmd, whose stdout and stderr it takes over.
func startProcess(t *testing.T, name string, cmd *exec.Cmd) *process {
	t.Helper()
	p := &process{name: name, cmd: cmd, done: make(chan struct{})}
	cmd.Stderr = &p.stderr
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: start: %v (%s)", name, err, installHint)
	}
	t.Cleanup(func() { cmd.Process.Kill() }) // in case the test fails first; harmless after Wait
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, strings.TrimSpace(sc.Text()))
			p.mu.Unlock()
		}
	}()
	return p
}

// send writes text to the program's stdin.
func (p *process) send(t *testing.T, text string) {
	t.Helper()
	if _, err := io.WriteString(p.stdin, text); err != nil {
		t.Fatalf("%s: write to stdin: %v", p.name, err)
	}
}

// waitLine waits until the program has printed n lines that match and
// returns the n-th.
func (p *process) waitLine(t *testing.T, what string, match func(string) bool, n int) string {
	t.Helper()
	deadline := time.Now().Add(scenarioTimeout)
	for {
		p.mu.Lock()
		var found []string
		for _, l := range p.lines {
			if match(l) {
				found = append(found, l)
			}
		}
		printed := strings.Join(p.lines, "\n")
		p.mu.Unlock()
		if len(found) >= n {
			return found[n-1]
		}
		select {
		case <-p.done:
			t.Fatalf("%s ended having printed %s %d times, want %d; stdout:\n%s\nstderr:\n%s", p.name, what, len(found), n, printed, p.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s printed %s %d times in %v, want %d; stdout:\n%s", p.name, what, len(found), scenarioTimeout, n, printed)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitFor waits until the program has printed line n times.
func (p *process) waitFor(t *testing.T, line string, n int) {
	t.Helper()
	p.waitLine(t, strconv.Quote(line), func(l string) bool { return l == line }, n)
}

// finish closes the program's stdin and waits for it to exit; it returns
// what cmd.Wait returns. The stdout lines are in p.lines.
func (p *process) finish() error {
	p.stdin.Close()
	<-p.done
	return p.cmd.Wait()
}
