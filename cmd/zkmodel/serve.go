package main

import (
	"bufio"
	"context"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel"
	"github.com/zkmodel/zkmodel/internal/keystore"
	"github.com/zkmodel/zkmodel/model"
)

// errUsage marks errors in the command line (exit status 2).
var errUsage = errors.New("usage")

// options are serve's validated flags.
type options struct {
	addr    string
	control string
	seed    int64
	tick    time.Duration

	superDigest       string        // -super-digest: the super user, user:base64(sha1(user:password))
	extendedTypes     bool          // -extended-types: TTL nodes allowed
	containerInterval time.Duration // -container-check-interval: the container manager's period
	fourLetterWords   []string      // -4lw-whitelist: the four-letter words the servers answer
	reconfig          bool          // -reconfig: reconfigEnabled=true
	skipACL           bool          // -skip-acl: zookeeper.skipACL=yes
	enforceAuth       []string      // -enforce-auth: the schemes enforce.auth.schemes requires (nil: none)
	readOnly          readOnlyFlags // -readonly-mode, -local-sessions
	clock             string        // -clock: clockVirtual or clockWall
	secureAddr        string        // -secure-addr: TLS client addresses, one per -addr address ("": none)
	tls               keystore.Settings
	tlsConfig         *tls.Config  // what -keystore and the other TLS flags make
	sasl              saslFlags    // -jaas, -jaas-section, -sasl-superuser, -sasl-acls
	saslOption        model.Option // what the SASL flags make of the JAAS file
}

// commandsText says what zkmodel's commands are, for a command line without one.
const commandsText = "the commands are serve (zkmodel serve [flags]: the model on TCP with an HTTP control endpoint; " +
	"zkmodel serve -h lists its flags), zkserver (" + zkserverCommand + ": ZooKeeper's server script on the model, " +
	"which dropin/bin/zkServer.sh runs), merge (zkmodel merge REPORT.json…: one verdict from the parts of a checker " +
	"search split with -check.shard) and version (zkmodel version: the module's version)"

// zkserverCommand is the zkserver command's synopsis.
const zkserverCommand = "zkmodel zkserver {start|start-foreground|stop|status|restart|print-cmd|version} [zoo.cfg]"

const usageText = `usage: zkmodel serve [-addr 127.0.0.1:2181[,host:port…]] [-control 127.0.0.1:0] [-seed 1] [-tick 2s]
                     [-super-digest user:hash] [-extended-types] [-container-check-interval 1m]
                     [-4lw-whitelist srvr[,word…]|*] [-reconfig] [-skip-acl] [-enforce-auth sasl]
                     [-secure-addr 127.0.0.1:2281[,…] -keystore file [-keystore-password p]
                      [-truststore file [-truststore-password p]] [-client-auth need]]
                     [-jaas file [-jaas-section Server]] [-sasl-superuser user] [-sasl-acls]
       ` + zkserverCommand + `

Serves the deterministic in-memory ZooKeeper 3.8 on -addr to clients in any
language, and a control endpoint on -control (HTTP). Several comma-separated
addresses make an emulated ensemble: one state, one server per address
(server 0, 1, …), each of which can be stopped and started.

  GET  /sessions             live sessions (JSON)
  POST /expire?session=0x…   expire a session
  POST /drop?session=0x…     sever a session's TCP connections
  POST /advance?by=5s        move the virtual clock forward (by this much more,
                             with -clock wall)
  GET  /dump                 the whole state as text
  GET  /servers              each server's address and mode (JSON)
  POST /stop?server=1        stop server 1 as if killed: its connections close,
                             its port refuses; without a majority none serves
  POST /start?server=1       start it again on its port

Each server also answers ZooKeeper's four-letter words (echo srvr | nc host
port) as ZooKeeper 3.8 does, those in -4lw-whitelist; the others answer
"<word> is not executed because it is not in the whitelist.".

Several addresses' /zookeeper/config lists server.1 to server.N with their
client addresses. With -reconfig, reconfig (go-zookeeper's IncrementalReconfig
and Reconfig, kazoo's reconfig) changes that membership as on a ZooKeeper 3.8
with reconfigEnabled=true: the super user may (-super-digest), or whoever an
ACL on /zookeeper/config lets write (without a super user nobody may: NoAuth),
or anyone with -skip-acl (zookeeper.skipACL=yes, which checks no ACL at all);
a joining server the ensemble does not run counts as stopped. Without it
reconfig fails with ZRECONFIGDISABLED.

With -secure-addr (one address per -addr server), TLS clients connect there,
as to a ZooKeeper 3.8 secureClientPort: the key store (PKCS12, JKS or PEM) and
trust store as ssl.keyStore.* and ssl.trustStore.*, TLSv1.2, a client
certificate required unless -client-auth says otherwise.

The clock is virtual: it starts at 2026-01-01T00:00:00Z and only POST
/advance moves it, so sessions of clients that went away, TTL nodes and empty
containers stay until a test advances it. With -clock wall it follows the wall
clock from now, as a real server's and the stand-in's do: a TTL node of 1 ms
goes at the container manager's next pass (-container-check-interval, 1 minute
by default as znode.container.checkIntervalMs).

With -readonly-mode (readonlymode.enabled=true), a server of an ensemble
without a quorum (POST /stop the others) is read-only once max(2 s, tickTime)
have passed on its clock (-clock wall, or POST /advance): a client that allows
read-only (kazoo's read_only=True, zkCli.sh -r) gets a read-only session with
-local-sessions (localSessionsEnabled=true; without it the connect request is
answered with NotReadOnly), reads are served and writes get NotReadOnly
(-119); isro answers ro. When the quorum comes back, its connections close.
With -local-sessions the sessions of an ensemble's servers are local, as 3.8's:
no transaction, resumed only on their own server; an ephemeral create gets
EphemeralOnLocalSession (-120), or with -local-sessions-upgrading makes the
session global first.

With -jaas, the users of the JAAS file's Server section log in by SASL
DIGEST-MD5 (kazoo's sasl_options, a Java client's JAAS Client section), as on
a ZooKeeper 3.8 started with -Djava.security.auth.login.config=file.

Prints {"addr":…,"control":…,"seed":…,"tick":…} on stdout once listening
("addr" is the connect string: the addresses, comma-separated); stops on
SIGINT/SIGTERM with exit status 0.

zkserver is ZooKeeper's zkServer.sh on the model, for harnesses that start
ZooKeeper themselves: dropin/bin/zkServer.sh runs it (see package dropin).

serve's flags:
`

// parseArgs validates the command line: "serve" and its flags. For -h it
// prints the usage on stdout and returns flag.ErrHelp.
func parseArgs(args []string, stdout io.Writer) (options, error) {
	fs := flag.NewFlagSet("zkmodel serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var o options
	fs.StringVar(&o.addr, "addr", "127.0.0.1:2181", "`host:port` ZooKeeper clients connect to (port 0 picks a free one); comma-separated for an ensemble")
	fs.StringVar(&o.control, "control", "127.0.0.1:0", "`host:port` of the HTTP control endpoint (port 0 picks a free one)")
	fs.Int64Var(&o.seed, "seed", 1, "seed of the model (orders listings, derives session ids)")
	fs.DurationVar(&o.tick, "tick", 2*time.Second, "ZooKeeper tickTime: session timeouts are clamped to [2, 20] ticks")
	fs.StringVar(&o.superDigest, "super-digest", "", "the super user as `user:base64(sha1(user:password))`, as zookeeper.DigestAuthenticationProvider.superDigest (empty: none)")
	fs.BoolVar(&o.extendedTypes, "extended-types", false, "allow TTL nodes, as zookeeper.extendedTypesEnabled=true")
	fs.BoolVar(&o.reconfig, "reconfig", false, "allow dynamic reconfiguration (the super user's, or whoever may write /zookeeper/config), as reconfigEnabled=true")
	fs.BoolVar(&o.skipACL, "skip-acl", false, "check no ACL (anyone may do anything, reconfig too), as zookeeper.skipACL=yes")
	o.readOnly.register(fs)
	fs.StringVar(&o.clock, "clock", clockVirtual, "virtual: the clock moves only by POST /advance; wall: it follows the wall clock from now, as a real server's (sessions expire, TTL nodes and containers go on time)")
	fs.StringVar(&o.secureAddr, "secure-addr", "", "`host:port` TLS clients connect to, one per -addr address (comma-separated), as secureClientPort; needs -keystore")
	fs.StringVar(&o.tls.KeyStore, "keystore", "", "the secure port's key store `file` (PKCS12, JKS or PEM), as ssl.keyStore.location")
	fs.StringVar(&o.tls.KeyStorePassword, "keystore-password", "", "its password, as ssl.keyStore.password")
	fs.StringVar(&o.tls.KeyStoreType, "keystore-type", "", "PKCS12, JKS or PEM (empty: from the file's extension), as ssl.keyStore.type")
	fs.StringVar(&o.tls.TrustStore, "truststore", "", "the trust store `file` client certificates are checked against, as ssl.trustStore.location")
	fs.StringVar(&o.tls.TrustStorePassword, "truststore-password", "", "its password, as ssl.trustStore.password")
	fs.StringVar(&o.tls.TrustStoreType, "truststore-type", "", "PKCS12, JKS or PEM (empty: from the file's extension), as ssl.trustStore.type")
	fs.StringVar(&o.tls.ClientAuth, "client-auth", "need", "need, want or none: client certificates, as ssl.clientAuth")
	enforce := fs.String("enforce-auth", "", "serve only connections authenticated by one of these `schemes` (sasl, digest, ip; comma-separated), as enforce.auth.enabled=true with enforce.auth.schemes (sessionRequireClientSASLAuth=true: sasl); others get ZSESSIONCLOSEDREQUIRESASLAUTH (-124)")
	fs.DurationVar(&o.containerInterval, "container-check-interval", time.Minute, "how often the container manager deletes empty containers and expired TTL nodes (virtual time), as znode.container.checkIntervalMs")
	o.sasl.register(fs)
	whitelist := fs.String("4lw-whitelist", "srvr", "the four-letter words the servers answer, comma-separated, or * for all, as 4lw.commands.whitelist (3.8's default: srvr)")
	usage := func() error {
		fmt.Fprint(stdout, usageText)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return flag.ErrHelp
	}
	if len(args) == 0 || args[0] != "serve" {
		if len(args) > 0 && slices.Contains([]string{"-h", "-help", "--help", "help"}, args[0]) {
			return o, usage()
		}
		if len(args) == 0 {
			return o, fmt.Errorf("%w: give a command: %s", errUsage, commandsText)
		}
		return o, fmt.Errorf("%w: unknown command %q: %s", errUsage, args[0], commandsText)
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, usage()
		}
		return o, fmt.Errorf("%w: %v (zkmodel serve -h lists the flags)", errUsage, err)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("%w: unexpected argument %q (zkmodel serve -h lists the flags)", errUsage, fs.Arg(0))
	}
	if err := checkAddrs(o.addr); err != nil {
		return o, fmt.Errorf("%w: -addr %q: %v", errUsage, o.addr, err)
	}
	if err := checkAddr(o.control); err != nil {
		return o, fmt.Errorf("%w: -control %q: %v", errUsage, o.control, err)
	}
	if o.tick < time.Millisecond {
		return o, fmt.Errorf("%w: -tick %v: want at least 1ms", errUsage, o.tick)
	}
	if o.containerInterval < time.Millisecond {
		return o, fmt.Errorf("%w: -container-check-interval %v: want at least 1ms", errUsage, o.containerInterval)
	}
	if err := checkClock(o.clock); err != nil {
		return o, err
	}
	words, err := parseWhitelist(*whitelist)
	if err != nil {
		return o, fmt.Errorf("%w: -4lw-whitelist %q: %v", errUsage, *whitelist, err)
	}
	o.fourLetterWords = words
	if err := checkDigest(o.superDigest); err != nil {
		return o, fmt.Errorf("%w: -super-digest %q: %v", errUsage, o.superDigest, err)
	}
	if o.saslOption, err = o.sasl.option(); err != nil {
		return o, fmt.Errorf("%w: %v", errUsage, err)
	}
	if o.secureAddr == "" && (o.tls.KeyStore != "" || o.tls.TrustStore != "") {
		return o, fmt.Errorf("%w: -keystore and -truststore are for the TLS port: give -secure-addr too", errUsage)
	}
	if o.secureAddr != "" {
		if n, m := len(strings.Split(o.secureAddr, ",")), len(strings.Split(o.addr, ",")); n != m {
			return o, fmt.Errorf("%w: -secure-addr %q: %d addresses for %d servers (-addr): give one per server", errUsage, o.secureAddr, n, m)
		}
		if err := checkAddrs(o.secureAddr); err != nil {
			return o, fmt.Errorf("%w: -secure-addr %q: %v", errUsage, o.secureAddr, err)
		}
		if o.tlsConfig, err = keystore.ServerConfig(o.tls); err != nil {
			return o, fmt.Errorf("%w: -secure-addr: %v", errUsage, err)
		}
	}
	for _, s := range strings.Split(*enforce, ",") {
		switch s = strings.TrimSpace(s); {
		case s == "":
		case s == "ip" || s == "digest" || (s == "sasl" && o.sasl.acls):
			o.enforceAuth = append(o.enforceAuth, s)
		default:
			return o, fmt.Errorf("%w: -enforce-auth %q: authentication scheme %q is not available (ip, digest, and sasl with -sasl-acls, as ZooKeeper needs the SASL authProvider for it)", errUsage, *enforce, s)
		}
	}
	return o, nil
}

// parseWhitelist splits -4lw-whitelist into words, each one ZooKeeper 3.8 knows (or *).
func parseWhitelist(list string) ([]string, error) {
	var words []string
	for _, w := range strings.Split(list, ",") {
		w = strings.TrimSpace(w)
		if w != "*" && !slices.Contains(model.FourLetterWords(), w) {
			return nil, fmt.Errorf("%q is no four-letter word of ZooKeeper 3.8: give * or some of %s", w, strings.Join(model.FourLetterWords(), ","))
		}
		words = append(words, w)
	}
	return words, nil
}

// checkDigest reports what is wrong with a super digest: empty, or user:base64 of a 20-byte SHA-1.
func checkDigest(d string) error {
	if d == "" {
		return nil
	}
	user, hash, ok := strings.Cut(d, ":")
	if raw, err := base64.StdEncoding.DecodeString(hash); !ok || user == "" || err != nil || len(raw) != sha1.Size {
		return fmt.Errorf("want user:base64(sha1(user:password)), e.g. %s for super:secret", zk.DigestACL(zk.PermAll, "super", "secret")[0].ID)
	}
	return nil
}

// checkAddr reports what is wrong with a host:port to listen on.
func checkAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want host:port, e.g. 127.0.0.1:2181")
	}
	if host == "" {
		return fmt.Errorf("give a host (127.0.0.1 listens on loopback only)")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port %q: want a number from 0 to 65535", port)
	}
	return nil
}

// checkAddrs reports what is wrong with -addr's comma-separated list.
func checkAddrs(list string) error {
	addrs := strings.Split(list, ",")
	for i, a := range addrs {
		if err := checkAddr(a); err != nil {
			if len(addrs) > 1 {
				return fmt.Errorf("address %d, %q: %v", i+1, a, err)
			}
			return err
		}
		if _, port, _ := net.SplitHostPort(a); port != "0" && slices.Index(addrs, a) != i {
			return fmt.Errorf("%s is given twice: give each server its own port", a)
		}
	}
	return nil
}

// listen opens a TCP listener, with an error saying what to do when the
// port is taken: no usage error (the command line is right), exit status 2
// all the same, as before anything listens.
func listen(flagName, addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err == nil {
		return l, nil
	}
	if errors.Is(err, syscall.EADDRINUSE) {
		host, port, _ := net.SplitHostPort(addr) // checkAddr checked it
		return nil, exitError{2, fmt.Errorf("-%s %s: port %s is in use on %s, by another process (a ZooKeeper or zkmodel serve left running?): stop that process, or give -%s a free port (%s picks one)",
			flagName, addr, port, host, flagName, net.JoinHostPort(host, "0"))}
	}
	return nil, fmt.Errorf("%w: -%s %s: %v", errUsage, flagName, addr, err)
}

// startupLine is what serve prints once it listens.
type startupLine struct {
	Addr string `json:"addr"` // host:port for ZooKeeper clients
	// SecureAddr is the TLS clients' connect string (-secure-addr), "" without one.
	SecureAddr string `json:"secureAddr,omitempty"`
	Control    string `json:"control"` // base URL of the control endpoint
	Seed       int64  `json:"seed"`
	Tick       string `json:"tick"` // tickTime, as a Go duration
}

// run is the whole command: it parses args, serves until ctx is done, then
// shuts down and returns nil. Tests call it in-process.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "zkserver":
			return runZKServer(ctx, args[1:], stdout, stderr)
		case "zkserver-daemon":
			return runDaemon(ctx, args[1:], stderr)
		case "merge":
			return runMerge(args[1:], stdout)
		case "version":
			if len(args) > 1 {
				return fmt.Errorf("version takes no arguments, got %q: %w", args[1:], errUsage)
			}
			fmt.Fprintln(stdout, "zkmodel", zkmodel.Version)
			return nil
		}
	}
	o, err := parseArgs(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	var clients []net.Listener
	closeClients := func() {
		for _, l := range clients {
			l.Close()
		}
	}
	for _, a := range strings.Split(o.addr, ",") {
		l, err := listen("addr", a)
		if err != nil {
			closeClients()
			return err
		}
		clients = append(clients, l)
	}
	var secure []net.Listener
	if o.secureAddr != "" {
		for _, a := range strings.Split(o.secureAddr, ",") {
			l, err := listen("secure-addr", a)
			if err != nil {
				closeClients()
				for _, s := range secure {
					s.Close()
				}
				return err
			}
			secure = append(secure, l)
		}
	}
	closePlain := closeClients
	closeClients = func() {
		closePlain()
		for _, s := range secure {
			s.Close()
		}
	}
	control, err := listen("control", o.control)
	if err != nil {
		closeClients()
		return err
	}
	opts := []model.Option{model.WithSeed(o.seed), model.WithTickTime(o.tick), model.WithEnsemble(len(clients)),
		model.WithContainerCheckInterval(o.containerInterval), model.WithFourLetterWords(o.fourLetterWords...), o.saslOption}
	opts = append(opts, switchOptions(o.superDigest, o.extendedTypes, o.reconfig, o.skipACL)...)
	opts = append(opts, o.readOnly.options()...)
	if o.secureAddr != "" {
		opts = append(opts, model.WithX509()) // a secure client port: the x509 ACL scheme, as 3.8's Netty factory
	}
	if o.enforceAuth != nil {
		opts = append(opts, model.WithEnforceAuth(o.enforceAuth...))
	}
	if len(clients) > 1 { // /zookeeper/config names each server's client address
		members := make([]model.EnsembleMember, len(clients))
		for i, l := range clients {
			a := l.Addr().(*net.TCPAddr)
			members[i] = model.EnsembleMember{ID: int64(i + 1), Host: "127.0.0.1", QuorumPort: 2888 + i, ElectionPort: 3888 + i,
				ClientHost: a.IP.String(), ClientPort: a.Port}
		}
		opts = append(opts, model.WithMembers(members...))
	}
	if o.clock == clockWall {
		opts = append(opts, model.WithStartTime(time.Now()))
	}
	srv := model.NewServer(opts...)
	backends, err := srv.ListenEnsemble(len(clients))
	if err != nil {
		closeClients()
		control.Close()
		return fmt.Errorf("start the model's wire server: %w", err)
	}
	addrs := make([]string, len(clients))
	for i, l := range clients {
		addrs[i] = l.Addr().String()
	}
	var secureAddrs []string
	for _, l := range secure {
		secureAddrs = append(secureAddrs, l.Addr().String())
	}
	line, _ := json.Marshal(startupLine{ // cannot fail: strings and a number
		Addr:       strings.Join(addrs, ","),
		SecureAddr: strings.Join(secureAddrs, ","),
		Control:    "http://" + control.Addr().String(),
		Seed:       o.seed,
		Tick:       o.tick.String(),
	})
	g := newGateway(srv, backends, stderr)
	g.tlsConfig = o.tlsConfig
	httpSrv := &http.Server{Handler: g.controlHandler(), ReadHeaderTimeout: 10 * time.Second}

	var wg sync.WaitGroup
	if o.clock == clockWall {
		wg.Add(1)
		go func() { defer wg.Done(); followWallClock(ctx, srv, o.tick) }()
	}
	for i, l := range clients {
		g.startServing(i, l)
	}
	for i, l := range secure {
		g.startSecure(i, l)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := httpSrv.Serve(control); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(stderr, "zkmodel: control endpoint:", err)
		}
	}()
	fmt.Fprintf(stdout, "%s\n", line)

	<-ctx.Done()
	g.closeListeners()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := httpSrv.Shutdown(shutdownCtx); err != nil {
		httpSrv.Close()
	}
	g.closeAll()
	wg.Wait()
	if err := srv.Close(); err != nil {
		return fmt.Errorf("close the model: %w", err)
	}
	return nil
}

// gateway carries each client's TCP connection to the model's wire server
// (listening on an internal loopback port per server of the ensemble) and
// knows which session each one carries, so that /drop can sever it as a
// network fault would.
type gateway struct {
	srv      *model.Server
	backends []string // the wire server's address for each server
	stderr   io.Writer

	mu        sync.Mutex
	links     map[*link]struct{}
	listeners []net.Listener // each server's client-facing listener; nil while it is stopped
	addrs     []string       // their addresses, to listen on again after a stop
	// tlsConfig, secure and secureAddrs are the TLS listeners (-secure-addr), as listeners and addrs.
	tlsConfig   *tls.Config
	secure      []net.Listener
	secureAddrs []string
	closed      bool
	wg          sync.WaitGroup
}

// link is one client connection and its end at the model.
type link struct {
	client, model net.Conn
	session       int64 // 0 until the model's ConnectResponse has gone by
}

func newGateway(srv *model.Server, backends []string, stderr io.Writer) *gateway {
	return &gateway{srv: srv, backends: backends, stderr: stderr, links: map[*link]struct{}{},
		listeners: make([]net.Listener, len(backends)), addrs: make([]string, len(backends))}
}

// startServing serves server i's clients on l until l is closed.
func (g *gateway) startServing(i int, l net.Listener) {
	g.mu.Lock()
	g.listeners[i], g.addrs[i] = l, l.Addr().String()
	g.wg.Add(1)
	g.mu.Unlock()
	go func() {
		defer g.wg.Done()
		g.serve(i, l)
	}()
}

// startSecure serves server i's TLS clients on l (a plain TCP listener; the gateway's TLS configuration wraps it).
func (g *gateway) startSecure(i int, l net.Listener) {
	g.mu.Lock()
	if g.secure == nil {
		g.secure, g.secureAddrs = make([]net.Listener, len(g.backends)), make([]string, len(g.backends))
	}
	tl := tls.NewListener(l, g.tlsConfig)
	g.secure[i], g.secureAddrs[i] = tl, l.Addr().String()
	g.wg.Add(1)
	g.mu.Unlock()
	go func() {
		defer g.wg.Done()
		g.serve(i, tl)
	}()
}

// closeListeners stops accepting clients on every server.
func (g *gateway) closeListeners() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, ls := range [][]net.Listener{g.listeners, g.secure} {
		for i, l := range ls {
			if l != nil {
				l.Close()
				ls[i] = nil
			}
		}
	}
}

// serve accepts server i's client connections until l is closed.
func (g *gateway) serve(i int, l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				fmt.Fprintln(g.stderr, "zkmodel: accept:", err)
			}
			return
		}
		m, err := net.DialTimeout("tcp", g.backends[i], 10*time.Second)
		if err != nil {
			c.Close() // the server stopped meanwhile: the client sees its connection close
			continue
		}
		lk := &link{client: c, model: m}
		g.mu.Lock()
		if g.closed {
			g.mu.Unlock()
			c.Close()
			m.Close()
			return
		}
		g.links[lk] = struct{}{}
		g.wg.Add(2)
		g.mu.Unlock()
		go g.pump(lk, lk.client, lk.model, false)
		go g.pump(lk, lk.model, lk.client, true)
	}
}

// pump copies src to dst until either end closes, then closes both. The
// model-to-client direction reads the ConnectResponse first to learn the
// session id; what is no frame (a four-letter word's answer) it passes on
// as it came, in one write. The client-to-model direction passes the
// client's EOF on (a half close): the model answers a word the client sent
// before it, then closes.
func (g *gateway) pump(lk *link, src, dst net.Conn, fromModel bool) {
	defer g.wg.Done()
	if !fromModel {
		if tc, ok := src.(*tls.Conn); ok && !g.tellCertificate(tc, dst) {
			g.drop(lk)
			return
		}
		io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok && tc.CloseWrite() == nil {
			return // the model closes its end; the other pump then drops both
		}
		g.drop(lk)
		return
	}
	defer g.drop(lk)
	in := bufio.NewReaderSize(src, 64<<10)
	if frame, err := readFrame(in); err == nil {
		// ConnectResponse: protocolVersion int32, timeOut int32, sessionId int64, …
		if len(frame) >= 4+16 {
			g.mu.Lock()
			lk.session = int64(binary.BigEndian.Uint64(frame[12:20]))
			g.mu.Unlock()
		}
		if _, err := dst.Write(frame); err != nil {
			return
		}
	} else if rest, _ := in.Peek(in.Buffered()); len(rest) > 0 {
		if _, err := dst.Write(rest); err != nil {
			return
		}
		in.Discard(len(rest))
	}
	io.Copy(dst, in)
}

// tellCertificate completes a TLS client's handshake and tells the model what certificate it came with (its
// x509 identity), before any of the client's bytes. It reports whether the connection may go on.
func (g *gateway) tellCertificate(tc *tls.Conn, toModel net.Conn) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return false // refused (no client certificate where one is needed, say): the client sees the alert
	}
	if err := model.WriteTLSPeer(toModel, tc.ConnectionState()); err != nil {
		fmt.Fprintln(g.stderr, "zkmodel:", err)
		return false
	}
	return true
}

// maxFrame bounds the ConnectResponse the gateway reads whole.
const maxFrame = 1 << 20

// readFrame reads one length-prefixed frame, prefix included. What does
// not start with a frame's length it leaves unread in r.
func readFrame(r *bufio.Reader) ([]byte, error) {
	prefix, err := r.Peek(4)
	if err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(prefix)
	if n > maxFrame {
		return nil, fmt.Errorf("frame of %d bytes", n)
	}
	frame := make([]byte, 4+n)
	copy(frame, prefix)
	r.Discard(4)
	if _, err := io.ReadFull(r, frame[4:]); err != nil {
		return nil, err
	}
	return frame, nil
}

// drop closes both ends of lk and forgets it.
func (g *gateway) drop(lk *link) {
	lk.client.Close()
	lk.model.Close()
	g.mu.Lock()
	delete(g.links, lk)
	g.mu.Unlock()
}

// closeAll severs every connection and waits for the pumps to end.
func (g *gateway) closeAll() {
	g.mu.Lock()
	g.closed = true
	links := make([]*link, 0, len(g.links))
	for lk := range g.links {
		links = append(links, lk)
	}
	g.mu.Unlock()
	for _, lk := range links {
		g.drop(lk)
	}
	g.wg.Wait()
}

// sever closes the connections carrying session id and reports how many.
func (g *gateway) sever(id int64) int {
	g.mu.Lock()
	var links []*link
	for lk := range g.links {
		if lk.session == id {
			links = append(links, lk)
		}
	}
	g.mu.Unlock()
	for _, lk := range links {
		g.drop(lk)
	}
	return len(links)
}

// connections counts the open connections per session.
func (g *gateway) connections() map[int64]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := map[int64]int{}
	for lk := range g.links {
		if lk.session != 0 {
			n[lk.session]++
		}
	}
	return n
}

// sessionInfo is one entry of GET /sessions.
type sessionInfo struct {
	ID          string `json:"id"`
	TimeoutMS   int64  `json:"timeout_ms"`
	Ephemerals  int    `json:"ephemerals"`
	Connections int    `json:"connections"`
}

// sessions lists the model's live sessions, sorted by id, from its Dump.
func (g *gateway) sessions() ([]sessionInfo, error) {
	conns := g.connections()
	var list []sessionInfo
	for line := range strings.SplitSeq(g.srv.Dump(), "\n") {
		rest, ok := strings.CutPrefix(line, "session ")
		if !ok {
			continue
		}
		// session 0x… timeout=4s heard=… ephemerals=N
		fields := strings.Fields(rest)
		if len(fields) != 4 {
			return nil, fmt.Errorf("unexpected session line in the model's dump: %q", line)
		}
		id, err := parseSessionID(fields[0])
		if err != nil {
			return nil, fmt.Errorf("session line %q: %w", line, err)
		}
		timeout, err := time.ParseDuration(strings.TrimPrefix(fields[1], "timeout="))
		if err != nil {
			return nil, fmt.Errorf("session line %q: %w", line, err)
		}
		eph, err := strconv.Atoi(strings.TrimPrefix(fields[3], "ephemerals="))
		if err != nil {
			return nil, fmt.Errorf("session line %q: %w", line, err)
		}
		list = append(list, sessionInfo{ID: fmt.Sprintf("%#x", id), TimeoutMS: timeout.Milliseconds(), Ephemerals: eph, Connections: conns[id]})
	}
	slices.SortFunc(list, func(a, b sessionInfo) int { return strings.Compare(a.ID, b.ID) })
	return list, nil
}

// parseSessionID reads 0x-prefixed hex or decimal.
func parseSessionID(s string) (int64, error) {
	var u uint64
	var err error
	if hex, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
		u, err = strconv.ParseUint(hex, 16, 64)
	} else {
		u, err = strconv.ParseUint(s, 10, 64)
	}
	if err != nil || u == 0 {
		return 0, fmt.Errorf("session %q: want a session id such as 0x1d2c3b4a00000001 (GET /sessions lists them)", s)
	}
	return int64(u), nil
}

// controlHandler is the HTTP control surface documented on the command.
func (g *gateway) controlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /sessions", func(w http.ResponseWriter, r *http.Request) {
		list, err := g.sessions()
		if err != nil {
			http.Error(w, "zkmodel: "+err.Error(), http.StatusInternalServerError)
			return
		}
		if list == nil {
			list = []sessionInfo{}
		}
		writeJSON(w, list)
	})
	mux.HandleFunc("GET /dump", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, g.srv.Dump())
	})
	mux.HandleFunc("POST /expire", func(w http.ResponseWriter, r *http.Request) {
		id, ok := g.liveSession(w, r)
		if !ok {
			return
		}
		g.srv.Expire(id)
		writeJSON(w, map[string]any{"ok": true, "expired": fmt.Sprintf("%#x", id)})
	})
	mux.HandleFunc("POST /drop", func(w http.ResponseWriter, r *http.Request) {
		id, err := parseSessionID(r.URL.Query().Get("session"))
		if err != nil {
			http.Error(w, "zkmodel: "+err.Error(), http.StatusBadRequest)
			return
		}
		n := g.sever(id)
		if n == 0 {
			http.Error(w, fmt.Sprintf("zkmodel: session %#x has no open connection (GET /sessions lists them)", id), http.StatusNotFound)
			return
		}
		writeJSON(w, map[string]any{"ok": true, "session": fmt.Sprintf("%#x", id), "dropped": n})
	})
	mux.HandleFunc("GET /servers", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, g.servers())
	})
	mux.HandleFunc("POST /stop", func(w http.ResponseWriter, r *http.Request) {
		i, ok := g.serverParam(w, r)
		if !ok {
			return
		}
		if err := g.stop(i); err != nil {
			http.Error(w, "zkmodel: "+err.Error(), http.StatusConflict)
			return
		}
		writeJSON(w, map[string]any{"ok": true, "servers": g.servers()})
	})
	mux.HandleFunc("POST /start", func(w http.ResponseWriter, r *http.Request) {
		i, ok := g.serverParam(w, r)
		if !ok {
			return
		}
		if err := g.start(i); err != nil {
			http.Error(w, "zkmodel: "+err.Error(), http.StatusConflict)
			return
		}
		writeJSON(w, map[string]any{"ok": true, "servers": g.servers()})
	})
	mux.HandleFunc("POST /advance", func(w http.ResponseWriter, r *http.Request) {
		by := r.URL.Query().Get("by")
		d, err := time.ParseDuration(by)
		if err != nil || d <= 0 {
			http.Error(w, fmt.Sprintf("zkmodel: by=%q: want a positive Go duration such as 5s or 250ms", by), http.StatusBadRequest)
			return
		}
		g.srv.Advance(d)
		writeJSON(w, map[string]any{"ok": true, "now": g.srv.Now().Format(time.RFC3339Nano)})
	})
	for _, route := range controlRoutes {
		mux.HandleFunc(route.path, func(w http.ResponseWriter, r *http.Request) { // any other method
			w.Header().Set("Allow", route.method)
			http.Error(w, fmt.Sprintf("zkmodel: %s %s: %s takes %s, its parameters in the URL's query, no body: %s", r.Method, r.URL.Path, route.path, route.method, route.usage), http.StatusMethodNotAllowed)
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		list := make([]string, len(controlRoutes))
		for i, route := range controlRoutes {
			list[i] = route.usage
		}
		http.Error(w, fmt.Sprintf("zkmodel: %s %s: no such endpoint; the control endpoint answers:\n%s", r.Method, r.URL.Path, strings.Join(list, "\n")), http.StatusNotFound)
	})
	return mux
}

// controlRoutes are the control endpoint's routes as a caller writes them, for the answers to a wrong method
// or an unknown path.
var controlRoutes = []struct{ method, path, usage string }{
	{"GET", "/sessions", "GET /sessions lists the live sessions (JSON)"},
	{"POST", "/expire", "POST /expire?session=0x… expires a session (its id as GET /sessions lists it)"},
	{"POST", "/drop", "POST /drop?session=0x… severs a session's TCP connections"},
	{"POST", "/advance", "POST /advance?by=5s moves the virtual clock forward"},
	{"GET", "/dump", "GET /dump gives the whole state as text"},
	{"GET", "/servers", "GET /servers gives each server's address and mode (JSON)"},
	{"POST", "/stop", "POST /stop?server=1 stops server 1 as if killed"},
	{"POST", "/start", "POST /start?server=1 starts server 1 again"},
}

// liveSession reads ?session= and checks the model has that session,
// answering the error itself when not.
func (g *gateway) liveSession(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := parseSessionID(r.URL.Query().Get("session"))
	if err != nil {
		http.Error(w, "zkmodel: "+err.Error(), http.StatusBadRequest)
		return 0, false
	}
	list, err := g.sessions()
	if err != nil {
		http.Error(w, "zkmodel: "+err.Error(), http.StatusInternalServerError)
		return 0, false
	}
	want := fmt.Sprintf("%#x", id)
	if !slices.ContainsFunc(list, func(s sessionInfo) bool { return s.ID == want }) {
		http.Error(w, fmt.Sprintf("zkmodel: no live session %s (GET /sessions lists them)", want), http.StatusNotFound)
		return 0, false
	}
	return id, true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// serverInfo is one entry of GET /servers.
type serverInfo struct {
	Server int    `json:"server"`
	Addr   string `json:"addr"`
	Mode   string `json:"mode"` // leader, follower, standalone, not serving, stopped
}

func (g *gateway) servers() []serverInfo {
	g.mu.Lock()
	addrs := slices.Clone(g.addrs)
	g.mu.Unlock()
	out := make([]serverInfo, len(addrs))
	for i, a := range addrs {
		mode, _ := g.srv.Mode(i) // i is in range
		out[i] = serverInfo{Server: i, Addr: a, Mode: mode}
	}
	return out
}

// serverParam reads ?server=, answering the error itself when it names no server.
func (g *gateway) serverParam(w http.ResponseWriter, r *http.Request) (int, bool) {
	s := r.URL.Query().Get("server")
	i, err := strconv.Atoi(s)
	if err != nil || i < 0 || i >= len(g.backends) {
		http.Error(w, fmt.Sprintf("zkmodel: server=%q: want a server number from 0 to %d (GET /servers lists them)", s, len(g.backends)-1), http.StatusBadRequest)
		return 0, false
	}
	return i, true
}

// stop stops server i: the model drops its connections (the gateway's ends close with them) and its
// client-facing port closes, so that clients see a refused connection as with a killed server.
func (g *gateway) stop(i int) error {
	if err := g.srv.StopServer(i); err != nil {
		return err
	}
	g.mu.Lock()
	l := g.listeners[i]
	g.listeners[i] = nil
	var sl net.Listener
	if g.secure != nil {
		sl, g.secure[i] = g.secure[i], nil
	}
	g.mu.Unlock()
	for _, x := range []net.Listener{l, sl} {
		if x != nil {
			x.Close()
		}
	}
	return nil
}

// start listens on server i's client port again and starts it in the model.
func (g *gateway) start(i int) error {
	g.mu.Lock()
	running, addr := g.listeners[i] != nil, g.addrs[i]
	g.mu.Unlock()
	if running {
		return fmt.Errorf("server %d is running (POST /stop?server=%d stops it)", i, i)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("server %d: listen on %s again: %w", i, addr, err)
	}
	var sl net.Listener
	if g.secure != nil {
		if sl, err = net.Listen("tcp", g.secureAddrs[i]); err != nil {
			l.Close()
			return fmt.Errorf("server %d: listen for TLS clients on %s again: %w", i, g.secureAddrs[i], err)
		}
	}
	if err := g.srv.StartServer(i); err != nil {
		l.Close()
		if sl != nil {
			sl.Close()
		}
		return err
	}
	g.startServing(i, l)
	if sl != nil {
		g.startSecure(i, sl)
	}
	return nil
}

// switchOptions are the model's options for the server switches serve and the stand-in's daemon share: the
// super digest ("" for none), TTL nodes, reconfigEnabled and skipACL.
func switchOptions(superDigest string, extendedTypes, reconfig, skipACL bool) []model.Option {
	var opts []model.Option
	if superDigest != "" {
		opts = append(opts, model.WithSuperDigest(superDigest))
	}
	if extendedTypes {
		opts = append(opts, model.WithExtendedTypes())
	}
	if reconfig {
		opts = append(opts, model.WithReconfig())
	}
	if skipACL {
		opts = append(opts, model.WithSkipACL())
	}
	return opts
}
