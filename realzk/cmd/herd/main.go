// Command herd runs the herd experiment on a real ZooKeeper ensemble: for
// each N in -clients, N sessions contend for one lock with zero hold time —
// the recipe (each waiter watches its predecessor), check's parent-watching
// mutant, go-zookeeper's zk.Lock and Curator's InterProcessMutex (a Java
// driver it compiles and starts) — and, as the baseline, stay idle; -rounds
// rounds, the locks alternating, -duration per cell. Then, for each N in
// -primitive-clients, N sessions contend for the read-write lock, the
// semaphore (-leases) and leader election, in the recipe's implementation,
// Curator's and kazoo's (a Python driver it starts), every contender's
// connection going through a proxy that counts its requests and the watch
// notifications it receives. Meanwhile -bystanders sessions do ordinary work
// on unrelated paths at -rate operations per second (open-loop), and the
// servers are asked for mntr. It prints the tables as markdown and writes an
// HTML report with inline SVG plots and the same tables as markdown into
// -out, and each plot as an SVG file. `make herd` runs it.
//
// It starts its own 3-server ensemble on 127.0.0.1 (realzk), or uses the
// one in ZK_SERVERS (whose servers must allow mntr).
//
// Usage:
//
//	go run ./realzk/cmd/herd [-primitives mutex,rwlock,semaphore,election] [-clients 10,50,200,500]
//	    [-variants recipe,watch-parent,zk.Lock,curator] [-primitive-clients 10,50] [-impls recipe,curator,kazoo]
//	    [-leases 2] [-writer-every 4] [-duration 5s] [-primitive-duration 3s] [-rounds 3] [-out out/herd]
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
	"github.com/zkmodel/zkmodel/realzk/herd"
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
	experiment herd.Experiment
	out        string
}

// parseFlags parses and checks the command line; nothing has started yet
// when it fails.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("herd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	primitives := fs.String("primitives", joinNames(herd.Primitives), "comma-separated primitives to measure")
	clients := fs.String("clients", "10,50,200,500", "the mutex's comma-separated numbers of contending sessions (N), each at least 2")
	duration := fs.Duration("duration", 5*time.Second, "how long each cell (one lock, one N, one round) runs; at least 100ms")
	rounds := fs.Int("rounds", 3, "rounds per N; the locks alternate within each round, and each round rotates their order")
	variants := fs.String("variants", joinNames(herd.Variants), "the mutex's comma-separated locks to run (the no-contention baseline always runs)")
	primitiveClients := fs.String("primitive-clients", "10,50", "comma-separated numbers of contending sessions (N) for the primitives beyond the mutex, each at least 2 and more than -leases")
	impls := fs.String("impls", joinNames(herd.Implementations), "comma-separated implementations of the primitives beyond the mutex")
	leases := fs.Int("leases", 2, "the semaphore's leases")
	primitiveDuration := fs.Duration("primitive-duration", 3*time.Second, "how long each cell of the primitives beyond the mutex runs; at least 100ms")
	writerEvery := fs.Int("writer-every", 4, "the read-write lock's contender i writes when i % this == 0, the others read (1: all write)")
	bystanders := fs.Int("bystanders", 8, "bystander sessions doing unrelated work")
	rate := fs.Float64("rate", 400, "the bystanders' offered load, operations per second in all")
	out := fs.String("out", filepath.Join("out", "herd"), "directory for herd.html (the report) and herd.md (the tables); created if missing")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected arguments %q: every setting is a flag (see -h)", fs.Args())
	}
	ns, err := parseClients("-clients", *clients)
	if err != nil {
		return options{}, err
	}
	pns, err := parseClients("-primitive-clients", *primitiveClients)
	if err != nil {
		return options{}, err
	}
	if *leases < 1 {
		return options{}, fmt.Errorf("-leases %d: want at least 1", *leases)
	}
	if *writerEvery < 1 {
		return options{}, fmt.Errorf("-writer-every %d: want at least 1 (1: every contender writes)", *writerEvery)
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
	x := herd.Experiment{Clients: ns, Duration: *duration, Rounds: *rounds, Variants: splitNames[herd.Variant](*variants),
		Primitives: splitNames[herd.Primitive](*primitives), Implementations: splitNames[herd.Variant](*impls),
		PrimitiveClients: pns, PrimitiveDuration: *primitiveDuration, Leases: *leases, WriterEvery: *writerEvery, Bystanders: *bystanders, BystanderRate: *rate, Progress: stderr}
	check := x
	check.Addrs = []string{"127.0.0.1:2181"} // addresses come later; everything else is checked now
	if err := check.Validate(); err != nil {
		return options{}, fmt.Errorf("%w (flags: -primitives, -clients, -variants, -primitive-clients, -impls, -leases, -duration, -primitive-duration, -rounds)", err)
	}
	return options{experiment: x, out: *out}, nil
}

// parseClients parses flag's "10,50,200" into numbers of clients.
func parseClients(flag, list string) ([]int, error) {
	var ns []int
	for field := range strings.SplitSeq(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil || n < 2 {
			return nil, fmt.Errorf("%s %q: want comma-separated whole numbers of at least 2, e.g. 10,50,200", flag, list)
		}
		ns = append(ns, n)
	}
	return ns, nil
}

// splitNames parses "a, b" into names ("" into none).
func splitNames[T ~string](list string) []T {
	names := []T{}
	for field := range strings.SplitSeq(list, ",") {
		if f := strings.TrimSpace(field); f != "" {
			names = append(names, T(f))
		}
	}
	return names
}

// joinNames is the inverse of splitNames, for the flags' defaults.
func joinNames[T ~string](names []T) string {
	s := make([]string, len(names))
	for i, n := range names {
		s[i] = string(n)
	}
	return strings.Join(s, ",")
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
	fmt.Fprintf(stderr, "herd: on %s: %v; mutex N=%v, the others N=%v (%v cells); %d rounds of %v cells, %d bystanders at %v/s; the machine's other load adds noise, the alternation spreads it over every lock alike\n",
		e.ConnectString(), x.Primitives, x.Clients, x.PrimitiveClients, x.PrimitiveDuration, x.Rounds, x.Duration, x.Bystanders, x.BystanderRate)
	// The JVMs compile their hot paths in the first seconds: warm them up so
	// that the first cell measured is not the slowest for that reason.
	warm := x
	warm.Clients, warm.Rounds, warm.Duration, warm.Path, warm.Progress = []int{10}, 1, 2*time.Second, "/realzk-herd-warmup", nil
	warm.Variants = []herd.Variant{herd.Recipe, herd.ZKLock}
	warm.Primitives = []herd.Primitive{herd.Mutex}
	fmt.Fprintln(stderr, "herd: warming the servers up")
	if _, err := herd.Run(ctx, warm); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	res, err := herd.Run(ctx, x)
	if err != nil {
		return err
	}
	md := herd.FormatMarkdown(res)
	fmt.Fprint(stdout, md)
	if err := os.WriteFile(mdPath, []byte(md), 0o644); err != nil {
		return fmt.Errorf("write the tables: %w", err)
	}
	if err := os.WriteFile(htmlPath, herd.HTML(res, herd.Title(x.Duration)), 0o644); err != nil {
		return fmt.Errorf("write the report: %w", err)
	}
	for _, p := range herd.Plots(res) {
		if err := os.WriteFile(filepath.Join(opts.out, "herd-"+p.Name+".svg"), p.SVG, 0o644); err != nil {
			return fmt.Errorf("write the plots: %w", err)
		}
	}
	fmt.Fprintf(stdout, "\nreport: %s\ntables: %s\nplots: %s\n", htmlPath, mdPath, filepath.Join(opts.out, "herd-*.svg"))
	return nil
}
