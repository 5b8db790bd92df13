package realzk

import (
	"bufio"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkmodel/zkmodel/internal/javaclients"
)

// herdCuratorSource is the Curator driver, compiled at run time.
//
//go:embed java/HerdCurator.java
var herdCuratorSource []byte

// curatorDriver is the compiled Curator driver.
type curatorDriver struct {
	dir, classPath string
}

// newCuratorDriver compiles the driver into a temporary directory.
func newCuratorDriver(ctx context.Context) (*curatorDriver, error) {
	if err := javaclients.Check(); err != nil {
		return nil, fmt.Errorf("herd: Curator driver: %w", err)
	}
	dir, err := os.MkdirTemp("", "zkmodel-herd-curator-")
	if err != nil {
		return nil, fmt.Errorf("herd: Curator driver: %w", err)
	}
	src := filepath.Join(dir, "HerdCurator.java")
	if err := os.WriteFile(src, herdCuratorSource, 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("herd: Curator driver: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cp, err := javaclients.Compile(ctx, dir, src)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("herd: Curator driver: %w", err)
	}
	return &curatorDriver{dir: dir, classPath: cp}, nil
}

func (d *curatorDriver) close() { os.RemoveAll(d.dir) }

// curatorSession is a running driver with its N sessions.
type curatorSession struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string // stdout, line by line; closed at EOF
	exited chan struct{}
	stderr *tailBuffer
}

// start launches the driver with n sessions on addrs and waits for them to
// connect.
func (d *curatorDriver) start(ctx context.Context, addrs []string, n int, timeout time.Duration) (*curatorSession, error) {
	args := append(append([]string{}, javaclients.JVMFlags...), "-Xmx512m", "-Xss256k", "-cp", d.classPath,
		"HerdCurator", strings.Join(addrs, ","), strconv.Itoa(n), strconv.FormatInt(timeout.Milliseconds(), 10))
	cmd := exec.Command(javaclients.Java, args...)
	s := &curatorSession{cmd: cmd, lines: make(chan string, 16), exited: make(chan struct{}), stderr: &tailBuffer{max: 4096}}
	cmd.Stderr = s.stderr
	var err error
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("herd: Curator driver: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("herd: Curator driver: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("herd: Curator driver: start %s: %w", javaclients.Java, err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64*1024), 64<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
		_ = cmd.Wait()
		close(s.exited)
	}()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if _, err := s.await(ctx, "ready"); err != nil {
		s.close()
		return nil, fmt.Errorf("herd: Curator driver with %d sessions: %w", n, err)
	}
	return s, nil
}

// await reads lines until one starts with word and returns it. An "error"
// line before it is kept for the error should the answer not come.
func (s *curatorSession) await(ctx context.Context, word string) (string, error) {
	var lastError string
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				return "", fmt.Errorf("the driver exited before %q (%s; stderr: %q)", word, lastError, s.stderr.String())
			}
			if line == word || strings.HasPrefix(line, word+" ") {
				return line, nil
			}
			if msg, ok := strings.CutPrefix(line, "error "); ok {
				lastError = msg
				if word == "ready" {
					return "", errors.New(msg)
				}
			}
		case <-ctx.Done():
			return "", fmt.Errorf("no %q from the driver: %w", word, ctx.Err())
		}
	}
}

// curatorRun is the driver's answer to a run.
type curatorRun struct {
	acquisitions, releases, errors int64
	handoffs                       []time.Duration
}

// parseCuratorDone parses "done <acquisitions> <releases> <errors> <handoffs>".
func parseCuratorDone(line string) (curatorRun, error) {
	f := strings.Fields(line)
	if len(f) != 5 || f[0] != "done" {
		return curatorRun{}, fmt.Errorf("driver answer %q: want \"done <acquisitions> <releases> <errors> <handoffs>\"", line)
	}
	var r curatorRun
	for i, p := range []*int64{&r.acquisitions, &r.releases, &r.errors} {
		n, err := strconv.ParseInt(f[1+i], 10, 64)
		if err != nil || n < 0 {
			return curatorRun{}, fmt.Errorf("driver answer %q: field %d is not a count", line, 2+i)
		}
		*p = n
	}
	if f[4] != "-" {
		for h := range strings.SplitSeq(f[4], ",") {
			us, err := strconv.ParseInt(h, 10, 64)
			if err != nil || us < 0 {
				return curatorRun{}, fmt.Errorf("driver answer %q: handoff %q is not a number of microseconds", line, h)
			}
			r.handoffs = append(r.handoffs, time.Duration(us)*time.Microsecond)
		}
	}
	return r, nil
}

// run has the driver's sessions contend for the lock on path for d.
func (s *curatorSession) run(ctx context.Context, path string, d time.Duration) (curatorRun, error) {
	if _, err := fmt.Fprintf(s.stdin, "run %s %d\n", path, d.Milliseconds()); err != nil {
		return curatorRun{}, fmt.Errorf("herd: Curator driver: send run: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, d+3*time.Minute)
	defer cancel()
	var firstError string
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				return curatorRun{}, fmt.Errorf("herd: Curator driver exited during a run (stderr: %q)", s.stderr.String())
			}
			if msg, ok := strings.CutPrefix(line, "error "); ok {
				firstError = msg
				continue
			}
			r, err := parseCuratorDone(line)
			if err == nil && r.errors > 0 {
				err = fmt.Errorf("%d sessions failed, the first with %s", r.errors, firstError)
			}
			if err != nil {
				return r, fmt.Errorf("herd: Curator driver: %w", err)
			}
			return r, nil
		case <-ctx.Done():
			return curatorRun{}, fmt.Errorf("herd: Curator driver: no answer to run: %w", ctx.Err())
		}
	}
}

// close asks the driver to quit, and kills it if it has not within 20 s.
func (s *curatorSession) close() {
	_, _ = io.WriteString(s.stdin, "quit\n")
	_ = s.stdin.Close()
	go func() {
		for range s.lines {
		}
	}()
	select {
	case <-s.exited:
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// runCuratorCell runs Curator's InterProcessMutex in the driver's sessions
// on dir for x.Duration. The servers' load and the bystanders' figures are
// taken at the end of the cell, the driver's when its sessions have stopped
// (waiters time out at the end of the cell and leave).
func runCuratorCell(ctx context.Context, x HerdExperiment, s *curatorSession, by *bystanders, dir string) (HerdCell, error) {
	cell := HerdCell{Variant: HerdCurator, Clients: -1, Notifications: -1, Requests: -1}
	type result struct {
		r   curatorRun
		err error
	}
	load := startServerLoad(ctx, x.Addrs)
	window := by.begin()
	start := time.Now()
	answer := make(chan result, 1)
	go func() { r, err := s.run(ctx, dir, x.Duration); answer <- result{r, err} }()
	if err := sleep(ctx, x.Duration); err != nil {
		return cell, err
	}
	cell.Elapsed = time.Since(start)
	cell.Server = load.end(ctx)
	cell.Bystanders = by.end(window)
	res := <-answer
	cell.Acquisitions, cell.Releases = res.r.acquisitions, res.r.releases
	cell.setHandoffs(res.r.handoffs)
	return cell, res.err
}
