package core

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"
)

// This file is dynamic reconfiguration as ZooKeeper 3.8 does it (measured on a real 3-server ensemble with
// reconfigEnabled=true, realzk; the checks' order read from the server's request processor): the ensemble's
// membership, the /zookeeper/config node that shows it, and the reconfig request (opcode 16) that changes it.
// It is pure, like the core: the Server applies a reconfig's outcome to the emulated ensemble (ensemble.go).
//
// /zookeeper/config holds one line per server, "server.N=host:quorumPort:electionPort:role" with
// ";clientHost:clientPort" when the line gave a client address, then "version=" and the configuration's
// version in hex: the zxid of the reconfig that made it (for the configuration the ensemble started with,
// its first epoch's first zxid, 0x100000000: see firstEpochZxid). A standalone server's is empty. A reconfig
// checks, in this order (a failure spends a zxid, as any failed write does):
//
//   - reconfigEnabled: ZRECONFIGDISABLED (-123) without it, whoever asks and whatever they send;
//   - a standalone server answers UNIMPLEMENTED (-6);
//   - fromConfig (-1: any) must be the current version, else BadVersion;
//   - the servers: a whole configuration (newMembers) replaces the membership, commas or newlines between
//     its "server.N=…" lines; an incremental one removes the leaving ids and adds or replaces the joining
//     "server.N=…" lines, which must have a client port. What does not parse is BadArguments, a server id or
//     port that is not a number in a place Java parses it unchecked is a marshalling error (-5);
//   - the new configuration needs at least two participants (BadArguments), and a majority of them running
//     (NewConfigNoQuorum, -13): a joining server the ensemble does not run does not count;
//   - the session needs WRITE on /zookeeper/config (world:anyone has READ only: the super user, or whoever
//     its ACL is changed to allow), else NoAuth.
//
// Then /zookeeper/config gets the new text (version -1, mzxid and mtime the reconfig's), its watchers get
// NodeDataChanged, and the reply carries the text and the stat, as a getData reply does.

// quorumServer is one server of a dynamic configuration.
type quorumServer struct {
	id                       int64
	host                     string
	quorumPort, electionPort int
	observer                 bool
	clientHost               string // "" when the line has no client address (the static clientPort's)
	clientPort               int
}

// String formats the server as ZooKeeper's configuration shows it, after "server.N=".
func (q quorumServer) String() string {
	role := "participant"
	if q.observer {
		role = "observer"
	}
	s := fmt.Sprintf("%s:%d:%d:%s", bracketHost(q.host), q.quorumPort, q.electionPort, role)
	if q.clientHost != "" {
		s += fmt.Sprintf(";%s:%d", bracketHost(q.clientHost), q.clientPort)
	}
	return s
}

func bracketHost(h string) string {
	if strings.Contains(h, ":") {
		return "[" + h + "]"
	}
	return h
}

// dynConfig is an ensemble's membership and its version.
type dynConfig struct {
	servers []quorumServer // in the order ZooKeeper lists them (see order)
	version int64
}

// text is /zookeeper/config's data for the configuration.
func (d *dynConfig) text() string {
	var b strings.Builder
	for _, q := range d.servers {
		fmt.Fprintf(&b, "server.%d=%s\n", q.id, q)
	}
	fmt.Fprintf(&b, "version=%x", d.version)
	return b.String()
}

// voters returns the ids of the participants.
func (d *dynConfig) voters() []int64 {
	var out []int64
	for _, q := range d.servers {
		if !q.observer {
			out = append(out, q.id)
		}
	}
	return out
}

// find returns the server with the id, and whether there is one.
func (d *dynConfig) find(id int64) (quorumServer, bool) {
	for _, q := range d.servers {
		if q.id == id {
			return q, true
		}
	}
	return quorumServer{}, false
}

// order sorts servers as ZooKeeper's HashMap of them iterates: by bucket (the id's hash, spread, modulo a
// table of 16 or the power of two that keeps it three quarters full), then by id.
func order(servers []quorumServer) {
	buckets := 16
	for len(servers) > buckets*3/4 {
		buckets *= 2
	}
	bucket := func(id int64) int64 {
		h := int32(id ^ int64(uint64(id)>>32))
		h ^= int32(uint32(h) >> 16)
		return int64(h) & int64(buckets-1)
	}
	slices.SortFunc(servers, func(a, b quorumServer) int {
		if ba, bb := bucket(a.id), bucket(b.id); ba != bb {
			return int(ba - bb)
		}
		return int(a.id - b.id)
	})
}

// errNewConfigNoQuorum is ZooKeeper's NEWCONFIGNOQUORUM (-13), which go-zookeeper has no named error for.
var errNewConfigNoQuorum = fmt.Errorf("unknown error: %v", zk.ErrCode(-13))

// configError is a configuration that does not parse: BadArguments. Its text says why, for the model's
// records (the server sends the code alone).
type configError struct{ why string }

func (e *configError) Error() string { return e.why }

// javaError is what Java throws unchecked while parsing (a number that is not one, a port out of range):
// the request fails with a marshalling error.
type javaError struct{ why string }

func (e *javaError) Error() string { return e.why }

// reconfigCode maps a parse failure to the error the client gets.
func reconfigCode(err error) error {
	var je *javaError
	if errors.As(err, &je) {
		return errMarshalling
	}
	return zk.ErrBadArguments
}

// splitList splits a comma-separated list, trimming each item and dropping empty ones (ZooKeeper's
// StringUtils.split).
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// javaInt parses a port as Integer.parseInt does, then checks its range as InetSocketAddress does.
func javaInt(s, what string) (int, error) {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, &configError{fmt.Sprintf("%s %q is not a number", what, s)}
	}
	if n < 0 || n > 65535 {
		return 0, &javaError{fmt.Sprintf("%s %d is out of range", what, n)}
	}
	return int(n), nil
}

// javaLong parses a server id as Long.parseLong does, unchecked.
func javaLong(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, &javaError{fmt.Sprintf("server id %q is not a number", s)}
	}
	return n, nil
}

// hostAndPort splits "host:port…" or "[v6]:port…" as ZooKeeper's ConfigUtils.getHostAndPort does.
func hostAndPort(s string) ([]string, error) {
	if !strings.HasPrefix(s, "[") {
		return javaSplit(s, ':'), nil
	}
	i := strings.Index(s, "]")
	switch {
	case i < 0:
		return nil, &configError{s + " starts with '[' but has no matching ']:'"}
	case i+2 == len(s):
		return nil, &configError{s + " doesn't have a port after colon"}
	case i+2 < len(s):
		return append([]string{s[1:i]}, javaSplit(s[i+2:], ':')...), nil
	}
	return []string{strings.NewReplacer("[", "", "]", "").Replace(s)}, nil
}

// parseServer parses the part of a "server.N=" line after the '=': host:quorumPort:electionPort[:role]
// [;[clientHost:]clientPort].
func parseServer(id int64, spec string) (quorumServer, error) {
	q := quorumServer{id: id}
	wrong := &configError{spec + " does not have the form server_config or server_config;client_config"}
	serverClient := javaSplit(spec, ';')
	if len(serverClient) == 0 {
		return q, wrong
	}
	if len(serverClient) == 2 {
		parts, err := hostAndPort(serverClient[1])
		if err != nil {
			return q, err
		}
		if len(parts) > 2 {
			return q, wrong
		}
		q.clientHost = "0.0.0.0"
		if len(parts) == 2 {
			q.clientHost = parts[0]
		}
		if q.clientPort, err = javaInt(parts[len(parts)-1], "client port"); err != nil {
			return q, err
		}
	}
	addresses := strings.Split(serverClient[0], "|")
	if len(addresses) > 1 {
		return q, &configError{fmt.Sprintf("multiple addresses for server %d: the multi-address feature is off", id)}
	}
	parts, err := hostAndPort(addresses[0])
	if err != nil {
		return q, err
	}
	if len(serverClient) > 2 || len(parts) < 3 || len(parts) > 4 {
		return q, wrong
	}
	q.host = parts[0]
	if q.quorumPort, err = javaInt(parts[1], "quorum port"); err != nil {
		return q, err
	}
	if q.electionPort, err = javaInt(parts[2], "election port"); err != nil {
		return q, err
	}
	if q.quorumPort == q.electionPort {
		return q, &configError{fmt.Sprintf("server %d: the quorum and election ports must differ", id)}
	}
	if len(parts) == 4 {
		switch strings.ToLower(strings.TrimSpace(parts[3])) {
		case "observer":
			q.observer = true
		case "participant":
		default:
			return q, &configError{"unrecognised peer type: " + parts[3]}
		}
	}
	return q, nil
}

// addresses are the server's addresses that a duplicate check compares: ZooKeeper leaves out loopback and
// wildcard ones (and names it cannot resolve; the model resolves none).
func (q quorumServer) addresses() []string {
	var out []string
	add := func(host string, port int) {
		if ip := net.ParseIP(host); ip != nil && !ip.IsLoopback() && !ip.IsUnspecified() {
			out = append(out, net.JoinHostPort(ip.String(), strconv.Itoa(port)))
		}
	}
	add(q.host, q.quorumPort)
	if q.clientHost != "" {
		add(q.clientHost, q.clientPort)
	}
	add(q.host, q.electionPort)
	return out
}

// incremental returns the configuration with the leaving ids removed and the joining servers added (a
// joining id already present is replaced). nil lists are absent, as Java's null.
func (d *dynConfig) incremental(joining, leaving []byte) (dynConfig, error) {
	next := slices.Clone(d.servers)
	if leaving != nil {
		for _, l := range splitList(string(leaving)) {
			id, err := javaLong(l)
			if err != nil {
				return dynConfig{}, err
			}
			next = slices.DeleteFunc(next, func(q quorumServer) bool { return q.id == id })
		}
	}
	if joining != nil {
		for _, j := range splitList(string(joining)) {
			var parts []string
			for _, p := range strings.Split(j, "=") {
				if p = strings.TrimSpace(p); p != "" {
					parts = append(parts, p)
				}
			}
			if len(parts) != 2 {
				return dynConfig{}, &configError{fmt.Sprintf("%q: wrong format of server string (want server.N=host:port:port;port)", j)}
			}
			id, err := javaLong(parts[0][strings.LastIndex(parts[0], ".")+1:])
			if err != nil {
				return dynConfig{}, err
			}
			q, err := parseServer(id, parts[1])
			if err != nil {
				return dynConfig{}, err
			}
			if q.clientHost == "" {
				return dynConfig{}, &configError{fmt.Sprintf("%q: each server needs 3 ports (quorum, election, client)", j)}
			}
			for _, other := range next {
				if other.id == q.id {
					continue
				}
				for _, a := range q.addresses() {
					if slices.Contains(other.addresses(), a) {
						return dynConfig{}, &configError{fmt.Sprintf("%s of server.%d conflicts with server.%d", a, q.id, other.id)}
					}
				}
			}
			next = slices.DeleteFunc(next, func(o quorumServer) bool { return o.id == q.id })
			next = append(next, q)
		}
	}
	order(next)
	return dynConfig{servers: next}, nil
}

// parseMembers parses a whole configuration (newMembers): "server.N=…" lines (and a "version" line, which
// is ignored) separated by commas or newlines, read as Java reads a properties file.
func parseMembers(text string) (dynConfig, error) {
	props, order0 := loadProperties(strings.ReplaceAll(text, ",", "\n"))
	var servers []quorumServer
	for _, key := range order0 {
		k := strings.TrimSpace(key)
		switch {
		case strings.HasPrefix(k, "group") || strings.HasPrefix(k, "weight"):
			return dynConfig{}, &configError{"hierarchical quorums (" + k + "): the model has majority quorums only"}
		case !strings.HasPrefix(k, "server.") && k != "version":
			return dynConfig{}, &configError{"unrecognised parameter: " + k}
		}
	}
	for _, key := range order0 {
		if !strings.HasPrefix(key, "server.") {
			continue
		}
		id, err := javaLong(key[strings.Index(key, ".")+1:])
		if err != nil {
			return dynConfig{}, err
		}
		q, err := parseServer(id, props[key])
		if err != nil {
			return dynConfig{}, err
		}
		servers = slices.DeleteFunc(servers, func(o quorumServer) bool { return o.id == id })
		servers = append(servers, q)
	}
	d := dynConfig{servers: servers}
	participants, observers := len(d.voters()), len(servers)-len(d.voters())
	if participants <= 1 && observers > 0 {
		return dynConfig{}, &javaError{"observers without a quorum of participants"}
	}
	order(d.servers)
	return d, nil
}

// loadProperties reads key/value lines as java.util.Properties.load does, for what a configuration holds:
// comments (# or !), blank lines, a key ending at the first '=', ':' or blank, backslash escapes left as they
// are. It returns the values and the keys in first-seen order (a later line with the same key wins).
func loadProperties(text string) (map[string]string, []string) {
	props := map[string]string{}
	var keys []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimLeft(strings.TrimSuffix(line, "\r"), " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		end := strings.IndexAny(line, "=: \t\f")
		if end < 0 {
			end = len(line)
		}
		key, rest := line[:end], strings.TrimLeft(line[end:], " \t\f")
		if rest != "" && (rest[0] == '=' || rest[0] == ':') {
			rest = strings.TrimLeft(rest[1:], " \t\f")
		}
		if _, ok := props[key]; !ok {
			keys = append(keys, key)
		}
		props[key] = rest
	}
	return props, keys
}

// ReconfigRequest is a reconfig's arguments; nil strings are absent (Java's null).
type ReconfigRequest struct {
	Joining, Leaving, NewMembers []byte
	FromConfig                   int64
	Running                      []int64 // the ids of the servers the ensemble runs (the leader's synced ones)
}

// reconfigure checks and applies a reconfig for session sid, in ZooKeeper 3.8's order (see the top of the
// file); on success it returns the config node's new data and stat and the NodeDataChanged events.
func (c *Core) reconfigure(sid int64, r *ReconfigRequest) (Result, []Notification) {
	var res Result
	switch {
	case !c.reconfigOn:
		res.Err = zk.ErrReconfigDisabled
		return res, nil
	case r == nil:
		res.Err = zk.ErrBadArguments // a reconfig without its arguments: nothing to decide on
		return res, nil
	case c.config == nil:
		res.Err = errUnimplemented
		return res, nil
	case r.FromConfig != -1 && r.FromConfig != c.config.version:
		res.Err = zk.ErrBadVersion
		return res, nil
	}
	var next dynConfig
	var err error
	if r.NewMembers != nil {
		next, err = parseMembers(string(r.NewMembers))
	} else {
		next, err = c.config.incremental(r.Joining, r.Leaving)
	}
	if err != nil {
		res.Err = reconfigCode(err)
		return res, nil
	}
	voters := next.voters()
	if len(voters) < 2 {
		res.Err = zk.ErrBadArguments // the new configuration must have at least 2 participants
		return res, nil
	}
	synced := 0
	for _, id := range voters {
		if slices.Contains(r.Running, id) {
			synced++
		}
	}
	if synced <= len(voters)/2 {
		res.Err = errNewConfigNoQuorum // too few of the new configuration's participants run
		return res, nil
	}
	n := c.nodes[configPath]
	if !c.allowed(sid, n, zk.PermWrite) {
		res.Err = zk.ErrNoAuth
		return res, nil
	}
	next.version = c.zxid
	c.config = &next
	c.setConfigNode()
	res.Data, res.Stat = cloneBytes(n.data), n.view()
	return res, c.fire(dataWatch, configPath, zk.EventNodeDataChanged, nil)
}

// configPath is the node that holds the ensemble's configuration.
const configPath = "/zookeeper/config"

// setConfigNode writes the configuration to its node, as a reconfig's transaction does: version -1, mzxid
// and mtime now.
func (c *Core) setConfigNode() {
	n := c.nodes[configPath]
	n.data = []byte(c.config.text())
	n.stat.Version = -1
	n.stat.Mzxid = c.zxid
	n.stat.Mtime = c.now
	n.stat.DataLength = int32(len(n.data))
}

// Member is one server of an ensemble's configuration, as a zoo.cfg's "server.N=" line gives it:
// server.ID=Host:QuorumPort:ElectionPort[:observer][;[ClientHost:]ClientPort]. The model listens on no
// quorum or election port; they only appear in /zookeeper/config.
type Member struct {
	ID                       int64
	Host                     string
	QuorumPort, ElectionPort int
	Observer                 bool
	// ClientHost and ClientPort are the line's client address; ClientHost "" means the line has none (the
	// server's clientPort applies, and /zookeeper/config shows none). A client part of a port alone is
	// ClientHost "0.0.0.0", as ZooKeeper reads it.
	ClientHost string
	ClientPort int
}

// firstEpochZxid is the zxid a fresh ensemble's first leader starts its epoch with (epoch 1, counter 0); its
// first write is the next. With reconfigEnabled it is also the version ZooKeeper 3.8 gives the configuration
// the ensemble started with, and /zookeeper/config's mzxid; without it both stay 0 (measured on fresh
// 3-server ensembles: "version=100000000" and mzxid 0x100000000 with it, "version=0" and 0 without, in the
// node and in the conf word alike). A standalone server's zxids are of epoch 0. The model moves an ensemble's
// zxids to the first epoch only with reconfig on (setMembers).
const firstEpochZxid = 1 << 32

// setMembers gives the core an ensemble's configuration as it starts, version 0 (none for a standalone server,
// whose /zookeeper/config is empty). With reconfig on, the zxids move to the first epoch and the version is its
// first zxid. Without it they stay where they are (a real ensemble's are of epoch 1 all the same, but the
// model's histories and committed traces count from 0; the configuration's version is 0 either way).
func (c *Core) setMembers(members []Member) {
	n := c.nodes[configPath]
	if len(members) <= 1 {
		c.config = nil
		n.data, n.stat.Version, n.stat.Mzxid, n.stat.Mtime, n.stat.DataLength = []byte{}, 0, 0, 0, 0
		return
	}
	d := &dynConfig{}
	for _, m := range members {
		q := quorumServer{id: m.ID, host: m.Host, quorumPort: m.QuorumPort, electionPort: m.ElectionPort, observer: m.Observer,
			clientHost: m.ClientHost, clientPort: m.ClientPort}
		d.servers = append(d.servers, q)
	}
	order(d.servers)
	c.config = d
	if c.reconfigOn {
		c.zxid = max(c.zxid, firstEpochZxid)
		d.version = c.zxid
	}
	c.setConfigNode()
}
