// Command herd runs the herd experiment on a real ZooKeeper ensemble: for
// each N in -clients, N sessions contend for one lock with zero hold time —
// the recipe (each waiter watches its predecessor), check's parent-watching
// mutant, go-zookeeper's zk.Lock and Curator's InterProcessMutex (a Java
// driver it compiles and starts) — and, as the baseline, stay idle; -rounds
// rounds, the locks alternating, -duration per cell. Meanwhile -bystanders
// sessions do ordinary work on unrelated paths at -rate operations per
// second (open-loop), and the servers are asked for mntr. It prints the
// tables as markdown and writes an HTML report with inline SVG plots and
// the same tables as markdown into -out, and each plot as an SVG file. `make herd` runs it.
//
// It starts its own 3-server ensemble on 127.0.0.1 (realzk), or uses the
// one in ZK_SERVERS (whose servers must allow mntr).
//
// Usage:
//
//	go run ./realzk/cmd/herd [-clients 10,50,200,500] [-duration 5s] [-rounds 3] [-out out/herd]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
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
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "herd:", err)
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// options are the command's validated flags.
type options struct {
	experiment realzk.HerdExperiment
	out        string
}

// parseFlags parses and checks the command line; nothing has started yet
// when it fails.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("herd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	clients := fs.String("clients", "10,50,200,500", "comma-separated numbers of contending sessions (N), each at least 2")
	duration := fs.Duration("duration", 5*time.Second, "how long each cell (one lock, one N, one round) runs; at least 100ms")
	rounds := fs.Int("rounds", 3, "rounds per N; the locks alternate within each round, and each round rotates their order")
	variants := fs.String("variants", "recipe,watch-parent,zk.Lock,curator", "comma-separated locks to run (the no-contention baseline always runs)")
	bystanders := fs.Int("bystanders", 8, "bystander sessions doing unrelated work")
	rate := fs.Float64("rate", 400, "the bystanders' offered load, operations per second in all")
	out := fs.String("out", filepath.Join("out", "herd"), "directory for herd.html (the report) and herd.md (the tables); created if missing")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected arguments %q: every setting is a flag (see -h)", fs.Args())
	}
	ns, err := parseClients(*clients)
	if err != nil {
		return options{}, err
	}
	var vs []realzk.HerdVariant
	for field := range strings.SplitSeq(*variants, ",") {
		vs = append(vs, realzk.HerdVariant(strings.TrimSpace(field)))
	}
	if *bystanders < 1 {
		return options{}, fmt.Errorf("-bystanders %d: want at least 1", *bystanders)
	}
	if *rate < 1 {
		return options{}, fmt.Errorf("-rate %v: want at least 1 operation per second", *rate)
	}
	if *out == "" {
		return options{}, errors.New("-out is empty: give a directory for the report, e.g. out/herd")
	}
	x := realzk.HerdExperiment{Clients: ns, Duration: *duration, Rounds: *rounds, Variants: vs, Bystanders: *bystanders,
		BystanderRate: *rate, Progress: stderr}
	check := x
	check.Addrs = []string{"127.0.0.1:2181"} // addresses come later; everything else is checked now
	if err := check.Validate(); err != nil {
		return options{}, fmt.Errorf("%w (flags: -clients, -duration, -rounds, -variants)", err)
	}
	return options{experiment: x, out: *out}, nil
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

func run(args []string, stdout, stderr io.Writer) error {
	opts, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(opts.out, 0o755); err != nil {
		return fmt.Errorf("-out %s: %w", opts.out, err)
	}
	htmlPath, mdPath := filepath.Join(opts.out, "herd.html"), filepath.Join(opts.out, "herd.md")
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
			fmt.Fprintln(stderr, "herd:", err)
		}
	}()
	x := opts.experiment
	x.Addrs = e.Addrs()
	fmt.Fprintf(stderr, "herd: on %s: N=%v, %d rounds of %v cells, %d bystanders at %v/s; the machine's other load adds noise, the alternation spreads it over every lock alike\n",
		e.ConnectString(), x.Clients, x.Rounds, x.Duration, x.Bystanders, x.BystanderRate)
	// The JVMs compile their hot paths in the first seconds: warm them up so
	// that the first cell measured is not the slowest for that reason.
	warm := x
	warm.Clients, warm.Rounds, warm.Duration, warm.Path, warm.Progress = []int{10}, 1, 2*time.Second, "/realzk-herd-warmup", nil
	warm.Variants = []realzk.HerdVariant{realzk.HerdRecipe, realzk.HerdZKLock}
	fmt.Fprintln(stderr, "herd: warming the servers up")
	if _, err := realzk.RunHerdExperiment(ctx, warm); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	res, err := realzk.RunHerdExperiment(ctx, x)
	if err != nil {
		return err
	}
	md := realzk.FormatHerdMarkdown(res)
	fmt.Fprint(stdout, md)
	if err := os.WriteFile(mdPath, []byte(md), 0o644); err != nil {
		return fmt.Errorf("write the tables: %w", err)
	}
	if err := os.WriteFile(htmlPath, realzk.HerdHTML(res, realzk.HerdTitle(x.Duration)), 0o644); err != nil {
		return fmt.Errorf("write the report: %w", err)
	}
	for _, p := range realzk.HerdPlots(res) {
		if err := os.WriteFile(filepath.Join(opts.out, "herd-"+p.Name+".svg"), p.SVG, 0o644); err != nil {
			return fmt.Errorf("write the plots: %w", err)
		}
	}
	fmt.Fprintf(stdout, "\nreport: %s\ntables: %s\nplots: %s\n", htmlPath, mdPath, filepath.Join(opts.out, "herd-*.svg"))
	return nil
}
