// Command herd runs the herd experiment on a real ZooKeeper ensemble: for
// each N in -clients, N sessions contend for one lock with zero hold time
// for -duration, with the recipe (each waiter watches its predecessor),
// check's parent-watching mutant, and go-zookeeper's zk.Lock; then the same
// N sessions measure the floor, one write plus one read per handoff. It
// prints watch notifications per release and acquisitions per second as a
// table, and draws them as an SVG plot whose path it prints. `make herd`
// runs it.
//
// It starts its own 3-server ensemble on 127.0.0.1 (realzk), or uses the
// one in ZK_SERVERS.
//
// Usage:
//
//	go run ./realzk/cmd/herd [-clients 10,50,200,500] [-duration 5s] [-out herd.svg]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zkmodel/zkmodel/realzk"
)

func main() {
	clients := flag.String("clients", "10,50,200,500", "comma-separated numbers of contending clients (N)")
	duration := flag.Duration("duration", 5*time.Second, "how long each variant, and the floor, runs per N")
	out := flag.String("out", filepath.Join(os.TempDir(), "zkmodel-herd.svg"), "where to write the SVG plot")
	flag.Parse()
	ns, err := parseClients(*clients)
	if err == nil {
		err = run(ns, *duration, *out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "herd:", err)
		os.Exit(1)
	}
}

// parseClients parses "10,50,200" into numbers of clients.
func parseClients(list string) ([]int, error) {
	var ns []int
	for field := range strings.SplitSeq(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil || n < 2 {
			return nil, fmt.Errorf("-clients %q: want comma-separated whole numbers of at least 2, e.g. 10,50,200,500", list)
		}
		ns = append(ns, n)
	}
	return ns, nil
}

func run(ns []int, duration time.Duration, out string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	addrs, err := realzk.FromEnv()
	if err != nil {
		return err
	}
	startCtx, cancel := context.WithTimeout(ctx, realzk.StartTimeout)
	defer cancel()
	// A bigger heap than the tests' default: 500 sessions that all watch
	// a directory of 500 children keep the servers busy.
	e, err := realzk.Start(startCtx, realzk.Config{Addrs: addrs, HeapMB: 512})
	if err != nil {
		return err
	}
	defer func() {
		if err := e.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "herd:", err)
		}
	}()
	fmt.Printf("herd experiment on %s: zero hold time, %v per variant and for the floor\n", e.ConnectString(), duration)
	// The JVMs compile their hot paths in the first seconds: warm them up so
	// that the first cell measured is not the slowest for that reason.
	warmCtx, cancelWarm := context.WithTimeout(ctx, 5*time.Minute)
	_, err = realzk.RunHerd(warmCtx, realzk.HerdConfig{Addrs: e.Addrs(), Clients: 10, Duration: 2 * time.Second, Path: "/realzk-herd-warmup"})
	cancelWarm()
	if err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	var rows []realzk.HerdRow
	for _, n := range ns {
		rowCtx, cancel := context.WithTimeout(ctx, 10*duration+5*time.Minute)
		row, err := realzk.RunHerd(rowCtx, realzk.HerdConfig{Addrs: e.Addrs(), Clients: n, Duration: duration, SessionTimeout: realzk.DefaultMaxSessionTimeout})
		cancel()
		if err != nil {
			return fmt.Errorf("with %d clients: %w", n, err)
		}
		rows = append(rows, row)
		fmt.Print(realzk.FormatHerdTable([]realzk.HerdRow{row}))
	}
	fmt.Println()
	fmt.Print(realzk.FormatHerdTable(rows))
	title := fmt.Sprintf("Herd effect: ZooKeeper 3.8, 3 servers, zero hold time, %v per cell", duration)
	if err := os.WriteFile(out, realzk.HerdSVG(rows, title), 0o644); err != nil {
		return fmt.Errorf("write the plot: %w", err)
	}
	fmt.Println("plot:", out)
	return nil
}
