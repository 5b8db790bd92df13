package realzk

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Environment of the helper process TestTeardownWhenTestBinaryDies runs.
const (
	helperEnv          = "REALZK_TEARDOWN_HELPER"       // set: run as the helper
	helperNoDeathEnv   = "REALZK_TEARDOWN_NO_PDEATH"    // set: start without Pdeathsig
	helperParentDirEnv = "REALZK_TEARDOWN_PARENT_DIR"   // Config.Dir for the helper
	helperReadyPrefix  = "REALZK_TEARDOWN_HELPER_READY" // line the helper prints
)

// TestTeardownHelper is not a test: run by TestTeardownWhenTestBinaryDies
// in a child process, it starts a one-server ensemble, reports it and
// waits to be killed.
func TestTeardownHelper(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		return // only meaningful as the child of TestTeardownWhenTestBinaryDies
	}
	cfg := Config{Servers: 1, Dir: os.Getenv(helperParentDirEnv), noParentDeathSignal: os.Getenv(helperNoDeathEnv) != ""}
	e, err := Start(context.Background(), cfg)
	if err != nil {
		fmt.Println("REALZK_TEARDOWN_HELPER_ERROR", err)
		os.Exit(1)
	}
	fmt.Printf("%s %d %s\n", helperReadyPrefix, e.pids()[0], e.Dir())
	select {} // until killed
}

// TestTeardownWhenTestBinaryDies SIGKILLs a test binary that runs an
// ensemble and checks that its JVM dies with it (Pdeathsig) and, for a JVM
// started without Pdeathsig, that the next Start's sweep kills it and
// removes the directory.
func TestTeardownWhenTestBinaryDies(t *testing.T) {
	for _, tc := range []struct {
		name          string
		noDeathSignal bool
	}{
		{"pdeathsig kills the JVM", false},
		{"sweep kills an orphaned JVM", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			parent := t.TempDir()
			ctx := testContext(t, 60*time.Second)
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestTeardownHelper$", "-test.v")
			cmd.Env = append(os.Environ(), helperEnv+"=1", helperParentDirEnv+"="+parent)
			if tc.noDeathSignal {
				cmd.Env = append(cmd.Env, helperNoDeathEnv+"=1")
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			var jvm int
			var dir string
			lines := bufio.NewScanner(stdout)
			for lines.Scan() {
				if rest, ok := strings.CutPrefix(lines.Text(), helperReadyPrefix+" "); ok {
					if _, err := fmt.Sscanf(rest, "%d %s", &jvm, &dir); err != nil {
						t.Fatalf("helper said %q: %v", lines.Text(), err)
					}
					break
				}
				t.Logf("helper: %s", lines.Text())
			}
			if jvm == 0 {
				t.Fatalf("helper exited without starting an ensemble")
			}
			// Whatever happens below, leave no JVM behind (only kill what
			// still carries the helper's marker: the pid may be reused).
			t.Cleanup(func() {
				for _, pid := range markedProcesses(dir) {
					_ = killGroup(pid)
				}
			})
			if !processAlive(jvm) {
				t.Fatalf("helper's JVM %d is not running", jvm)
			}

			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()

			if !tc.noDeathSignal {
				if err := waitGone(ctx, jvm); err != nil {
					t.Fatalf("JVM outlived its killed parent: %v", err)
				}
			} else if !processAlive(jvm) {
				t.Fatalf("JVM %d started without Pdeathsig died with its parent; the sweep is untested", jvm)
			}
			if _, err := os.Stat(dir); err != nil {
				t.Fatalf("the killed helper's directory should still exist until a sweep: %v", err)
			}

			// A live owner's directory is never swept.
			mine := filepath.Join(parent, dirPrefix+"live")
			if err := os.Mkdir(mine, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := writeOwner(mine); err != nil {
				t.Fatal(err)
			}

			removed, err := SweepStale(parent)
			if err != nil {
				t.Fatal(err)
			}
			if len(removed) != 1 || removed[0] != dir {
				t.Errorf("SweepStale removed %v, want just %s", removed, dir)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("stale directory %s survived the sweep (stat: %v)", dir, err)
			}
			if _, err := os.Stat(mine); err != nil {
				t.Errorf("the sweep removed a live process's directory: %v", err)
			}
			if err := waitGone(ctx, jvm); err != nil {
				t.Errorf("JVM survived the sweep: %v", err)
			}
		})
	}
}

// waitGone waits until pid is no longer a live process.
func waitGone(ctx context.Context, pid int) error {
	for processAlive(pid) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("process %d still alive: %w", pid, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}
