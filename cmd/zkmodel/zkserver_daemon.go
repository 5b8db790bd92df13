package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zkmodel/zkmodel/model"
)

// This file is `zkmodel zkserver-daemon`: one cluster's emulated ensemble, whose members the stand-in's
// processes (zkserver.go) start by attaching over a unix socket and stop by going away. Each process listens
// on its member's client port itself and carries its clients' connections to the member's wire address
// here, so that a killed process takes its port and its connections with it at once, as a real server's
// death does.

// daemonOptions are zkserver-daemon's flags, set by the stand-in that starts it.
type daemonOptions struct {
	socket            string
	members           int
	tick              time.Duration
	minSession        time.Duration
	maxSession        time.Duration
	fourLetterWords   string
	cluster           string
	superDigest       string
	extendedTypes     bool
	containerInterval time.Duration
	sasl              saslFlags
	linger            time.Duration
	reconfig          bool                   // reconfigEnabled
	skipACL           bool                   // zookeeper.skipACL=yes
	x509              bool                   // a secure client port: the x509 ACL scheme
	readOnly          readOnlyFlags          // readonlymode.enabled, localSessionsEnabled
	enforceAuth       string                 // the schemes enforce.auth requires, comma-separated ("": none)
	servers           []model.EnsembleMember // the server.N lines (nil: -members servers of the model's default configuration)
}

// defaultLinger is how long a daemon outlives the last of its members' processes (ZKMODEL_LINGER).
const defaultLinger = 30 * time.Second

func parseDaemonArgs(args []string) (daemonOptions, error) {
	fs := flag.NewFlagSet("zkmodel zkserver-daemon", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o daemonOptions
	fs.StringVar(&o.socket, "socket", "", "unix socket the members' processes attach on")
	fs.IntVar(&o.members, "members", 1, "servers in the ensemble")
	fs.DurationVar(&o.tick, "tick", 3*time.Second, "tickTime")
	fs.StringVar(&o.cluster, "cluster", "", "the cluster's server.N lines, for the log")
	servers := fs.String("servers", "", "the server.N lines, as JSON model.EnsembleMember values")
	o.registerSettings(fs)
	if err := fs.Parse(args); err != nil {
		return o, fmt.Errorf("%w: zkserver-daemon: %v (it is started by `zkmodel zkserver`, not by hand)", errUsage, err)
	}
	if o.socket == "" || o.members < 1 || o.tick <= 0 {
		return o, fmt.Errorf("%w: zkserver-daemon needs -socket, -members ≥ 1 and -tick > 0", errUsage)
	}
	if *servers != "" {
		if err := json.Unmarshal([]byte(*servers), &o.servers); err != nil || len(o.servers) != o.members {
			return o, fmt.Errorf("%w: zkserver-daemon -servers=%q: want a JSON list of the -members=%d servers (%v)", errUsage, *servers, o.members, err)
		}
	}
	o.linger = defaultLinger
	if v := os.Getenv("ZKMODEL_LINGER"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return o, fmt.Errorf("%w: ZKMODEL_LINGER=%q: want a Go duration such as 30s", errUsage, v)
		}
		o.linger = d
	}
	return o, nil
}

// registerSettings adds the flags of the settings a member's process sends again on every start (settingsArgs).
func (o *daemonOptions) registerSettings(fs *flag.FlagSet) {
	fs.DurationVar(&o.minSession, "min-session-timeout", 0, "minSessionTimeout (0: two ticks)")
	fs.DurationVar(&o.maxSession, "max-session-timeout", 0, "maxSessionTimeout (0: twenty ticks)")
	fs.StringVar(&o.fourLetterWords, "4lw-whitelist", "", "4lw.commands.whitelist as zoo.cfg gives it (empty: 3.8's default)")
	fs.StringVar(&o.superDigest, "super-digest", "", "super user digest")
	fs.BoolVar(&o.extendedTypes, "extended-types", false, "TTL nodes allowed")
	fs.DurationVar(&o.containerInterval, "container-check-interval", model.DefaultContainerCheckInterval*time.Millisecond, "container manager period")
	o.sasl.register(fs)
	fs.BoolVar(&o.reconfig, "reconfig", false, "reconfigEnabled")
	fs.BoolVar(&o.skipACL, "skip-acl", false, "zookeeper.skipACL=yes")
	fs.BoolVar(&o.x509, "x509", false, "the server has a secure client port: the x509 ACL scheme (client certificates)")
	o.readOnly.register(fs)
	fs.StringVar(&o.enforceAuth, "enforce-auth", "", "the schemes enforce.auth.schemes requires, comma-separated (empty: none)")
}

// settingsOptions are the model's options for the settings flags (reading the JAAS file, if one is named).
func (o *daemonOptions) settingsOptions() ([]model.Option, error) {
	opts := []model.Option{model.WithContainerCheckInterval(o.containerInterval),
		model.WithSessionTimeouts(o.minSession, o.maxSession), model.WithFourLetterWords(whitelistOf(o.fourLetterWords)...)}
	opts = append(opts, switchOptions(o.superDigest, o.extendedTypes, o.reconfig, o.skipACL)...)
	opts = append(opts, o.readOnly.options()...)
	if o.x509 {
		opts = append(opts, model.WithX509())
	}
	if o.enforceAuth != "" {
		opts = append(opts, model.WithEnforceAuth(strings.Split(o.enforceAuth, ",")...))
	}
	sasl, err := o.sasl.option()
	if err != nil {
		return nil, err
	}
	return append(opts, sasl), nil
}

// daemon is one cluster's ensemble and who is attached to it.
type daemon struct {
	o        daemonOptions
	srv      *model.Server
	backends []string // the model's wire address of each member, which the members' processes carry clients to
	log      io.Writer

	mu       sync.Mutex
	settings string              // the settings the running members started with (settingsKey); "" before the first
	attached []bool              // a process holds member i
	holders  []int               // its pid (0: not given)
	dataDirs map[string]struct{} // every dataDir a member named
	lastLeft time.Time           // when the last attached process went away (or the daemon started)
}

// runDaemon serves the cluster until nothing needs it any more (see package dropin).
func runDaemon(ctx context.Context, args []string, stderr io.Writer) error {
	o, err := parseDaemonArgs(args)
	if err != nil {
		return err
	}
	opts := []model.Option{model.WithSeed(time.Now().UnixNano()), model.WithTickTime(o.tick), model.WithEnsemble(o.members),
		model.WithStartTime(time.Now())}
	if o.servers != nil {
		opts = append(opts, model.WithMembers(o.servers...))
	}
	settings, err := o.settingsOptions()
	if err != nil {
		return err
	}
	srv := model.NewServer(append(opts, settings...)...)
	backends, err := srv.ListenEnsemble(o.members)
	if err != nil {
		return fmt.Errorf("start the model's wire server: %w", err)
	}
	for i := range o.members { // every member waits for its process
		if err := srv.StopServer(i); err != nil {
			return fmt.Errorf("stop member %d until its process attaches: %w", i, err)
		}
	}
	ln, err := net.Listen("unix", o.socket)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.socket, err)
	}
	d := &daemon{o: o, srv: srv, backends: backends, log: stderr,
		attached: make([]bool, o.members), holders: make([]int, o.members), dataDirs: map[string]struct{}{}, lastLeft: time.Now()}
	d.logf("daemon pid %d for %d server(s), tickTime %v, linger %v:\n%s", os.Getpid(), o.members, o.tick, o.linger, o.cluster)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); followWallClock(ctx, d.srv, d.o.tick) }()
	go func() {
		defer wg.Done()
		<-ctx.Done()
		ln.Close()
	}()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go d.handle(c)
		}
	}()
	removed := d.waitUnneeded(ctx)
	cancel()
	wg.Wait()
	os.Remove(o.socket)
	d.logf("exiting")
	if err := srv.Close(); err != nil {
		return fmt.Errorf("close the model: %w", err)
	}
	if removed { // a test's cluster, gone with its temporary directory: so are its daemon's files
		base := strings.TrimSuffix(o.socket, ".sock")
		os.Remove(base + ".log")
		os.Remove(base + ".lock")
	}
	return nil
}

func (d *daemon) logf(format string, args ...any) {
	fmt.Fprintf(d.log, "%s zkserver-daemon: %s\n", logTime(), fmt.Sprintf(format, args...))
}

// waitUnneeded returns once no process is attached and every dataDir is gone (true) or the linger time
// passed (false).
func (d *daemon) waitUnneeded(ctx context.Context) bool {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
		d.mu.Lock()
		any, since := false, time.Since(d.lastLeft)
		for _, a := range d.attached {
			any = any || a
		}
		gone := len(d.dataDirs) > 0
		for dir := range d.dataDirs {
			if _, err := os.Stat(dir); err == nil {
				gone = false
			}
		}
		d.mu.Unlock()
		switch {
		case any:
		case gone:
			d.logf("no server left and every dataDir removed")
			return true
		case since >= d.o.linger:
			d.logf("no server left for %v (ZKMODEL_LINGER)", d.o.linger)
			return false
		}
	}
}

// handle serves one process's connection: a status question, or an attach held until the process goes.
func (d *daemon) handle(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil {
		return
	}
	var req attachRequest
	reply := func(r attachReply) {
		r.PID = os.Getpid()
		b, _ := json.Marshal(r) // cannot fail: plain fields
		c.Write(append(b, '\n'))
	}
	if err := json.Unmarshal([]byte(line), &req); err != nil {
		reply(attachReply{Error: fmt.Sprintf("request %q: %v", strings.TrimSpace(line), err)})
		return
	}
	if req.Member < 0 || req.Member >= d.o.members {
		reply(attachReply{Error: fmt.Sprintf("member %d: this cluster has %d (do the zoo.cfg files of its servers list the same server.N lines?)", req.Member, d.o.members)})
		return
	}
	if req.Status {
		mode, _ := d.srv.Mode(req.Member) // in range
		reply(attachReply{OK: true, Mode: mode})
		return
	}
	if err := d.attach(req); err != nil {
		d.logf("member %d (pid %d) refused: %v", req.Member, req.PID, err)
		reply(attachReply{Error: err.Error()})
		return
	}
	mode, _ := d.srv.Mode(req.Member)
	reply(attachReply{OK: true, Mode: mode, Backend: d.backends[req.Member]})
	_, err = io.Copy(io.Discard, br) // until the process goes away
	d.detach(req, err)
}

// attach starts member req.Member for its process, which serves its clients on req.Addr. A member whose
// process has just died (a harness kills a server and starts it again at once) is taken over once the daemon
// has seen its connection close, as a real server's port is free once its process is gone.
func (d *daemon) attach(req attachRequest) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for d.attached[req.Member] {
		holder := d.holders[req.Member]
		if holder == 0 || processRuns(holder) || time.Now().After(deadline) {
			return fmt.Errorf("member %d is running already, in another process (pid %d: stop it first)", req.Member, holder)
		}
		d.mu.Unlock() // the dead holder's end of its connection is closed: detach comes
		time.Sleep(10 * time.Millisecond)
		d.mu.Lock()
	}
	if err := d.applySettings(req); err != nil {
		return err
	}
	if err := d.srv.StartServer(req.Member); err != nil {
		return err
	}
	d.attached[req.Member], d.holders[req.Member] = true, req.PID
	if req.DataDir != "" {
		d.dataDirs[req.DataDir] = struct{}{}
	}
	d.logf("member %d started on %s by pid %d", req.Member, req.Addr, req.PID)
	return nil
}

// applySettings gives the ensemble the settings req's process started with, as a real server reads its
// zoo.cfg, JVM flags and JAAS file afresh on each start: when they differ from the running members' (or no
// member runs), the model takes them (model.Server.ApplySettings). The model has one set of settings for the
// whole ensemble, so a member whose settings differ from those of members still running is refused, as is a
// tickTime other than the cluster's. Caller holds d.mu.
func (d *daemon) applySettings(req attachRequest) error {
	if req.Tick != 0 && req.Tick != d.o.tick {
		return fmt.Errorf("member %d: tickTime %v, but the cluster's daemon runs with %v: it keeps its tickTime while it lives; stop every server of the cluster and let the daemon exit (ZKMODEL_LINGER, %v) first", req.Member, req.Tick, d.o.tick, d.o.linger)
	}
	key, opts, err := settingsOf(req.Settings)
	if err != nil {
		return fmt.Errorf("member %d's settings %q: %w", req.Member, req.Settings, err)
	}
	if key == d.settings {
		return nil
	}
	for i, a := range d.attached {
		if a && d.settings != "" {
			return fmt.Errorf("member %d starts with settings %q, other than those member %d runs with: the stand-in runs one set of settings per cluster; stop every server, then start them all with the new settings", req.Member, req.Settings, i)
		}
	}
	if err := d.srv.ApplySettings(opts...); err != nil {
		return err
	}
	if d.settings != "" {
		d.logf("member %d starts with new settings, which the ensemble takes: %q", req.Member, req.Settings)
	}
	d.settings = key
	return nil
}

// settingsOf parses settings flags (settingsArgs) into the model's options, and returns a key that differs
// whenever they, or the JAAS file they name, do.
func settingsOf(args []string) (string, []model.Option, error) {
	fs := flag.NewFlagSet("zkserver settings", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o daemonOptions
	o.registerSettings(fs)
	if err := fs.Parse(args); err != nil {
		return "", nil, err
	}
	if fs.NArg() > 0 {
		return "", nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	opts, err := o.settingsOptions()
	if err != nil {
		return "", nil, err
	}
	key := strings.Join(append([]string{"settings"}, args...), "\x00")
	if o.sasl.jaasFile != "" {
		text, err := os.ReadFile(o.sasl.jaasFile)
		if err != nil {
			return "", nil, fmt.Errorf("read the JAAS file: %w", err)
		}
		key += "\x00" + string(text)
	}
	return key, opts, nil
}

// detach stops member req.Member: its process is gone.
func (d *daemon) detach(req attachRequest, why error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.srv.StopServer(req.Member); err != nil {
		d.logf("stop member %d: %v", req.Member, err)
	}
	d.attached[req.Member], d.holders[req.Member] = false, 0
	d.lastLeft = time.Now()
	if why == nil || errors.Is(why, io.EOF) {
		why = errors.New("connection closed")
	}
	d.logf("member %d stopped: its process (pid %d) went away (%v)", req.Member, req.PID, why)
}

// processRuns reports whether process pid runs: a zombie, which nothing has reaped yet, does not.
func processRuns(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

// whitelistOf reads 4lw.commands.whitelist as a 3.8 server reads it from zoo.cfg: comma-separated words, "*"
// for all, and words it does not know left out (a real server starts all the same); nil, for 3.8's default,
// when the list is empty.
func whitelistOf(list string) []string {
	var words []string
	for _, w := range strings.Split(list, ",") {
		if w = strings.TrimSpace(w); w == "*" || slices.Contains(model.FourLetterWords(), w) {
			words = append(words, w)
		}
	}
	return words
}
