package model

import (
	"bytes"
	_ "embed"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkmodel/zkmodel/model/internal/core"
)

// This file is the four-letter words: a connection whose first four bytes are one of ZooKeeper 3.8's words
// (srvr, ruok, mntr, …) gets a text answer and is closed, as a real server answers them (measured on Debian's
// 3.8.0; the answers are in conformance/flw, the rules in its README). The core supplies the figures (node count,
// sessions, ephemerals, watches, zxid), this front end formats them per server of the ensemble.

// zkVersion is the version line Debian's ZooKeeper 3.8.0 prints, byte for byte. go-zookeeper's FLWSrvr cannot
// parse it (nor Apache's own 3.8 builds: their date is yyyy-MM-dd), so FLWSrvr fails on the model as on a real
// server; kazoo's server_version reads (3, 8, 0) from it.
const zkVersion = "3.8.0-${mvngit.commit.id}, built on 2024-12-29 17:54 UTC"

// fourLetterWords are the words ZooKeeper 3.8 answers. A connection that starts with any other four bytes
// (upper case, "kill", "hash", …) is read as a connect request whose length they spell, too long: closed
// without an answer.
var fourLetterWords = []string{"conf", "cons", "crst", "dirs", "dump", "envi", "gtmk", "isro", "mntr", "ruok",
	"srst", "srvr", "stat", "stmk", "wchc", "wchp", "wchs"}

// DefaultFourLetterWords is ZooKeeper 3.8's default 4lw.commands.whitelist: srvr alone (measured).
var DefaultFourLetterWords = []string{"srvr"}

// FourLetterWords returns the words ZooKeeper 3.8 (and the model) answers, in alphabetical order.
func FourLetterWords() []string { return slices.Clone(fourLetterWords) }

// WithFourLetterWords sets every server's 4lw.commands.whitelist: the four-letter words it answers; "*" allows
// them all. A word outside it is answered "<word> is not executed because it is not in the whitelist.".
// Without this option the list is DefaultFourLetterWords, 3.8's default. Names ZooKeeper does not know are
// ignored, as ZooKeeper ignores them.
func WithFourLetterWords(words ...string) Option {
	return func(c *config) { c.fourLetterWords = slices.Clone(words) }
}

// defaultTraceMask is the trace mask gtmk answers before any stmk.
const defaultTraceMask = 306

// flwDrainWait is how long a server waits for the rest of what a client sent with its word before it
// closes: reading it first lets the close be a clean one (unread input would reset the connection and could
// cost the client its answer).
const flwDrainWait = 20 * time.Millisecond

// notServing is the answer of a server without a quorum to every word but ruok, envi and isro (measured).
const notServing = "This ZooKeeper instance is not currently serving requests\n"

// fourLetterWord reads the connection's first four bytes. If they are a four-letter word it answers it,
// closes the connection and reports true; otherwise it returns a reader that gives those bytes again and then
// the rest of the connection, for the connect request.
func (l *wireLink) fourLetterWord() (io.Reader, bool) {
	var head [4]byte
	n, _ := io.ReadFull(l.nc, head[:])
	if n == 4 && string(head[:]) == tlsPeerMagic { // a TLS gateway's record of the client's certificate first
		id, cert, err := readTLSPeer(l.nc)
		if err != nil {
			l.abort()
			return nil, true
		}
		l.x509, l.hasCert = id, cert
		n, _ = io.ReadFull(l.nc, head[:])
	}
	word := string(head[:n])
	if n < 4 || !slices.Contains(fourLetterWords, word) {
		return io.MultiReader(bytes.NewReader(head[:n]), l.nc), false
	}
	var arg []byte
	_ = l.nc.SetReadDeadline(time.Now().Add(flwDrainWait))
	if word == "stmk" {
		// stmk carries the new mask: 8 more bytes. Without them the server closes without an answer.
		arg = make([]byte, 8)
		if _, err := io.ReadFull(l.nc, arg); err != nil {
			arg = nil
		}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(l.nc, 64<<10))
	s := l.srv
	s.mu.Lock()
	answer, ok := s.answerWord(l, word, arg)
	s.mu.Unlock()
	if ok {
		l.send([]byte(answer))
	}
	l.closeAfterFlush()
	return nil, true
}

// allowed reports whether word is in the servers' whitelist.
func (c *config) allowed(word string) bool {
	list := c.fourLetterWords
	if list == nil {
		list = DefaultFourLetterWords
	}
	for _, w := range list {
		if w = strings.TrimSpace(w); w == "*" || w == word {
			return true
		}
	}
	return false
}

// answerWord is what server l.member answers to word; false means it closes without a byte. Caller holds s.mu.
func (s *Server) answerWord(l *wireLink, word string, arg []byte) (string, bool) {
	if !s.cfg.allowed(word) {
		return word + " is not executed because it is not in the whitelist.\n", true
	}
	i := l.member
	serving := s.ens.serving(i) || s.readOnlyMember(i)
	switch word {
	case "ruok":
		return "imok", true
	case "envi":
		return envi(), true
	case "isro":
		switch {
		case s.readOnlyMember(i):
			return "ro", true
		case !serving:
			return "null", true
		}
		return "rw", true
	case "gtmk":
		return strconv.FormatInt(s.traceMask(i), 10), true
	case "stmk":
		if arg == nil {
			return "", false
		}
		s.setTraceMask(i, int64(binary.BigEndian.Uint64(arg)))
		return strconv.FormatInt(s.traceMask(i), 10), true
	}
	if !serving {
		return notServing, true
	}
	v := s.memberView(l)
	switch word {
	case "srvr":
		return v.srvr(), true
	case "stat":
		var b strings.Builder
		fmt.Fprintf(&b, "Zookeeper version: %s\n%sClients:\n", zkVersion, v.readOnlyLine())
		for _, c := range v.conns {
			b.WriteString(c.brief() + "\n")
		}
		b.WriteString("\n")
		b.WriteString(v.srvrFigures())
		return b.String(), true
	case "cons":
		var b strings.Builder
		for _, c := range v.conns {
			b.WriteString(c.full() + "\n")
		}
		return b.String() + "\n", true
	case "crst":
		return "Connection stats reset.\n", true
	case "srst":
		return "Server stats reset.\n", true
	case "conf":
		return s.conf(i), true
	case "dump":
		return s.dumpWord(v), true
	case "wchs":
		return v.wchs(), true
	case "wchc":
		return v.wchc(), true
	case "wchp":
		return v.wchp(), true
	case "mntr":
		return s.mntr(v), true
	case "dirs":
		return "datadir_size: 0\nlogdir_size: 0\n", true
	}
	return "", false
}

// traceMask returns member i's trace mask (gtmk). Caller holds s.mu.
func (s *Server) traceMask(i int) int64 {
	if m, ok := s.ens.traceMasks[i]; ok {
		return m
	}
	return defaultTraceMask
}

// setTraceMask sets member i's trace mask (stmk). Caller holds s.mu.
func (s *Server) setTraceMask(i int, mask int64) {
	if s.ens.traceMasks == nil {
		s.ens.traceMasks = map[int]int64{}
	}
	s.ens.traceMasks[i] = mask
}

// flwConn is one connection of a server as the four-letter words list it.
type flwConn struct {
	addr    string // "/ip:port"
	session int64  // 0 for a connection without a session (the word's own, one still in its handshake)
	timeout time.Duration
	heard   int64 // virtual ms the session was last heard from
	zxid    int64
	expiry  int64 // its connection expiry bucket (cnxnexpiry.go)
}

// brief is the connection's line in stat.
func (c flwConn) brief() string {
	if c.session == 0 {
		return fmt.Sprintf(" %s[0](queued=0,recved=1,sent=0)", c.addr)
	}
	return fmt.Sprintf(" %s[1](queued=0,recved=0,sent=0)", c.addr)
}

// full is the connection's line in cons. Packet counts and latencies are not modelled: they are 0.
func (c flwConn) full() string {
	if c.session == 0 {
		return c.brief()
	}
	return fmt.Sprintf(" %s[1](queued=0,recved=0,sent=0,sid=%#x,lop=NA,est=%d,to=%d,lcxid=0x0,lzxid=%#x,lresp=%d,llat=0,minlat=0,avglat=0,maxlat=0)",
		c.addr, c.session, c.heard, c.timeout.Milliseconds(), c.zxid, c.heard)
}

// memberView is one server's figures: the core's, and its own connections.
type memberView struct {
	member  int
	mode    string
	fig     core.Figures
	conns   []flwConn // the asking connection first, then by session, then by address
	watches map[int64][]string
	count   int // data and child watches of its sessions
	now     int64
}

// memberView gathers the figures of the server l is a connection to. Caller holds s.mu.
func (s *Server) memberView(l *wireLink) memberView {
	i := l.member
	v := memberView{member: i, fig: s.core.Figures(), watches: map[int64][]string{}, now: s.core.Now()}
	switch {
	case s.readOnlyMember(i):
		v.mode = "read-only"
	case s.ens.size() == 1:
		v.mode = "standalone"
	case s.ens.leader == i:
		v.mode = "leader"
	case s.observer(i):
		v.mode = "observer"
	default:
		v.mode = "follower"
	}
	var others []flwConn
	for other := range s.wire.links {
		if other.member != i {
			continue
		}
		c := flwConn{addr: "/" + remoteAddr(other.nc), expiry: other.expiry}
		if slot := other.slot; slot != nil && slot.link == other && slot.session != 0 {
			c.session = slot.session
		}
		if other == l {
			v.conns = append(v.conns, c)
			continue
		}
		others = append(others, c)
	}
	for _, cl := range s.clients {
		if !cl.wireClient && cl.connected && !cl.finished && cl.member == i && cl.session != 0 {
			c := flwConn{addr: "/127.0.0.1:0", session: cl.session}
			if sess, ok := s.core.Session(cl.session); ok { // touched whenever its session is heard from
				c.expiry = cnxnBucket(sess.LastHeard, sess.Timeout.Milliseconds())
			}
			others = append(others, c)
		}
	}
	for k := range others {
		c := &others[k]
		if sess, ok := s.core.Session(c.session); ok {
			c.timeout, c.heard, c.zxid = sess.Timeout, sess.LastHeard, s.core.Zxid()
			if paths := s.core.DataWatchPaths(c.session); len(paths) > 0 {
				v.watches[c.session] = paths
			}
			v.count += s.core.WatchCount(c.session)
		}
	}
	slices.SortFunc(others, func(a, b flwConn) int {
		if a.session != b.session {
			return cmpInt64(a.session, b.session)
		}
		return strings.Compare(a.addr, b.addr)
	})
	v.conns = append(v.conns, others...)
	return v
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// remoteAddr is the client's ip:port; in-process connections are 127.0.0.1:0.
func remoteAddr(nc net.Conn) string {
	if a, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		return a.String()
	}
	return "127.0.0.1:0"
}

// srvr formats the srvr answer. Latencies and packet counts are not modelled: they are 0.
func (v memberView) srvr() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Zookeeper version: %s\n%s", zkVersion, v.readOnlyLine())
	b.WriteString(v.srvrFigures())
	return b.String()
}

// readOnlyLine is the line srvr and stat add after the version on a read-only server (measured).
func (v memberView) readOnlyLine() string {
	if v.mode == "read-only" {
		return "READ-ONLY mode; serving only read-only clients\n"
	}
	return ""
}

// srvrFigures is srvr's answer after its version lines, which stat ends with too.
func (v memberView) srvrFigures() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Latency min/avg/max: 0/0.0/0\nReceived: 0\nSent: 0\nConnections: %d\nOutstanding: 0\nZxid: %#x\nMode: %s\nNode count: %d\n",
		len(v.conns), v.fig.Zxid, v.mode, v.fig.Nodes)
	if v.mode == "leader" {
		b.WriteString("Proposal sizes last/min/max: -1/-1/-1\n")
	}
	return b.String()
}

// watchedSessions returns the sessions with data watches, in order.
func (v memberView) watchedSessions() []int64 {
	sids := make([]int64, 0, len(v.watches))
	for sid := range v.watches {
		sids = append(sids, sid)
	}
	slices.Sort(sids)
	return sids
}

// byPath returns the watched paths, sorted, each with its sessions in order.
func (v memberView) byPath() ([]string, map[string][]int64) {
	m := map[string][]int64{}
	for _, sid := range v.watchedSessions() {
		for _, p := range v.watches[sid] {
			m[p] = append(m[p], sid)
		}
	}
	paths := make([]string, 0, len(m))
	for p := range m {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	return paths, m
}

func (v memberView) wchs() string {
	paths, _ := v.byPath()
	total := 0
	for _, ps := range v.watches {
		total += len(ps)
	}
	return fmt.Sprintf("%d connections watching %d paths\nTotal watches:%d\n", len(v.watches), len(paths), total)
}

func (v memberView) wchc() string {
	var b strings.Builder
	for _, sid := range v.watchedSessions() {
		fmt.Fprintf(&b, "%#x\n", sid)
		for _, p := range v.watches[sid] {
			fmt.Fprintf(&b, "\t%s\n", p)
		}
	}
	return b.String() + "\n"
}

func (v memberView) wchp() string {
	var b strings.Builder
	paths, m := v.byPath()
	for _, p := range paths {
		fmt.Fprintf(&b, "%s\n", p)
		for _, sid := range m[p] {
			fmt.Fprintf(&b, "\t%#x\n", sid)
		}
	}
	return b.String() + "\n"
}

// javaDate formats virtual milliseconds as java.util.Date.toString does.
func javaDate(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("Mon Jan 02 15:04:05 MST 2006")
}

// dumpWord formats dump: the session tracker (a follower lists global sessions, the others their expiry
// sets), ephemerals by session, and the connections with their expiry times.
func (s *Server) dumpWord(v memberView) string {
	var b strings.Builder
	b.WriteString("SessionTracker dump:\n")
	sids := s.core.SessionIDs()
	sessions := make([]core.SessionInfo, len(sids))
	for k, sid := range sids {
		sessions[k], _ = s.core.Session(sid)
	}
	if v.mode == "follower" {
		fmt.Fprintf(&b, "Global Sessions(%d):\n", len(sids))
		for k, sid := range sids {
			fmt.Fprintf(&b, "%#x\t%dms\n", sid, sessions[k].Timeout.Milliseconds())
		}
	} else {
		deadlines := make([]int64, len(sids))
		for k := range sids {
			deadlines[k] = s.sessionDeadline(sessions[k])
		}
		times := s.sessionSetTimes(deadlines)
		fmt.Fprintf(&b, "Session Sets (%d)/(%d):\n", len(times), len(sids))
		for _, at := range times {
			fmt.Fprintf(&b, "%d expire at %s:\n", count(deadlines, at), javaDate(at))
			for k, sid := range sids {
				if deadlines[k] == at {
					fmt.Fprintf(&b, "\t%#x\n", sid)
				}
			}
		}
	}
	b.WriteString("ephemeral nodes dump:\n")
	var withEph []int64
	for k, sid := range sids {
		if sessions[k].Ephemerals > 0 {
			withEph = append(withEph, sid)
		}
	}
	fmt.Fprintf(&b, "Sessions with Ephemerals (%d):\n", len(withEph))
	for _, sid := range withEph {
		fmt.Fprintf(&b, "%#x:\n", sid)
		for _, p := range s.core.SessionEphemerals(sid) {
			fmt.Fprintf(&b, "\t%s\n", p)
		}
	}
	b.WriteString("Connections dump:\n")
	buckets := make([]int64, len(v.conns))
	for k, c := range v.conns {
		buckets[k] = c.expiry
	}
	times := s.cnxnSets(v.member, buckets)
	fmt.Fprintf(&b, "Connections Sets (%d)/(%d):\n", len(times), len(v.conns))
	for _, at := range times {
		fmt.Fprintf(&b, "%d expire at %s:\n", count(buckets, at), javaDate(at))
		for k, c := range v.conns {
			if buckets[k] == at {
				fmt.Fprintf(&b, "\tip: %s sessionId: %#x\n", c.addr, c.session)
			}
		}
	}
	return b.String()
}

// count returns how many of xs are x.
func count(xs []int64, x int64) int {
	n := 0
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}

// conf formats member i's configuration, as zoo.cfg would give it. The model has no data directory and no
// quorum ports: those read as Debian's default dataDir and port 0.
func (s *Server) conf(i int) string {
	var b strings.Builder
	port := 2181 + i
	if addrs := s.ens.addrs[i]; len(addrs) > 0 {
		if _, p, err := net.SplitHostPort(addrs[0]); err == nil {
			port, _ = strconv.Atoi(p)
		}
	}
	tick := s.cfg.tick.Milliseconds()
	lo, hi := s.cfg.sessionBounds()
	serverID := int64(0)
	if s.ens.size() > 1 {
		serverID = s.ens.ids[i]
	}
	fmt.Fprintf(&b, "clientPort=%d\nsecureClientPort=-1\ndataDir=/var/lib/zookeeper/version-2\ndataDirSize=0\n"+
		"dataLogDir=/var/lib/zookeeper/version-2\ndataLogSize=0\ntickTime=%d\nmaxClientCnxns=60\nminSessionTimeout=%d\n"+
		"maxSessionTimeout=%d\nclientPortListenBacklog=-1\nserverId=%d\n", port, tick, lo.Milliseconds(), hi.Milliseconds(), serverID)
	if s.ens.size() == 1 {
		return b.String()
	}
	q, _ := s.core.ConfigMember(s.ens.ids[i])
	peerType := 0
	if q.Observer {
		peerType = 1
	}
	fmt.Fprintf(&b, "initLimit=10\nsyncLimit=5\nelectionAlg=3\nelectionPort=%d\nquorumPort=%d\npeerType=%d\nmembership: \n", q.ElectionPort, q.QuorumPort, peerType)
	b.WriteString(s.core.ConfigText()) // no newline after the version: as measured
	return b.String()
}

// envi formats the environment: the same keys as a real server, with the model's process for the JVM's.
func envi() string {
	host, _ := os.Hostname()
	user, home, dir := os.Getenv("USER"), os.Getenv("HOME"), ""
	if wd, err := os.Getwd(); err == nil {
		dir = wd
	}
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	mb := func(n uint64) string { return strconv.FormatUint(n>>20, 10) + "MB" }
	lines := []string{
		"zookeeper.version=" + zkVersion,
		"host.name=" + host,
		"java.version=" + runtime.Version(),
		"java.vendor=zkmodel",
		"java.home=<NA>",
		"java.class.path=<NA>",
		"java.library.path=<NA>",
		"java.io.tmpdir=" + os.TempDir(),
		"java.compiler=<NA>",
		"os.name=" + runtime.GOOS,
		"os.arch=" + runtime.GOARCH,
		"os.version=<NA>",
		"user.name=" + user,
		"user.home=" + home,
		"user.dir=" + dir,
		"os.memory.free=" + mb(mem.HeapIdle),
		"os.memory.max=" + mb(mem.Sys),
		"os.memory.total=" + mb(mem.HeapSys),
	}
	return "Environment:\n" + strings.Join(lines, "\n") + "\n"
}

// The mntr answers of a fresh Debian 3.8.0 server in each mode (measured): their keys in the server's order,
// with the values a fresh server gives for the metrics the model does not keep. Leader lines with {sid} are
// repeated for every follower's server id.
var (
	//go:embed flwdata/mntr-standalone.txt
	mntrStandalone string
	//go:embed flwdata/mntr-leader.txt
	mntrLeader string
	//go:embed flwdata/mntr-follower.txt
	mntrFollower string
	//go:embed flwdata/mntr-readonly.txt
	mntrReadOnly string
)

// mntr formats the monitoring figures, tab-separated, from the fresh server's template.
func (s *Server) mntr(v memberView) string {
	template := map[string]string{"standalone": mntrStandalone, "leader": mntrLeader, "follower": mntrFollower, "observer": mntrFollower,
		"read-only": mntrReadOnly}[v.mode]
	uptime := v.now - s.cfg.start.UnixMilli()
	followers := 0
	var sids []int
	for m := range s.ens.size() {
		if m != s.ens.leader && !s.ens.down[m] {
			followers++
			sids = append(sids, int(s.ens.ids[m]))
		}
	}
	known := map[string]string{
		"zk_version":               zkVersion,
		"zk_server_state":          v.mode,
		"zk_ephemerals_count":      strconv.Itoa(v.fig.Ephemerals),
		"zk_num_alive_connections": strconv.Itoa(len(v.conns)),
		"zk_znode_count":           strconv.Itoa(v.fig.Nodes),
		"zk_global_sessions":       strconv.Itoa(v.fig.Sessions - len(s.localSess) - len(s.roSessions)),
		"zk_local_sessions":        strconv.Itoa(s.localSessionCount(v.member)),
		"zk_watch_count":           strconv.Itoa(v.count),
		"zk_approximate_data_size": strconv.FormatInt(v.fig.DataSize, 10),
		"zk_uptime":                strconv.FormatInt(uptime, 10),
		"zk_leader_uptime":         strconv.FormatInt(uptime, 10),
		"zk_synced_followers":      strconv.Itoa(followers),
		"zk_learners":              strconv.Itoa(followers),
		"zk_quorum_size":           strconv.Itoa(s.ens.size()),
		"zk_avg_latency":           "0.0",
		"zk_min_latency":           "0",
		"zk_max_latency":           "0",
		"zk_packets_sent":          "0",
		"zk_packets_received":      "0",
		"zk_bytes_received_count":  "0",
		"zk_outstanding_requests":  "0",
	}
	var b strings.Builder
	lines := strings.Split(strings.TrimSuffix(template, "\n"), "\n")
	var namespaces []string // the template's per-namespace lines: where the model's go
	for _, line := range lines {
		if strings.Contains(line, "_per_namespace\t") {
			namespaces = append(namespaces, line)
		}
	}
	var reads core.NamespaceCounts
	if v.member >= 0 && v.member < len(s.ens.reads) {
		reads = s.ens.reads[v.member]
	}
	for k := 0; k < len(lines); k++ {
		if strings.Contains(lines[k], "_per_namespace\t") {
			if lines[k] == namespaces[0] {
				namespaceLines(&b, reads, s.core.Writes(), namespaces)
			}
			continue
		}
		if strings.Contains(lines[k], "{sid}") {
			end := k
			for end < len(lines) && strings.Contains(lines[end], "{sid}") {
				end++
			}
			for _, sid := range sids {
				for _, line := range lines[k:end] {
					b.WriteString(strings.ReplaceAll(line, "{sid}", strconv.Itoa(sid)) + "\n")
				}
			}
			k = end - 1
			continue
		}
		key, value, _ := strings.Cut(lines[k], "\t")
		if kv, ok := known[key]; ok {
			value = kv
		}
		b.WriteString(key + "\t" + value + "\n")
	}
	if len(namespaces) == 0 { // a standalone server lists them last
		namespaceLines(&b, reads, s.core.Writes(), nil)
	}
	return b.String()
}
