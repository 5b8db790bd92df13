package dropin

import (
	"bufio"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkmodel/zkmodel/internal/jaas"
	"github.com/zkmodel/zkmodel/internal/keystore"
)

// Config is what the stand-in reads from a ZooKeeper server's zoo.cfg, its myid file and the Java system
// properties in SERVER_JVMFLAGS/JVMFLAGS: enough to run that server as one member of an emulated ensemble.
// Keys the model has no use for (autopurge.*, admin.*, …) are ignored, as ZooKeeper ignores keys it does not
// know; as 3.8 does, a zoo.cfg key its configuration parser does not know is also the system property
// zookeeper.KEY (zoo.cfg's extendedTypesEnabled=true is -Dzookeeper.extendedTypesEnabled=true), zoo.cfg's
// winning over the JVM flags.
type Config struct {
	// File is the zoo.cfg the configuration was read from.
	File string
	// DataDir is the server's dataDir (absolute).
	DataDir string
	// ClientAddr is where the server listens for clients: clientPortAddress (or, for a server.N line with a
	// ";[address:]port" part, that address) and clientPort; 127.0.0.1 unless the configuration names an
	// address.
	ClientAddr string
	// TickTime is tickTime (ZooKeeper's default 3000 ms when absent).
	TickTime time.Duration
	// MinSessionTimeout and MaxSessionTimeout are minSessionTimeout and maxSessionTimeout (0 when absent or
	// -1: ZooKeeper's defaults, 2 and 20 ticks).
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// Members are the server.N lines, sorted by N; empty for a standalone server.
	Members []Member
	// MyID is the server's id from dataDir/myid (0 for a standalone server without one). A standalone
	// server reads the file too, when it is there, as 3.8 does: its id picks the client port of its
	// server.N line.
	MyID int
	// FourLetterWords is 4lw.commands.whitelist (zoo.cfg's key or -Dzookeeper.4lw.commands.whitelist) as
	// written ("" when absent: ZooKeeper's default applies).
	FourLetterWords string
	// ReconfigEnabled is reconfigEnabled.
	ReconfigEnabled bool
	// ReadOnlyMode is the system property readonlymode.enabled=true (-D only: 3.8 reads no zoo.cfg key for it;
	// a zoo.cfg line readonlymode.enabled=true becomes zookeeper.readonlymode.enabled, which nothing reads —
	// measured): a server of an ensemble without a quorum serves read-only sessions.
	ReadOnlyMode bool
	// LocalSessions is localSessionsEnabled: the sessions an ensemble's servers make are local ones, and a
	// read-only server gives read-only sessions (local ones) rather than answering their connect requests with
	// NotReadOnly.
	LocalSessions bool
	// LocalSessionsUpgrading is localSessionsUpgradingEnabled: a local session that creates an ephemeral node
	// is made global rather than refused with EphemeralOnLocalSession.
	LocalSessionsUpgrading bool
	// SkipACL is zookeeper.skipACL=yes: skipACL=yes in zoo.cfg (which a real server makes that system
	// property, overriding -Dzookeeper.skipACL) or the JVM flag. Nothing but "yes" turns it on, as in Java.
	SkipACL bool
	// EnforceAuthSchemes are the schemes a connection must hold an identity of before the server serves it:
	// enforce.auth.schemes with enforce.auth.enabled=true, or sasl alone with sessionRequireClientSASLAuth=true
	// (zoo.cfg keys, or -Dzookeeper.… properties); nil when authentication is not enforced.
	EnforceAuthSchemes []string
	// SecureClientAddr is where the server listens for TLS clients: secureClientPortAddress (else the client
	// address's host) and secureClientPort; "" without a secureClientPort. TLS holds its ssl.* settings.
	SecureClientAddr string
	TLS              keystore.Settings

	// SuperDigest is -Dzookeeper.DigestAuthenticationProvider.superDigest ("" for none).
	SuperDigest string
	// ExtendedTypes is -Dzookeeper.extendedTypesEnabled=true: TTL nodes are allowed.
	ExtendedTypes bool
	// Emulate353TTLNodes is -Dzookeeper.emulate353TTLNodes: accepted, and without effect on the model (it
	// changes how a 3.8 server decodes the ephemeralOwner of TTL nodes written by 3.5.3, which the model
	// never has).
	Emulate353TTLNodes bool
	// ContainerCheckInterval is -Dznode.container.checkIntervalMs (0: the model's default, one minute).
	ContainerCheckInterval time.Duration

	// JAASFile is -Djava.security.auth.login.config, absolute ("" for none): its SASLSection's
	// DigestLoginModule users log in by SASL DIGEST-MD5. LoadConfig checks that it reads and parses (a file
	// that does not is ErrCannotStart).
	JAASFile string
	// SASLSection is -Dzookeeper.sasl.serverconfig, the JAAS section of the server ("Server" when absent).
	SASLSection string
	// SASLLogins is whether JAASFile has SASLSection. Without it (an empty file, one with a Client section
	// only) ZooKeeper 3.8 starts without a SASL server, as if there were no JAAS file: a SASL token gets a
	// null token, so logins fail.
	SASLLogins bool
	// SASLSuperUser is -Dzookeeper.superUser: the SASL user whose login is super ("" for none).
	SASLSuperUser string
	// SASLACLs is an authProvider.N line in zoo.cfg (or a -Dzookeeper.authProvider.N property) naming
	// org.apache.zookeeper.server.auth.SASLAuthenticationProvider: the sasl ACL scheme is on.
	SASLACLs bool
}

// ErrCannotStart marks what ZooKeeper 3.8 finds wrong only as it starts the server, its configuration read:
// a JAAS file it cannot read or parse. 3.8 exits 1 for these, and 2 for a configuration it refuses.
var ErrCannotStart = errors.New("unable to start the server")

// saslAuthProvider is the class an authProvider line names to turn the sasl ACL scheme on.
const saslAuthProvider = "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"

// Member is one server.N line: server.N=host:peerPort:electionPort[:participant|:observer][;[addr:]port].
type Member struct {
	ID           int
	Host         string
	PeerPort     int
	ElectionPort int
	Observer     bool
	// ClientAddr is the line's client address, when it has one ("" otherwise).
	ClientAddr string
}

// Standalone reports whether the configuration is of a standalone server (no server.N lines).
func (c Config) Standalone() bool { return len(c.Members) == 0 }

// Index returns the position of the server's own line among Members (0 for a standalone server).
func (c Config) Index() int {
	for i, m := range c.Members {
		if m.ID == c.MyID {
			return i
		}
	}
	return 0
}

// ClusterKey names the cluster the server belongs to: every server whose configuration has the same
// server.N lines is a member of the same emulated ensemble (each has its own zoo.cfg and dataDir, as
// go-zookeeper's harness writes them); a standalone server is a cluster of its own, named by its dataDir and
// client address.
func (c Config) ClusterKey() string {
	if c.Standalone() {
		return "standalone " + c.DataDir + " " + c.ClientAddr
	}
	lines := make([]string, len(c.Members))
	for i, m := range c.Members {
		lines[i] = fmt.Sprintf("server.%d=%s:%d:%d", m.ID, m.Host, m.PeerPort, m.ElectionPort)
	}
	return strings.Join(lines, "\n")
}

// ClusterID is a short hash of ClusterKey, for file names.
func (c Config) ClusterID() string {
	sum := sha256.Sum256([]byte(c.ClusterKey()))
	return hex.EncodeToString(sum[:6])
}

// Default values, as ZooKeeper 3.8 has them.
const (
	defaultTickTime   = 3000 * time.Millisecond
	defaultClientHost = "127.0.0.1"
)

// LoadConfig reads the zoo.cfg at path (and its dynamicConfigFile, if it names one), the myid file in its
// dataDir, and the Java system properties in jvmFlags (SERVER_JVMFLAGS and JVMFLAGS, joined). Errors name
// the file and line and say what is wrong.
func LoadConfig(path, jvmFlags string) (Config, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	props, err := readProperties(abs)
	if err != nil {
		return Config{}, err
	}
	c := Config{File: abs, TickTime: defaultTickTime}
	get := func(k string) (property, bool) {
		p, ok := props.byKey[k]
		return p, ok
	}
	bad := func(p property, format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s: %s", p.file, p.line, p.key, fmt.Sprintf(format, args...))
	}
	p, ok := get("dataDir")
	if !ok || p.value == "" {
		return Config{}, fmt.Errorf("%s: dataDir is not set (ZooKeeper needs a dataDir: add dataDir=/path/to/dir)", abs)
	}
	if c.DataDir, err = filepath.Abs(p.value); err != nil {
		return Config{}, bad(p, "%v", err)
	}
	if p, ok := get("tickTime"); ok {
		ms, err := strconv.Atoi(p.value)
		if err != nil || ms <= 0 {
			return Config{}, bad(p, "%q: want a positive number of milliseconds", p.value)
		}
		c.TickTime = time.Duration(ms) * time.Millisecond
	}
	for _, bound := range []struct {
		key string
		d   *time.Duration
	}{{"minSessionTimeout", &c.MinSessionTimeout}, {"maxSessionTimeout", &c.MaxSessionTimeout}} {
		key, d := bound.key, bound.d
		if p, ok := get(key); ok {
			ms, err := strconv.Atoi(p.value)
			if err != nil || ms < -1 {
				return Config{}, bad(p, "%q: want a number of milliseconds (-1 for the default)", p.value)
			}
			*d = time.Duration(max(ms, 0)) * time.Millisecond
		}
	}
	lo, hi := cmp.Or(c.MinSessionTimeout, 2*c.TickTime), cmp.Or(c.MaxSessionTimeout, 20*c.TickTime)
	if lo > hi {
		// ZooKeeper refuses it so: "minSessionTimeout must not be larger than maxSessionTimeout".
		return Config{}, fmt.Errorf("%s: minSessionTimeout (%v) must not be larger than maxSessionTimeout (%v)", abs, lo, hi)
	}
	if p, ok := get("reconfigEnabled"); ok {
		if c.ReconfigEnabled, err = parseBool(p); err != nil {
			return Config{}, err
		}
	}
	if p, ok := get("localSessionsEnabled"); ok {
		if c.LocalSessions, err = parseBool(p); err != nil {
			return Config{}, err
		}
	}
	if p, ok := get("localSessionsUpgradingEnabled"); ok {
		if c.LocalSessionsUpgrading, err = parseBool(p); err != nil {
			return Config{}, err
		}
	}
	standaloneEnabled := true
	if p, ok := get("standaloneEnabled"); ok {
		if standaloneEnabled, err = parseBool(p); err != nil {
			return Config{}, err
		}
	}
	if p, ok := get("dynamicConfigFile"); ok && p.value != "" {
		dyn := p.value
		if !filepath.IsAbs(dyn) {
			dyn = filepath.Join(filepath.Dir(abs), dyn)
		}
		more, err := readProperties(dyn)
		if err != nil {
			return Config{}, fmt.Errorf("%s (the dynamicConfigFile of %s): %w", dyn, abs, err)
		}
		for _, q := range more.list {
			if strings.HasPrefix(q.key, "server.") {
				props.add(q)
			}
		}
	}
	for _, q := range props.list {
		if !strings.HasPrefix(q.key, "server.") || props.byKey[q.key] != q {
			continue // a key given twice: its last line wins, as in java.util.Properties
		}
		m, err := parseMember(q)
		if err != nil {
			return Config{}, err
		}
		if i := slices.IndexFunc(c.Members, func(o Member) bool { return o.ID == m.ID }); i >= 0 {
			return Config{}, bad(q, "server id %d is given twice", m.ID)
		}
		c.Members = append(c.Members, m)
	}
	slices.SortFunc(c.Members, func(a, b Member) int { return a.ID - b.ID })
	lines := c.Members
	if len(c.Members) == 1 && standaloneEnabled {
		c.Members = nil // one server.N line with standalone mode enabled: ZooKeeper runs standalone
	}

	host, port := defaultClientHost, 0
	if p, ok := get("clientPortAddress"); ok && p.value != "" {
		host = p.value
	}
	if p, ok := get("clientPort"); ok {
		n, err := strconv.Atoi(p.value)
		if err != nil || n <= 0 || n > 65535 {
			return Config{}, bad(p, "%q: want a port from 1 to 65535", p.value)
		}
		port = n
	}
	if p, ok := get("clientPortAddress"); ok && p.value != "" && port == 0 {
		return Config{}, bad(p, "clientPortAddress is set but clientPort is not set (add clientPort=2181)")
	}
	id, hasID, err := readMyID(c.DataDir)
	if err != nil {
		return Config{}, err
	}
	if !c.Standalone() {
		// 3.8 checks these of an ensemble's server only (QuorumPeerConfig.checkValidity).
		for _, key := range []string{"initLimit", "syncLimit"} {
			p, ok := get(key)
			if !ok {
				return Config{}, fmt.Errorf("%s: %s is not set (an ensemble's server needs initLimit and syncLimit, in ticks: add %s=10)", abs, key, key)
			}
			if n, err := strconv.Atoi(p.value); err != nil || n <= 0 {
				return Config{}, bad(p, "%q: want a positive number of ticks", p.value)
			}
		}
		if !hasID {
			return Config{}, fmt.Errorf("an ensemble's server needs its id in %s: myid file is missing", filepath.Join(c.DataDir, "myid"))
		}
		if !slices.ContainsFunc(c.Members, func(m Member) bool { return m.ID == id }) {
			return Config{}, fmt.Errorf("%s: myid %d has no server.%d line (the ids are %s)", filepath.Join(c.DataDir, "myid"), id, id, memberIDs(c.Members))
		}
	}
	if hasID {
		c.MyID = id
		// The server's own line gives the client address, standalone or not (QuorumPeerConfig.setupClientPort).
		if m := slices.IndexFunc(lines, func(m Member) bool { return m.ID == id }); m >= 0 && lines[m].ClientAddr != "" {
			h, p, _ := net.SplitHostPort(lines[m].ClientAddr) // parseMember checked it
			if port != 0 && strconv.Itoa(port) != p {
				return Config{}, fmt.Errorf("%s: clientPort %d is different from the client port of server.%d's line (%s): give one of them", abs, port, id, lines[m].ClientAddr)
			}
			if h != "" && h != "0.0.0.0" {
				host = h
			}
			port, _ = strconv.Atoi(p)
		}
	}
	if port == 0 {
		return Config{}, fmt.Errorf("%s: clientPort is not set (add clientPort=2181, or a ;port part to this server's server.N line)", abs)
	}
	if host == "0.0.0.0" {
		host = defaultClientHost // this machine serves loopback only
	}
	c.ClientAddr = net.JoinHostPort(host, strconv.Itoa(port))

	c.SASLSection = jaas.ServerSection
	if err := c.applyJVMFlags(flagProperties(jvmFlags)); err != nil {
		return Config{}, err
	}
	// QuorumPeerConfig sets each key it does not know as the system property zookeeper.KEY, after the JVM's
	// flags: zoo.cfg's authProvider.1, extendedTypesEnabled, superUser, … are those properties.
	zooCfgProperties := make([]systemProperty, len(props.list))
	for i, q := range props.list {
		zooCfgProperties[i] = systemProperty{"zookeeper." + q.key, q.value}
	}
	if err := c.applyJVMFlags(zooCfgProperties); err != nil {
		return Config{}, fmt.Errorf("%s: %w (given as a zoo.cfg key, which 3.8 sets as the system property zookeeper.KEY)", abs, err)
	}
	c.applySkipACL(props)
	if err := c.applyEnforceAuth(props, jvmFlags); err != nil {
		return Config{}, err
	}
	if err := c.applyTLS(props, jvmFlags); err != nil {
		return Config{}, err
	}
	if c.JAASFile != "" {
		parsed, err := jaas.ReadFile(c.JAASFile)
		if err != nil {
			return Config{}, fmt.Errorf("%w: -Djava.security.auth.login.config=%s: %w", ErrCannotStart, c.JAASFile, err)
		}
		// A file without the server's section is no error: 3.8 then runs without a SASL server.
		if _, c.SASLLogins = parsed[c.SASLSection]; c.SASLLogins {
			if _, err := parsed.DigestUsers(c.SASLSection); err != nil {
				return Config{}, fmt.Errorf("-Djava.security.auth.login.config=%s: %w", c.JAASFile, err)
			}
		}
	}
	return c, nil
}

// systemProperty is a Java system property of the server's JVM: a -Dkey=value flag, or a zoo.cfg key.
type systemProperty struct{ key, value string }

// flagProperties are the -Dkey=value flags among the JVM flags.
func flagProperties(flags string) []systemProperty {
	var props []systemProperty
	for _, f := range strings.Fields(flags) {
		if kv, ok := strings.CutPrefix(f, "-D"); ok {
			k, v, _ := strings.Cut(kv, "=")
			props = append(props, systemProperty{k, v})
		}
	}
	return props
}

// applyJVMFlags reads the system properties the model has a use for; a later one of a key wins.
func (c *Config) applyJVMFlags(props []systemProperty) error {
	for _, p := range props {
		k, v := p.key, p.value
		if strings.HasPrefix(k, "zookeeper.authProvider.") && v == saslAuthProvider {
			c.SASLACLs = true
		}
		switch k {
		case "zookeeper.DigestAuthenticationProvider.superDigest":
			user, hash, ok := strings.Cut(v, ":")
			if !ok || user == "" || hash == "" {
				return fmt.Errorf("-D%s=%q: want user:base64(sha1(user:password))", k, v)
			}
			c.SuperDigest = v
		case "java.security.auth.login.config":
			abs, err := filepath.Abs(v)
			if err != nil || v == "" {
				return fmt.Errorf("-D%s=%q: want the path of a JAAS file", k, v)
			}
			c.JAASFile = abs
		case "zookeeper.sasl.serverconfig":
			if v == "" {
				return fmt.Errorf("-D%s=%q: want the name of the JAAS file's server section", k, v)
			}
			c.SASLSection = v
		case "zookeeper.superUser":
			c.SASLSuperUser = v
		case "zookeeper.4lw.commands.whitelist":
			c.FourLetterWords = v
		case "zookeeper.skipACL":
			c.SkipACL = v == "yes"
		case "readonlymode.enabled":
			c.ReadOnlyMode = strings.EqualFold(v, "true") // Boolean.getBoolean
		case "zookeeper.extendedTypesEnabled":
			c.ExtendedTypes = strings.EqualFold(v, "true")
		case "zookeeper.emulate353TTLNodes":
			c.Emulate353TTLNodes = strings.EqualFold(v, "true")
		case "znode.container.checkIntervalMs":
			ms, err := strconv.Atoi(v)
			if err != nil || ms <= 0 {
				return fmt.Errorf("-D%s=%q: want a positive number of milliseconds", k, v)
			}
			c.ContainerCheckInterval = time.Duration(ms) * time.Millisecond
		}
	}
	return nil
}

// property is one key=value line of a Java properties file.
type property struct {
	file       string
	line       int
	key, value string
}

type properties struct {
	list  []property
	byKey map[string]property // the last line of each key wins, as in java.util.Properties
}

// add appends p; it is its key's value from now on.
func (ps *properties) add(p property) {
	ps.list = append(ps.list, p)
	ps.byKey[p.key] = p
}

// parseBool reads a boolean as QuorumPeerConfig does: true or false, in any case, and nothing else.
func parseBool(p property) (bool, error) {
	switch {
	case strings.EqualFold(p.value, "true"):
		return true, nil
	case strings.EqualFold(p.value, "false"):
		return false, nil
	}
	return false, fmt.Errorf("%s:%d: %s=%s: want true or false (ZooKeeper 3.8 refuses it: \"Invalid option %s for %s. Choose 'true' or 'false.'\")", p.file, p.line, p.key, p.value, p.value, p.key)
}

// readProperties reads a Java properties file as ZooKeeper's QuorumPeerConfig does: key=value (or key:value,
// or key value) lines, # and ! comments, surrounding white space trimmed.
func readProperties(path string) (properties, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return properties{}, fmt.Errorf("config file %s does not exist (give the path of a zoo.cfg)", path)
		}
		return properties{}, fmt.Errorf("read config: %w", err)
	}
	defer f.Close()
	ps := properties{byKey: map[string]property{}}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		i := strings.IndexAny(line, "=: \t")
		if i <= 0 {
			return properties{}, fmt.Errorf("%s:%d: %q: want key=value", path, n, line)
		}
		ps.add(property{file: path, line: n, key: strings.TrimSpace(line[:i]), value: strings.TrimSpace(strings.TrimLeft(line[i:], "=: \t"))})
	}
	if err := sc.Err(); err != nil {
		return properties{}, fmt.Errorf("read config %s: %w", path, err)
	}
	return ps, nil
}

// parseMember reads server.N=host:peer:election[:participant|:observer][;[addr:]port].
func parseMember(p property) (Member, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s=%s: %s (want server.N=host:peerPort:electionPort[:participant|:observer][;[address:]clientPort])",
			p.file, p.line, p.key, p.value, fmt.Sprintf(format, args...))
	}
	id, err := strconv.Atoi(strings.TrimPrefix(p.key, "server."))
	if err != nil || id < 0 {
		return Member{}, bad("the server id is not a number")
	}
	m := Member{ID: id}
	spec, client, hasClient := strings.Cut(p.value, ";")
	parts := strings.Split(spec, ":")
	if len(parts) < 3 || len(parts) > 4 {
		return Member{}, bad("want host, peer port and election port")
	}
	m.Host = parts[0]
	if m.PeerPort, err = strconv.Atoi(parts[1]); err != nil || m.PeerPort <= 0 {
		return Member{}, bad("peer port %q", parts[1])
	}
	if m.ElectionPort, err = strconv.Atoi(parts[2]); err != nil || m.ElectionPort <= 0 {
		return Member{}, bad("election port %q", parts[2])
	}
	if len(parts) == 4 {
		switch parts[3] {
		case "participant":
		case "observer":
			m.Observer = true
		default:
			return Member{}, bad("peer type %q: want participant or observer", parts[3])
		}
	}
	if hasClient {
		client = strings.TrimSpace(client)
		if !strings.Contains(client, ":") {
			client = ":" + client
		}
		h, port, err := net.SplitHostPort(client)
		if n, perr := strconv.Atoi(port); err != nil || perr != nil || n <= 0 || n > 65535 {
			return Member{}, bad("client port %q", client)
		}
		m.ClientAddr = net.JoinHostPort(h, port)
	}
	return m, nil
}

// readMyID reads dataDir/myid, the server's id, as 3.8 does: its first line, a number; a missing file is no
// error (a standalone server needs none), a file that is no number is.
func readMyID(dataDir string) (id int, ok bool, err error) {
	path := filepath.Join(dataDir, "myid")
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read the server's id: %w", err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	first = strings.TrimSuffix(first, "\r")
	if id, err = strconv.Atoi(first); err != nil || id < 0 {
		return 0, false, fmt.Errorf("%s: %q is not a server id (want a number, the N of this server's server.N line)", path, first)
	}
	return id, true, nil
}

func memberIDs(ms []Member) string {
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = strconv.Itoa(m.ID)
	}
	return strings.Join(ids, ", ")
}

// applySkipACL reads zookeeper.skipACL: -Dzookeeper.skipACL, then zoo.cfg's skipACL (ZooKeeper sets a zoo.cfg
// key it does not know as the system property "zookeeper."+key, over the JVM flag).
func (c *Config) applySkipACL(props properties) {
	if p, ok := props.byKey["skipACL"]; ok {
		c.SkipACL = p.value == "yes"
	}
}

// applyEnforceAuth reads enforced authentication as ZooKeeper 3.8's AuthenticationHelper does (measured):
// sessionRequireClientSASLAuth=true requires sasl, whatever enforce.auth.enabled says; otherwise
// enforce.auth.enabled=true requires one of enforce.auth.schemes (comma-separated). Each may be a zoo.cfg key
// or a -Dzookeeper.… property, zoo.cfg's winning. A scheme no authentication provider serves stops the
// server ("Authentication scheme sasl is not available." without an authProvider naming
// SASLAuthenticationProvider): ip and digest are always there.
func (c *Config) applyEnforceAuth(props properties, jvmFlags string) error {
	property := func(key string) string { return zookeeperProperty(props, jvmFlags, key) }
	switch {
	case strings.EqualFold(property("sessionRequireClientSASLAuth"), "true"):
		c.EnforceAuthSchemes = []string{"sasl"}
	case strings.EqualFold(property("enforce.auth.enabled"), "true"):
		for _, s := range strings.Split(property("enforce.auth.schemes"), ",") {
			if s = strings.TrimSpace(s); s != "" {
				c.EnforceAuthSchemes = append(c.EnforceAuthSchemes, s)
			}
		}
		if len(c.EnforceAuthSchemes) == 0 {
			return fmt.Errorf("%s: enforce.auth.enabled=true needs the schemes to require in enforce.auth.schemes (sasl, digest, …)", c.File)
		}
	}
	for _, s := range c.EnforceAuthSchemes {
		if s != "ip" && s != "digest" && !(s == "sasl" && c.SASLACLs) {
			return fmt.Errorf("%s: authentication scheme %s is not available (enforce.auth.schemes; sasl needs authProvider.N=%s)", c.File, s, saslAuthProvider)
		}
	}
	return nil
}

// zookeeperProperty is the system property zookeeper.KEY as a real server sees it: zoo.cfg's KEY (which
// QuorumPeerConfig sets as that property), else the last -Dzookeeper.KEY= of the JVM flags; "" when neither.
func zookeeperProperty(props properties, jvmFlags, key string) string {
	if p, ok := props.byKey[key]; ok {
		return p.value
	}
	value := ""
	for _, f := range strings.Fields(jvmFlags) {
		if v, ok := strings.CutPrefix(f, "-Dzookeeper."+key+"="); ok {
			value = v // the last one wins, as with java's -D
		}
	}
	return value
}

// applyTLS reads the secure client port and its ssl.* settings (zoo.cfg keys or -Dzookeeper.ssl.* properties),
// and checks that the stores read, as a real server does before it serves.
func (c *Config) applyTLS(props properties, jvmFlags string) error {
	p, ok := props.byKey["secureClientPort"]
	if !ok {
		return nil
	}
	port, err := strconv.Atoi(p.value)
	if err != nil || port <= 0 || port > 65535 {
		return fmt.Errorf("%s:%d: secureClientPort: %q: want a port from 1 to 65535", p.file, p.line, p.value)
	}
	host, _, _ := net.SplitHostPort(c.ClientAddr)
	if a, ok := props.byKey["secureClientPortAddress"]; ok && a.value != "" && a.value != "0.0.0.0" {
		host = a.value
	}
	c.SecureClientAddr = net.JoinHostPort(host, strconv.Itoa(port))
	get := func(key string) string { return zookeeperProperty(props, jvmFlags, "ssl."+key) }
	c.TLS = keystore.Settings{
		KeyStore: get("keyStore.location"), KeyStorePassword: get("keyStore.password"), KeyStoreType: get("keyStore.type"),
		TrustStore: get("trustStore.location"), TrustStorePassword: get("trustStore.password"), TrustStoreType: get("trustStore.type"),
		ClientAuth: get("clientAuth"), Protocol: get("protocol"), EnabledProtocols: get("enabledProtocols"),
	}
	if _, err := keystore.ServerConfig(c.TLS); err != nil {
		return fmt.Errorf("%s: secureClientPort %d: %w", c.File, port, err)
	}
	return nil
}
