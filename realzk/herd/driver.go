package herd

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
	"github.com/zkmodel/zkmodel/internal/pyclients"
)

// The drivers of the other clients: N sessions in one process each, speaking one line
// protocol (java/HerdCurator.java documents it).
var (
	// herdCuratorSource is the Curator driver, compiled at run time.
	//
	//go:embed java/HerdCurator.java
	herdCuratorSource []byte
	// herdKazooSource is the kazoo driver, run by Debian's python3.
	//
	//go:embed python/herd_kazoo.py
	herdKazooSource []byte
)

// herdDriver is a driver program ready to run: the Curator driver compiled, or the kazoo
// driver written out, in a temporary directory.
type herdDriver struct {
	name    string // "Curator", "kazoo": for messages
	dir     string
	command func(ctx context.Context, connect string, n int, timeout time.Duration) *exec.Cmd
}

// newCuratorDriver compiles the Curator driver into a temporary directory.
func newCuratorDriver(ctx context.Context) (*herdDriver, error) {
	d, src, err := writeDriver("Curator", "HerdCurator.java", herdCuratorSource)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cp, err := javaclients.Compile(ctx, d.dir, src)
	if err != nil {
		d.close()
		return nil, fmt.Errorf("herd: Curator driver: %w", err)
	}
	d.command = func(ctx context.Context, connect string, n int, timeout time.Duration) *exec.Cmd {
		return javaclients.Command(ctx, cp, "HerdCurator", []string{"-Xmx512m", "-Xss256k"},
			connect, strconv.Itoa(n), strconv.FormatInt(timeout.Milliseconds(), 10))
	}
	return d, nil
}

// newKazooDriver writes the kazoo driver into a temporary directory, once python3 has
// shown that it imports kazoo.
func newKazooDriver(ctx context.Context) (*herdDriver, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := pyclients.Check(ctx, "kazoo.client", "kazoo.recipe.lock", "kazoo.recipe.election"); err != nil {
		return nil, fmt.Errorf("herd: kazoo driver: %w", err)
	}
	d, src, err := writeDriver("kazoo", "herd_kazoo.py", herdKazooSource)
	if err != nil {
		return nil, err
	}
	d.command = func(ctx context.Context, connect string, n int, timeout time.Duration) *exec.Cmd {
		return pyclients.Command(ctx, src, connect, strconv.Itoa(n), strconv.FormatInt(timeout.Milliseconds(), 10))
	}
	return d, nil
}

// writeDriver writes a driver's source into a new temporary directory.
func writeDriver(name, file string, source []byte) (*herdDriver, string, error) {
	dir, err := os.MkdirTemp("", "zkmodel-herd-"+strings.ToLower(name)+"-")
	if err != nil {
		return nil, "", fmt.Errorf("herd: %s driver: %w", name, err)
	}
	src := filepath.Join(dir, file)
	if err := os.WriteFile(src, source, 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, "", fmt.Errorf("herd: %s driver: %w", name, err)
	}
	return &herdDriver{name: name, dir: dir}, src, nil
}

func (d *herdDriver) close() { os.RemoveAll(d.dir) }

// driverSession is a running driver with its N sessions.
type driverSession struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string // stdout, line by line; closed at EOF
	exited chan struct{}
	stderr *tailBuffer
	cancel context.CancelFunc // kills the process
}

// start launches the driver with n sessions on addrs and waits for them to connect. The
// process lives until close, or until ctx ends.
func (d *herdDriver) start(ctx context.Context, addrs []string, n int, timeout time.Duration) (*driverSession, error) {
	procCtx, cancel := context.WithCancel(ctx)
	cmd := d.command(procCtx, strings.Join(addrs, ","), n, timeout)
	s := &driverSession{name: d.name, cmd: cmd, lines: make(chan string, 16), exited: make(chan struct{}),
		stderr: &tailBuffer{max: 4096}, cancel: cancel}
	cmd.Stderr = s.stderr
	var err error
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		cancel()
		return nil, fmt.Errorf("herd: %s driver: %w", d.name, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, fmt.Errorf("herd: %s driver: %w", d.name, err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("herd: %s driver: start %s: %w", d.name, cmd.Path, err)
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
	readyCtx, cancelReady := context.WithTimeout(ctx, 3*time.Minute)
	defer cancelReady()
	if _, err := s.await(readyCtx, "ready"); err != nil {
		s.close()
		return nil, fmt.Errorf("herd: %s driver with %d sessions: %w", d.name, n, err)
	}
	return s, nil
}

// await reads lines until one starts with word and returns it. An "error"
// line before it is kept for the error should the answer not come.
func (s *driverSession) await(ctx context.Context, word string) (string, error) {
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

// driverRun is a driver's answer to a run.
type driverRun struct {
	acquisitions, releases           int64
	writeAcquisitions, writeReleases int64
	errors                           int64
	handoffs                         []time.Duration
}

// parseDriverDone parses "done <acquisitions> <releases> <write acquisitions> <write
// releases> <errors> <handoffs>".
func parseDriverDone(line string) (driverRun, error) {
	f := strings.Fields(line)
	if len(f) != 7 || f[0] != "done" {
		return driverRun{}, fmt.Errorf("driver answer %q: want \"done <acquisitions> <releases> <write acquisitions> <write releases> <errors> <handoffs>\"", line)
	}
	var r driverRun
	for i, p := range []*int64{&r.acquisitions, &r.releases, &r.writeAcquisitions, &r.writeReleases, &r.errors} {
		n, err := strconv.ParseInt(f[1+i], 10, 64)
		if err != nil || n < 0 {
			return driverRun{}, fmt.Errorf("driver answer %q: field %d is not a count", line, 2+i)
		}
		*p = n
	}
	if f[6] != "-" {
		for h := range strings.SplitSeq(f[6], ",") {
			us, err := strconv.ParseInt(h, 10, 64)
			if err != nil || us < 0 {
				return driverRun{}, fmt.Errorf("driver answer %q: handoff %q is not a number of microseconds", line, h)
			}
			r.handoffs = append(r.handoffs, time.Duration(us)*time.Microsecond)
		}
	}
	return r, nil
}

// run has the driver's sessions contend for primitive on path for d; param is the
// primitive's (the read-write lock's writer spacing, the semaphore's leases).
func (s *driverSession) run(ctx context.Context, primitive Primitive, path string, d time.Duration, param int) (driverRun, error) {
	if _, err := fmt.Fprintf(s.stdin, "run %s %s %d %d\n", primitive, path, d.Milliseconds(), param); err != nil {
		return driverRun{}, fmt.Errorf("herd: %s driver: send run: %w", s.name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, d+3*time.Minute)
	defer cancel()
	var firstError string
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				return driverRun{}, fmt.Errorf("herd: %s driver exited during a run (stderr: %q)", s.name, s.stderr.String())
			}
			if msg, ok := strings.CutPrefix(line, "error "); ok {
				firstError = msg
				continue
			}
			r, err := parseDriverDone(line)
			if err == nil && r.errors > 0 {
				err = fmt.Errorf("%d sessions failed, the first with %s", r.errors, firstError)
			}
			if err != nil {
				return r, fmt.Errorf("herd: %s driver: %w", s.name, err)
			}
			return r, nil
		case <-ctx.Done():
			return driverRun{}, fmt.Errorf("herd: %s driver: no answer to run: %w", s.name, ctx.Err())
		}
	}
}

// close asks the driver to quit, and kills it if it has not within 20 s.
func (s *driverSession) close() {
	_, _ = io.WriteString(s.stdin, "quit\n")
	_ = s.stdin.Close()
	go func() {
		for range s.lines {
		}
	}()
	t := time.NewTimer(20 * time.Second)
	defer t.Stop()
	select {
	case <-s.exited:
	case <-t.C:
		s.cancel()
		<-s.exited
	}
	s.cancel()
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

// runDriverCell runs spec's primitive in a driver's sessions on dir for x.Duration. The
// servers' load, the bystanders' figures and the proxies' counts are taken at the end of
// the cell, the driver's when its sessions have stopped (waiters time out at the end of
// the cell and leave).
func runDriverCell(ctx context.Context, x Experiment, s *driverSession, by *bystanders, spec herdCellSpec, dir string) (Cell, error) {
	cell := Cell{Primitive: spec.primitive, Variant: spec.variant, Clients: -1, Notifications: -1, Requests: -1}
	type result struct {
		r   driverRun
		err error
	}
	load := startServerLoad(ctx, x.Addrs)
	window := by.begin()
	wire := spec.proxies.counts()
	start := time.Now()
	answer := make(chan result, 1)
	go func() {
		r, err := s.run(ctx, spec.primitive, spec.path(dir), x.Duration, spec.param(x))
		answer <- result{r, err}
	}()
	if err := sleep(ctx, x.Duration); err != nil {
		return cell, err
	}
	cell.Elapsed = time.Since(start)
	cell.Wire = spec.proxies.counts().Sub(wire)
	cell.Server = load.end(ctx)
	cell.Bystanders = by.end(window)
	res := <-answer
	cell.Acquisitions, cell.Releases = res.r.acquisitions, res.r.releases
	cell.WriteAcquisitions, cell.WriteReleases = res.r.writeAcquisitions, res.r.writeReleases
	cell.setHandoffs(res.r.handoffs)
	return cell, res.err
}
