// Command ensemble starts a local ZooKeeper 3.8 ensemble with realzk, prints
// its client addresses, a ready-to-paste ZK_SERVERS line and which server
// leads, and runs until Ctrl-C or SIGTERM, then tears it all down (no JVM
// and no data directory is left). `make ensemble` runs it.
//
// Usage:
//
//	go run ./realzk/cmd/ensemble [-servers 3] [-tick 100ms]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/zkmodel/zkmodel/internal/term"
	"github.com/zkmodel/zkmodel/realzk"
)

// init asks Linux to send SIGTERM when the parent process (`go run`, which
// does not pass a SIGTERM on) dies, so the ensemble is torn down then too.
// The main goroutine stays on the main thread, the one the setting is made
// on.
func init() {
	runtime.LockOSThread()
	parent := os.Getppid()
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0); errno != 0 {
		fmt.Fprintln(os.Stderr, "ensemble: cannot ask for a parent-death signal:", errno)
	}
	if os.Getppid() != parent {
		os.Exit(1) // the parent died before the setting took effect
	}
}

func main() {
	// A flag set of its own: the packages it imports register test flags (rapid's, the checker's) on the
	// default one, and they mean nothing here.
	fs := flag.NewFlagSet("ensemble", flag.ExitOnError)
	servers := fs.Int("servers", realzk.DefaultServers, "number of servers")
	tick := fs.Duration("tick", realzk.DefaultTickTime, "ZooKeeper tickTime")
	_ = fs.Parse(os.Args[1:])
	if *servers < 1 {
		fmt.Fprintf(os.Stderr, "ensemble: -servers %d: want 1 or more\n", *servers)
		os.Exit(2)
	}
	if *tick <= 0 {
		fmt.Fprintf(os.Stderr, "ensemble: -tick %s: want a positive duration, e.g. 100ms\n", *tick)
		os.Exit(2)
	}
	// Ctrl-C reaches only this program, which stops the ensemble and exits 0, and so do make and go run.
	restore := term.Foreground()
	err := run(*servers, *tick)
	restore()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ensemble:", err)
		os.Exit(1)
	}
}

func run(servers int, tick time.Duration) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	startCtx, cancel := context.WithTimeout(ctx, realzk.StartTimeout)
	defer cancel()
	e, err := realzk.Start(startCtx, realzk.Config{Servers: servers, TickTime: tick})
	if err != nil {
		return err
	}
	defer func() {
		if err := e.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "ensemble:", err)
		}
		fmt.Println("ensemble stopped; its servers and directory are gone")
	}()
	leader, err := e.Leader(startCtx)
	if err != nil {
		return err
	}
	fmt.Printf("ZooKeeper ensemble of %d servers is up (tickTime %v, session timeouts %v to %v):\n",
		e.Servers(), tick, 2*tick, realzk.DefaultMaxSessionTimeout)
	for i, addr := range e.Addrs() {
		role := "follower"
		if i == leader {
			role = "leader"
		}
		if e.Servers() == 1 {
			role = "standalone"
		}
		fmt.Printf("  server %d  %s  %-10s log %s\n", i, addr, role, e.LogPath(i))
	}
	fmt.Printf("\nexport ZK_SERVERS=%s\n\nCtrl-C stops it.\n", e.ConnectString())
	<-ctx.Done()
	fmt.Println("\nstopping…")
	return nil
}
