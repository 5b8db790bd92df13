package clients

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// TestZkmodelServeFromPython: `zkmodel serve` (the built binary) serves a
// kazoo client, which drives the control endpoint itself — lists its
// session, severs its own connection, moves the clock, expires its own
// session — and sees what a ZooKeeper client sees on such faults. Then
// the server stops on SIGTERM with exit status 0.
func TestZkmodelServeFromPython(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	addrs, stop := startServe(ctx, t, "-addr", "127.0.0.1:0", "-control", "127.0.0.1:0")

	out, err := exec.CommandContext(ctx, python, filepath.Join("python", "zkmodel_control.py"), addrs.Addr, addrs.Control).Output()
	if err != nil {
		t.Errorf("zkmodel_control.py: %v\n%s", err, out)
	}
	want := []*regexp.Regexp{
		regexp.MustCompile(`^sessions lists mine: True ephemerals=1 connections=1$`),
		regexp.MustCompile(`^drop: dropped=1$`),
		regexp.MustCompile(`^after drop: same session True, ephemeral exists True$`),
		regexp.MustCompile(`^advance: now=2026-01-01T00:00:03Z$`),
		regexp.MustCompile(`^expire: True$`),
		regexp.MustCompile(`^after expire: new session True, ephemeral exists False$`),
		regexp.MustCompile(`^expire again: 404 zkmodel: no live session 0x[0-9a-f]+ \(GET /sessions lists them\)$`),
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(got) != len(want) {
		t.Fatalf("zkmodel_control.py printed %d lines, want %d:\n%s", len(got), len(want), out)
	}
	for i, re := range want {
		if !re.MatchString(got[i]) {
			t.Errorf("line %d: %q, want %s", i+1, got[i], re)
		}
	}

	stop()
}

// TestZkmodelServeEnsembleFromPython: `zkmodel serve` with three addresses
// serves kazoo an emulated ensemble; the client stops its own server and
// moves with its session, then loses and regains the majority and keeps its
// session through an hour of the virtual clock without one.
func TestZkmodelServeEnsembleFromPython(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	addrs, stop := startServe(ctx, t, "-addr", "127.0.0.1:0,127.0.0.1:0,127.0.0.1:0", "-control", "127.0.0.1:0")
	out, err := exec.CommandContext(ctx, python, filepath.Join("python", "kazoo_failover.py"), addrs.Addr, addrs.Control).Output()
	if err != nil {
		t.Errorf("kazoo_failover.py: %v\n%s", err, out)
	}
	want := []*regexp.Regexp{
		regexp.MustCompile(`^stopped its server: stopped$`),
		regexp.MustCompile(`^moved: other server True, same session True, ephemeral exists True$`),
		regexp.MustCompile(`^no majority: (stopped|not serving),(stopped|not serving),(stopped|not serving)$`),
		regexp.MustCompile(`^reconnected without a majority: False$`),
		regexp.MustCompile(`^majority back: same session True, ephemeral exists True, lost False$`),
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(got) != len(want) {
		t.Fatalf("kazoo_failover.py printed %d lines, want %d:\n%s", len(got), len(want), out)
	}
	for i, re := range want {
		if !re.MatchString(got[i]) {
			t.Errorf("line %d: %q, want %s", i+1, got[i], re)
		}
	}
	stop()
}

// serveAddrs is `zkmodel serve`'s startup line.
type serveAddrs struct{ Addr, Control string }

// serveControl returns a call of `zkmodel serve`'s control endpoint at control that POSTs /what?server=i
// ("stop" or "start") and fails unless it answers 200 OK.
func serveControl(ctx context.Context, control, what string) func(i int) error {
	return func(i int) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("%s/%s?server=%d", control, what, i), nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("zkmodel serve: POST /%s?server=%d: %w", what, i, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(resp.Body)
			return fmt.Errorf("zkmodel serve: POST /%s?server=%d: %s: %s", what, i, resp.Status, body)
		}
		return nil
	}
}

// startServe builds and starts `zkmodel serve` with args and returns its
// addresses and a stop that sends SIGTERM and checks it exits with 0.
func startServe(ctx context.Context, t *testing.T, args ...string) (serveAddrs, func()) {
	t.Helper()
	server := exec.CommandContext(ctx, buildZkmodel(ctx, t), append([]string{"serve"}, args...)...)
	stdout, err := server.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	server.Stderr = &stderr
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Process.Kill() }) // in case the test fails first; harmless after Wait
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("zkmodel serve's startup line: %v (%q); stderr:\n%s", err, line, stderr.String())
	}
	var addrs serveAddrs
	if err := json.Unmarshal([]byte(line), &addrs); err != nil {
		t.Fatalf("startup line %q: %v", line, err)
	}
	return addrs, func() {
		t.Helper()
		if err := server.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := server.Wait(); err != nil {
			t.Errorf("zkmodel serve after SIGTERM: %v, want exit status 0; stderr:\n%s", err, stderr.String())
		}
	}
}
