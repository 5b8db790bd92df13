package realzk

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// dirMarkerFlag is a JVM system property that names the ensemble directory a
// server belongs to. It lets a later Start find (through /proc) and kill the
// JVMs of an ensemble whose Go process died before it could tear them down.
const dirMarkerFlag = "-Drealzk.dir="

// ownerFile, inside an ensemble directory, holds "<pid> <start time>" of the
// Go process that owns the directory; the pair survives pid reuse.
const ownerFile = "owner"

// dirPrefix is how every ensemble directory's name starts.
const dirPrefix = "realzk-"

// Linux sends a child's Pdeathsig when the *thread* that forked it exits, not
// when the process does. The Go runtime may end an OS thread (a goroutine that
// exits while locked to its thread takes the thread with it), so every JVM is
// forked from one goroutine that is locked to its thread and never returns:
// the parent thread of every JVM then lives exactly as long as this process.
var (
	spawnOnce     sync.Once
	spawnRequests chan spawnRequest
)

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

func spawnLoop() {
	runtime.LockOSThread() // never unlocked: this thread must outlive every child
	for req := range spawnRequests {
		req.done <- req.cmd.Start()
	}
}

// startProcess starts cmd in its own process group. With killOnParentDeath
// set, Linux SIGKILLs the process when this Go process dies, however it dies.
func startProcess(cmd *exec.Cmd, killOnParentDeath bool) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if !killOnParentDeath {
		return cmd.Start()
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	spawnOnce.Do(func() {
		spawnRequests = make(chan spawnRequest)
		go spawnLoop()
	})
	req := spawnRequest{cmd: cmd, done: make(chan error, 1)}
	spawnRequests <- req
	return <-req.done
}

// killGroup SIGKILLs the process group led by pid (every JVM leads its own).
func killGroup(pid int) error {
	err := syscall.Kill(-pid, syscall.SIGKILL)
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill process group %d: %w", pid, err)
	}
	return nil
}

// processStartTime returns the start time (in clock ticks since boot, field
// 22 of /proc/<pid>/stat) of a live process.
func processStartTime(pid int) (uint64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may contain spaces; fields after it follow
	// the last ')'.
	end := bytes.LastIndexByte(raw, ')')
	if end < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	fields := strings.Fields(string(raw[end+1:]))
	const startTimeField = 22 - 3 // fields[0] is field 3 (state)
	if len(fields) <= startTimeField {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	return strconv.ParseUint(fields[startTimeField], 10, 64)
}

// writeOwner records this process as the owner of dir.
func writeOwner(dir string) error {
	pid := os.Getpid()
	start, err := processStartTime(pid)
	if err != nil {
		return fmt.Errorf("read own start time: %w", err)
	}
	content := fmt.Sprintf("%d %d\n", pid, start)
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(content), 0o644); err != nil {
		return fmt.Errorf("write owner file: %w", err)
	}
	return nil
}

// ownerAlive reports whether the process recorded in dir's owner file is
// still running. A directory without an owner file counts as owned for its
// first minute (its creator may not have written the file yet).
func ownerAlive(dir string) bool {
	raw, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err != nil {
		info, statErr := os.Stat(dir)
		return statErr == nil && time.Since(info.ModTime()) < time.Minute
	}
	var pid int
	var start uint64
	if _, err := fmt.Sscanf(string(raw), "%d %d", &pid, &start); err != nil {
		return false
	}
	actual, err := processStartTime(pid)
	return err == nil && actual == start
}

// markedProcesses returns the pids of live processes whose command line
// carries the marker of dir.
func markedProcesses(dir string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	marker := []byte(dirMarkerFlag + dir + "\x00")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if bytes.Contains(cmdline, marker) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// SweepStale removes what dead harness processes left behind in parent (the
// directory ensembles are created in; "" means os.TempDir()): for every
// realzk-* directory whose owning Go process is gone, it SIGKILLs the JVMs
// still running from that directory and removes the directory. Ensembles of
// live processes, the harness's own or another user's, are left alone. Start
// calls it; it returns the directories it removed.
func SweepStale(parent string) ([]string, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	matches, err := filepath.Glob(filepath.Join(parent, dirPrefix+"*"))
	if err != nil {
		return nil, fmt.Errorf("list stale ensemble directories in %s: %w", parent, err)
	}
	var removed []string
	var errs []error
	for _, dir := range matches {
		if info, err := os.Stat(dir); err != nil || !info.IsDir() || ownerAlive(dir) {
			continue
		}
		for _, pid := range markedProcesses(dir) {
			if err := killGroup(pid); err != nil {
				errs = append(errs, err)
			}
			// The JVM leads its own group; kill the pid itself too in case it
			// was started some other way.
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("remove stale ensemble directory: %w", err))
			continue
		}
		removed = append(removed, dir)
	}
	return removed, errors.Join(errs...)
}

// processAlive reports whether pid names a live process (a zombie, dead but
// not yet reaped, counts as gone).
func processAlive(pid int) bool {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	end := bytes.LastIndexByte(raw, ')')
	if end < 0 || end+2 >= len(raw) {
		return false
	}
	state := raw[end+2]
	return state != 'Z' && state != 'X'
}
