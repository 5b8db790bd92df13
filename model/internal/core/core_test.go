package core

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// The scenario tests drive the core through its door alone, from the files in testdata/ (the shape of
// go.etcd.io/raft's testdata: a command, "----", what it printed, a blank line). A file is one core, fresh
// from New(1, 0) unless its first command is "new". Commands:
//
//	new seed=N [now=MS] [extended] [interval=MS] [reconfig] [members=N] [super=DIGEST] [skipACL]
//	session NAME [timeout=DURATION] [local]    CreateSession (default 10s), or CreateLocalSession (a read-only
//	                                           server's: no transaction); sessions are named in the output
//	NAME OP [PATH] [key=value…] [watch]        Apply: OP is a request's name as Request.String writes it
//	                                           (create, delete, exists, get, set, children, sync, close,
//	                                           getACL, setACL, check, getAllChildrenNumber, getEphemerals,
//	                                           checkWatches, removeWatches, addWatch, createContainer,
//	                                           createTTL, addAuth, ping); keys: data, flags, version, acl,
//	                                           mode, ttl (version -1 and acl world:anyone:cdrwa unless
//	                                           given); acl=scheme:id:perms[,…] with perms from "rwcda";
//	                                           reconfig: joining, leaving, members, from, running=ID,…
//	NAME multi OP PATH [key=value…] ; OP …     a multi of create, createTTL, delete, set and check
//	expire NAME [local]                        CloseSession (an expiry), or CloseLocalSession
//	dropwatches NAME                           DropWatches (the connection closed)
//	setwatches NAME zxid=N [data=P,…] [exist=P,…] [child=P,…] [persistent=P,…] [recursive=P,…]
//	                                           Apply of an OpSetWatches
//	auth NAME ip=IP | sasl=USER                ResetAuth (a new connection from IP) or AddSASL
//	clock MS                                   SetNow(MS), then the container manager's due passes (Reap)
//	                                           and PassedTo, as Server.Advance does without expiries
//	sequence PATH N                            SetSequence
//	dump | stat PATH | session NAME? | invariants
//
// A request prints its result (err=, then the fields that are set, and zxid=) and the notifications it
// fired, one per line, "-> NAME EventType /path". Session ids print as their names. Run with -rewrite to
// write what the core prints into the files (then read the diff: every expectation is ZooKeeper 3.8's
// measured behaviour, see conformance/SEMANTICS.md).
var rewrite = flag.Bool("rewrite", false, "write the scenarios' actual output into testdata/")

func TestScenarios(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no scenario in testdata/")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			runScenarioFile(t, file)
		})
	}
}

// scenarioCase is one command of a scenario file and the output it expects.
type scenarioCase struct {
	line    int // of the command, for messages
	command string
	want    string
}

// parseScenarios reads a scenario file: comments (#) and blank lines between cases, each case a command
// line, "----", and the expected output up to the next blank line.
func parseScenarios(text string) ([]scenarioCase, error) {
	lines := strings.Split(text, "\n")
	var cases []scenarioCase
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		c := scenarioCase{line: i + 1, command: l}
		if i+1 >= len(lines) || strings.TrimSpace(lines[i+1]) != "----" {
			return nil, fmt.Errorf("line %d: %q is not followed by ----", i+1, l)
		}
		i += 2
		var want []string
		for ; i < len(lines) && lines[i] != ""; i++ {
			if strings.TrimSpace(lines[i]) == "----" {
				return nil, fmt.Errorf("line %d: ---- inside the expected output of line %d (a blank line missing?)", i+1, c.line)
			}
			want = append(want, lines[i])
		}
		c.want = strings.Join(want, "\n")
		cases = append(cases, c)
	}
	return cases, nil
}

func runScenarioFile(t *testing.T, file string) {
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cases, err := parseScenarios(string(text))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	r := &scenarioRun{c: New(1, 0), names: map[int64]string{}, ids: map[string]int64{}}
	var out strings.Builder
	for i, sc := range cases {
		got, err := r.do(sc.command, i == 0)
		if err != nil {
			t.Fatalf("%s:%d: %s: %v", file, sc.line, sc.command, err)
		}
		if err := r.c.CheckInvariants(); err != nil {
			t.Fatalf("%s:%d: %s: broken invariant: %v", file, sc.line, sc.command, err)
		}
		if *rewrite {
			fmt.Fprintf(&out, "%s\n----\n%s\n\n", sc.command, got)
			continue
		}
		if got != sc.want {
			t.Errorf("%s:%d: %s\ngot:\n%s\nwant:\n%s", file, sc.line, sc.command, got, sc.want)
		}
	}
	if *rewrite {
		if err := os.WriteFile(file, []byte(keepComments(string(text), out.String())), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// keepComments returns the rewritten cases with the file's leading comment block kept.
func keepComments(old, cases string) string {
	var head []string
	for _, l := range strings.Split(old, "\n") {
		if !strings.HasPrefix(l, "#") && strings.TrimSpace(l) != "" {
			break
		}
		head = append(head, l)
	}
	h := strings.TrimRight(strings.Join(head, "\n"), "\n")
	if h != "" {
		h += "\n\n"
	}
	return h + strings.TrimRight(cases, "\n") + "\n"
}

// scenarioRun is one file's core and its session names.
type scenarioRun struct {
	c     *Core
	names map[int64]string
	ids   map[string]int64
}

var opByName = func() map[string]Op {
	m := map[string]Op{}
	for op := OpCreate; op <= OpReconfig; op++ {
		m[op.String()] = op
	}
	return m
}()

// fields splits a command into words; a word may be a Go-quoted string ("a b").
func fields(s string) ([]string, error) {
	var out []string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		end := strings.IndexByte(s, ' ')
		if end < 0 {
			end = len(s)
		}
		if q := strings.IndexByte(s[:end], '"'); q >= 0 {
			prefix := s[:q]
			rest, err := strconv.QuotedPrefix(s[q:])
			if err != nil {
				return nil, fmt.Errorf("bad quoted word in %q: %w", s, err)
			}
			unq, _ := strconv.Unquote(rest)
			out = append(out, prefix+unq)
			s = s[q+len(rest):]
			continue
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out, nil
}

func (r *scenarioRun) do(command string, first bool) (string, error) {
	words, err := fields(command)
	if err != nil {
		return "", err
	}
	switch words[0] {
	case "new":
		if !first {
			return "", fmt.Errorf("new must be the file's first command")
		}
		return "", r.newCore(words[1:])
	case "session":
		if len(words) == 1 {
			return r.sessions(), nil
		}
		timeout, local := 10*time.Second, false
		for _, w := range words[2:] {
			if w == "local" {
				local = true
				continue
			}
			v, ok := strings.CutPrefix(w, "timeout=")
			if !ok {
				return "", fmt.Errorf("unknown argument %q", w)
			}
			if timeout, err = time.ParseDuration(v); err != nil {
				return "", err
			}
		}
		if _, dup := r.ids[words[1]]; dup {
			return "", fmt.Errorf("session %s exists already", words[1])
		}
		create := r.c.CreateSession
		if local {
			create = r.c.CreateLocalSession
		}
		id := create(timeout)
		r.ids[words[1]], r.names[id] = id, words[1]
		return fmt.Sprintf("zxid=%d", r.c.Zxid()), nil
	case "expire":
		local := len(words) == 3 && words[2] == "local"
		if local {
			words = words[:2]
		}
		id, err := r.session(words, 2)
		if err != nil {
			return "", err
		}
		end := r.c.CloseSession
		if local {
			end = r.c.CloseLocalSession
		}
		notes, ok := end(id)
		return r.render(fmt.Sprintf("closed=%t zxid=%d", ok, r.c.Zxid()), notes), nil
	case "dropwatches":
		id, err := r.session(words, 2)
		if err != nil {
			return "", err
		}
		r.c.DropWatches(id)
		return "ok", nil
	case "setwatches":
		return r.setWatches(words)
	case "auth":
		id, err := r.session(words, 3)
		if err != nil {
			return "", err
		}
		if ip, ok := strings.CutPrefix(words[2], "ip="); ok {
			r.c.ResetAuth(id, ip)
		} else if user, ok := strings.CutPrefix(words[2], "sasl="); ok {
			r.c.AddSASL(id, user)
		} else {
			return "", fmt.Errorf("auth wants ip= or sasl=, not %q", words[2])
		}
		ids, _ := r.c.Identities(id)
		return fmt.Sprint(ids), nil
	case "clock":
		if len(words) != 2 {
			return "", fmt.Errorf("clock wants one time in ms")
		}
		ms, err := strconv.ParseInt(words[1], 10, 64)
		if err != nil {
			return "", err
		}
		return r.clock(ms), nil
	case "sequence":
		if len(words) != 3 {
			return "", fmt.Errorf("sequence wants a path and a number")
		}
		n, err := strconv.ParseInt(words[2], 10, 32)
		if err != nil {
			return "", err
		}
		if err := r.c.SetSequence(words[1], int32(n)); err != nil {
			return "err=" + err.Error(), nil
		}
		return "ok", nil
	case "dump":
		var b strings.Builder
		r.c.Dump(&b)
		return r.named(strings.TrimRight(b.String(), "\n")), nil
	case "stat":
		if len(words) != 2 {
			return "", fmt.Errorf("stat wants a path")
		}
		st, ok := r.c.Stat(words[1])
		if !ok {
			return "no node", nil
		}
		return r.named(statString(st)), nil
	case "invariants":
		return "ok", nil // checked after every command
	}
	id, ok := r.ids[words[0]]
	if !ok {
		return "", fmt.Errorf("unknown command or session %q", words[0])
	}
	if len(words) < 2 {
		return "", fmt.Errorf("a request needs an operation")
	}
	req, err := parseRequest(words[1:])
	if err != nil {
		return "", err
	}
	res, notes := r.c.Apply(id, req)
	return r.render(r.resultString(res), notes), nil
}

func (r *scenarioRun) newCore(args []string) error {
	var (
		seed     uint64 = 1
		now      int64
		extended bool
		interval int64 = 60_000
		members  int
		set      Settings
	)
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		var err error
		switch k {
		case "seed":
			seed, err = strconv.ParseUint(v, 10, 64)
		case "now":
			now, err = strconv.ParseInt(v, 10, 64)
		case "extended":
			extended = true
		case "interval":
			interval, err = strconv.ParseInt(v, 10, 64)
		case "reconfig":
			set.Reconfig = true
		case "members":
			members, err = strconv.Atoi(v)
		case "super":
			set.SuperDigest = v
		case "skipACL":
			set.SkipACL = true
		default:
			return fmt.Errorf("unknown argument %q", a)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", a, err)
		}
	}
	r.c = New(seed, now)
	r.c.ConfigureReaper(extended, interval)
	r.c.Configure(set)
	ms := make([]Member, members)
	for i := range ms {
		ms[i] = Member{ID: int64(i + 1), Host: "127.0.0.1", QuorumPort: 2888 + i, ElectionPort: 3888 + i}
	}
	r.c.SetMembers(ms)
	return nil
}

// session returns the id of the session the command's second word names; n is the command's word count.
func (r *scenarioRun) session(words []string, n int) (int64, error) {
	if len(words) != n {
		return 0, fmt.Errorf("%s wants %d arguments", words[0], n-1)
	}
	id, ok := r.ids[words[1]]
	if !ok {
		return 0, fmt.Errorf("unknown session %q", words[1])
	}
	return id, nil
}

func (r *scenarioRun) sessions() string {
	var lines []string
	for _, id := range r.c.SessionIDs() {
		s, _ := r.c.Session(id)
		lines = append(lines, fmt.Sprintf("%s timeout=%s heard=%d ephemerals=%d %v", r.names[id], s.Timeout, s.LastHeard, s.Ephemerals, r.c.SessionEphemerals(id)))
	}
	if lines == nil {
		return "none"
	}
	return strings.Join(lines, "\n")
}

func (r *scenarioRun) setWatches(words []string) (string, error) {
	if len(words) < 3 {
		return "", fmt.Errorf("setwatches wants a session and zxid=")
	}
	id, ok := r.ids[words[1]]
	if !ok {
		return "", fmt.Errorf("unknown session %q", words[1])
	}
	var (
		zxid  int64
		lists = map[string][]string{}
		err   error
	)
	for _, w := range words[2:] {
		k, v, _ := strings.Cut(w, "=")
		switch k {
		case "zxid":
			zxid, err = strconv.ParseInt(v, 10, 64)
			if err != nil {
				return "", err
			}
		case "data", "exist", "child", "persistent", "recursive":
			lists[k] = strings.Split(v, ",")
		default:
			return "", fmt.Errorf("unknown argument %q", w)
		}
	}
	res, notes := r.c.Apply(id, &Request{Op: OpSetWatches, Watches: &WatchesRequest{RelativeZxid: zxid,
		Data: lists["data"], Exist: lists["exist"], Child: lists["child"], Persistent: lists["persistent"], Recursive: lists["recursive"]}})
	return r.render(r.resultString(res), notes), nil
}

// clock moves the clock to ms, running the container manager's passes due on the way, as Server.Advance does
// when no session expires.
func (r *scenarioRun) clock(ms int64) string {
	var lines []string
	for {
		step := ms
		if at, ok := r.c.NextReap(); ok && at < step {
			step = at
		}
		r.c.SetNow(step)
		if at, ok := r.c.NextReap(); ok && at <= step {
			deleted, notes := r.c.Reap()
			lines = append(lines, r.render(fmt.Sprintf("reap at %d: %v zxid=%d", step, deleted, r.c.Zxid()), notes))
		}
		r.c.PassedTo(step)
		if step == ms {
			break
		}
	}
	if lines == nil {
		return "nothing to reap"
	}
	return strings.Join(lines, "\n")
}

// parseRequest reads an operation and its arguments.
func parseRequest(words []string) (*Request, error) {
	op, ok := opByName[words[0]]
	if !ok {
		return nil, fmt.Errorf("unknown operation %q", words[0])
	}
	req := &Request{Op: op, ACL: zk.WorldACL(zk.PermAll), Version: -1}
	if op == OpMulti {
		var part []string
		for _, w := range append(words[1:], ";") {
			if w != ";" {
				part = append(part, w)
				continue
			}
			if len(part) == 0 {
				return nil, fmt.Errorf("empty operation in multi")
			}
			sub, err := parseRequest(part)
			if err != nil {
				return nil, err
			}
			req.Ops = append(req.Ops, *sub)
			part = nil
		}
		return req, nil
	}
	for i, w := range words[1:] {
		k, v, hasValue := strings.Cut(w, "=")
		if !hasValue {
			switch {
			case w == "watch":
				req.Watch = true
			case i == 0:
				req.Path = w
			default:
				return nil, fmt.Errorf("unknown argument %q", w)
			}
			continue
		}
		var err error
		switch k {
		case "data":
			req.Data = []byte(v)
		case "flags":
			req.Flags, err = parseInt32(v)
		case "version":
			req.Version, err = parseInt32(v)
		case "mode":
			req.Mode, err = parseInt32(v)
		case "ttl":
			req.TTL, err = strconv.ParseInt(v, 10, 64)
		case "acl":
			req.ACL, err = parseACL(v)
		case "joining", "leaving", "members", "from", "running":
			err = parseReconfig(req, k, v)
		default:
			return nil, fmt.Errorf("unknown argument %q", w)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w, err)
		}
	}
	return req, nil
}

// parseReconfig sets one of a reconfig's arguments: joining, leaving and members are its strings (absent
// unless given), from the configuration version it expects (-1 by default), running the ids of the servers
// that run.
func parseReconfig(req *Request, k, v string) error {
	if req.Reconfig == nil {
		req.Reconfig = &ReconfigRequest{FromConfig: -1}
	}
	rc := req.Reconfig
	switch k {
	case "joining":
		rc.Joining = []byte(v)
	case "leaving":
		rc.Leaving = []byte(v)
	case "members":
		rc.NewMembers = []byte(v)
	case "from":
		n, err := strconv.ParseInt(v, 0, 64)
		if err != nil {
			return err
		}
		rc.FromConfig = n
	case "running":
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				return err
			}
			rc.Running = append(rc.Running, n)
		}
	}
	return nil
}

func parseInt32(s string) (int32, error) {
	n, err := strconv.ParseInt(s, 10, 32)
	return int32(n), err
}

// parseACL reads scheme:id:perms[,…]; the id may hold colons (digest), perms are letters of "cdrwa".
func parseACL(s string) ([]zk.ACL, error) {
	if s == "" {
		return []zk.ACL{}, nil
	}
	var out []zk.ACL
	for _, e := range strings.Split(s, ",") {
		scheme, rest, ok1 := strings.Cut(e, ":")
		i := strings.LastIndexByte(rest, ':')
		if !ok1 || i < 0 {
			return nil, fmt.Errorf("%q is not scheme:id:perms", e)
		}
		id, letters := rest[:i], rest[i+1:]
		var perms int32
		for _, l := range letters {
			bit := strings.IndexRune("rwcda", l)
			if bit < 0 {
				return nil, fmt.Errorf("unknown permission %q in %q", l, e)
			}
			perms |= 1 << bit
		}
		out = append(out, zk.ACL{Perms: perms, Scheme: scheme, ID: id})
	}
	return out, nil
}

// resultString renders the fields of a result that are set.
func (r *scenarioRun) resultString(res Result) string {
	var parts []string
	if res.Err != nil {
		parts = append(parts, "err="+res.Err.Error())
	}
	if res.Path != "" {
		parts = append(parts, "path="+res.Path)
	}
	if res.Data != nil {
		parts = append(parts, "data="+strconv.Quote(string(res.Data)))
	}
	if res.Stat != (zk.Stat{}) {
		parts = append(parts, statString(res.Stat))
	}
	if res.Children != nil {
		parts = append(parts, fmt.Sprintf("children=%v", res.Children))
	}
	if res.ACL != nil {
		parts = append(parts, fmt.Sprintf("acl=%v", aclString(res.ACL)))
	}
	if res.Number != 0 {
		parts = append(parts, fmt.Sprintf("number=%d", res.Number))
	}
	if res.NoReply {
		parts = append(parts, "noReply")
	}
	parts = append(parts, fmt.Sprintf("zxid=%d", res.Zxid))
	line := strings.Join(parts, " ")
	for i, m := range res.Multi {
		line += fmt.Sprintf("\n  op %d:", i)
		if m.Error != nil {
			line += " err=" + m.Error.Error()
		}
		if m.String != "" {
			line += " path=" + m.String
		}
		if m.Stat != nil {
			line += " " + statString(*m.Stat)
		}
		if m.Error == nil && m.String == "" && m.Stat == nil {
			line += " ok"
		}
	}
	return r.named(line)
}

func statString(s zk.Stat) string {
	return fmt.Sprintf("stat{czxid=%d mzxid=%d pzxid=%d ctime=%d mtime=%d version=%d cversion=%d aversion=%d owner=%#x len=%d children=%d}",
		s.Czxid, s.Mzxid, s.Pzxid, s.Ctime, s.Mtime, s.Version, s.Cversion, s.Aversion, s.EphemeralOwner, s.DataLength, s.NumChildren)
}

func aclString(acl []zk.ACL) string {
	parts := make([]string, len(acl))
	for i, a := range acl {
		var letters []byte
		for bit, l := range "rwcda" {
			if a.Perms&(1<<bit) != 0 {
				letters = append(letters, byte(l))
			}
		}
		parts[i] = a.Scheme + ":" + a.ID + ":" + string(letters)
	}
	return strings.Join(parts, ",")
}

// render adds the notifications, one a line, to a result's line.
func (r *scenarioRun) render(line string, notes []Notification) string {
	lines := []string{line}
	for _, n := range notes {
		lines = append(lines, fmt.Sprintf("-> %s %s %s", r.name(n.Session), n.Event.Type, n.Event.Path))
	}
	return strings.Join(lines, "\n")
}

func (r *scenarioRun) name(id int64) string {
	if n, ok := r.names[id]; ok {
		return n
	}
	return fmt.Sprintf("%#x", id)
}

var hexID = regexp.MustCompile(`0x[0-9a-f]{9,}`)

// named replaces the session ids in s by the sessions' names.
func (r *scenarioRun) named(s string) string {
	return hexID.ReplaceAllStringFunc(s, func(h string) string {
		id, err := strconv.ParseUint(h[2:], 16, 64)
		if err != nil {
			return h
		}
		if n, ok := r.names[int64(id)]; ok {
			return n
		}
		return h
	})
}

// TestParseScenarioErrors: a malformed scenario file is an error that says where, not a silent pass.
func TestParseScenarioErrors(t *testing.T) {
	if _, err := parseScenarios("session a\nnot a separator\n"); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("missing ----: %v, want an error at line 1", err)
	}
	if _, err := parseScenarios("session a\n----\nzxid=1\ndump\n----\n"); err == nil || !strings.Contains(err.Error(), "line 5") {
		t.Errorf("missing blank line: %v, want an error at line 5", err)
	}
	r := &scenarioRun{c: New(1, 0), names: map[int64]string{}, ids: map[string]int64{}}
	for _, bad := range []string{"nobody get /", "session a timeout=x", "new seed=1", "clock", "auth"} {
		if _, err := r.do(bad, false); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if _, err := r.do("session a", false); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"a frobnicate /x", "a create /x acl=world", "a create /x acl=world:anyone:z", "a multi ;", "a get /x version=q"} {
		if _, err := r.do(bad, false); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if slices.Contains(r.c.Paths(), "/x") {
		t.Errorf("a refused command changed the tree: %v", r.c.Paths())
	}
}
