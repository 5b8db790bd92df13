package check

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// A trace file is text a person can follow:
//
//	zkmodel trace v1
//	variant: mutant-b-ignore-gone
//	clients: 3
//	...                              (the rest of the Config)
//	property: liveness
//	verdict: after the faults stopped ... client c2 was still blocked in Lock ...
//
//	decisions:
//	  apply c1
//	  ...
//	  # drain
//
//	history:
//	  step 1 ─ apply c1   (t=0s)            (t: the model's virtual clock)
//	      c1  model:apply   create /lock/… -> …
//	  ...
//
//	final state:
//	  ...                              (the model's Dump)
//
//	verdict: liveness: after the faults stopped ...
//	end of trace
//
// Only the header and the decisions before "# drain" are read back: replay takes those decisions, drains the
// same way, and must reproduce the history line for line. The last line, traceEnd, tells a complete file from
// one cut short, wherever it was cut: a file without it is refused as truncated.

const traceMagic = "zkmodel trace v1"

// traceEnd is a trace's last line (since v0.1.0; the committed corpus has it appended).
const traceEnd = "end of trace"

// render writes the outcome as a trace.
func (o *outcome) render(cfg Config) string {
	var b strings.Builder
	fmt.Fprintln(&b, traceMagic)
	fmt.Fprintf(&b, "variant: %s\n", cfg.Name)
	fmt.Fprintf(&b, "client-kind: %s\n", o.clientKind)
	fmt.Fprintf(&b, "clients: %d\n", cfg.Clients)
	fmt.Fprintf(&b, "rounds: %d\n", cfg.Rounds)
	fmt.Fprintf(&b, "steps: %d\n", cfg.Steps)
	fmt.Fprintf(&b, "faults: %s\n", cfg.Faults)
	fmt.Fprintf(&b, "max-faults: %d\n", cfg.MaxFault)
	fmt.Fprintf(&b, "deadline: %s\n", cfg.Deadline)
	if cfg.Primitive != Mutex { // only then: a mutex's traces are as they were before primitives
		fmt.Fprintf(&b, "primitive: %s\n", cfg.Primitive)
	}
	if cfg.Primitive == Semaphore {
		fmt.Fprintf(&b, "leases: %d\n", cfg.Leases)
	}
	if o.seed != 0 { // a run without a seed (the exhaustive search's) names its nodes as runs did before seeds
		fmt.Fprintf(&b, "run-seed: %d\n", o.seed)
	}
	if len(o.idOrder) > 0 { // only then (Config.NodeIDOrders): every other run's clients draw their own ids
		fmt.Fprintf(&b, "id-order: %s\n", idOrderText(o.idOrder))
	}
	prop, verdict := o.property, o.verdict
	if prop == "" {
		prop, verdict = "none", "every property held"
	}
	fmt.Fprintf(&b, "property: %s\n", prop)
	fmt.Fprintf(&b, "verdict: %s\n", verdict)
	b.WriteString("\ndecisions:\n")
	for _, d := range o.decisions {
		fmt.Fprintf(&b, "  %s\n", d)
	}
	b.WriteString("\nhistory:\n")
	b.WriteString(o.historyText())
	fmt.Fprintf(&b, "\nfinal state:\n")
	for _, line := range strings.Split(strings.TrimSpace(o.dump), "\n") {
		fmt.Fprintf(&b, "  %s\n", line)
	}
	fmt.Fprintf(&b, "\nverdict: %s: %s\n", prop, verdict)
	b.WriteString(traceEnd + "\n")
	return b.String()
}

// historyText renders the history, one line per event, grouped by step.
func (o *outcome) historyText() string {
	var b strings.Builder
	for _, e := range o.history {
		if e.kind == "decision" {
			fmt.Fprintf(&b, "  step %d ─ %s   (t=%s)\n", e.step, e.text, time.Duration(e.at)*time.Millisecond)
			continue
		}
		who := "  "
		if e.client > 0 {
			who = fmt.Sprintf("c%d", e.client)
		}
		fmt.Fprintf(&b, "      %-3s %-18s %s\n", who, e.kind, e.text)
	}
	return b.String()
}

// writeTrace writes the trace (and porcupine's visualisation for a safety or register violation) into
// cfg.TraceDir, named after the variant and property.
func writeTrace(cfg Config, o *outcome) (string, error) {
	if err := os.MkdirAll(cfg.TraceDir, 0o755); err != nil {
		return "", fmt.Errorf("creating the trace directory: %w", err)
	}
	path := filepath.Join(cfg.TraceDir, fmt.Sprintf("%s-%s.trace", cfg.Name, o.property))
	if err := os.WriteFile(path, []byte(o.render(cfg)), 0o644); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	if o.property == "safety" || o.property == "fenced-register" {
		html := strings.TrimSuffix(path, ".trace") + ".html"
		if err := o.visualize(html); err != nil {
			return path, fmt.Errorf("writing porcupine's visualisation %s: %w", html, err)
		}
	}
	return path, nil
}

// Trace is a parsed trace file.
type Trace struct {
	Path       string
	Config     Config
	Property   string   // the recorded property ("none" for a passing run)
	ClientKind string   // the clients the run used: "model" (Run, Replay) or "go-zookeeper" (RunZK, ReplayZK)
	Verdict    string   // the recorded verdict sentence
	Decisions  []string // the exploration's decisions, in order
	RunSeed    uint64   // the run's seed ("run-seed:"; 0 when the trace has none, as before runs had seeds)
	// IDOrder is the order of the clients' node ids the run drew ("id-order:", Config.NodeIDOrders): client
	// i+1 drew the ids of client IDOrder[i]. Nil when the trace has none: each client drew its own.
	IDOrder []int
	History string // the recorded history section
}

// ParseTrace reads a trace file. A malformed file gives an error naming the file and line.
func ParseTrace(path string) (*Trace, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("check: reading trace: %w", err)
	}
	return parseTrace(path, string(data))
}

// parseTrace reads a trace file's text.
func parseTrace(path, data string) (*Trace, error) {
	tr := &Trace{Path: path, ClientKind: modelKind}
	bad := func(line int, format string, args ...any) error {
		return fmt.Errorf("check: %s:%d: %s", path, line, fmt.Sprintf(format, args...))
	}
	if err := truncated(path, data); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(strings.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	section, n := "header", 0
	var history strings.Builder
	seen := map[string]bool{}
	drained := false
	for sc.Scan() {
		n++
		line := sc.Text()
		if n == 1 {
			if line != traceMagic {
				return nil, bad(1, "not a zkmodel trace: the first line must be %q", traceMagic)
			}
			continue
		}
		switch {
		case line == "decisions:" || line == "history:" || line == "final state:":
			section = strings.TrimSuffix(line, ":")
			seen[line] = true
			continue
		case strings.HasPrefix(line, "verdict: ") && section != "header", line == traceEnd:
			section = "end"
			continue
		}
		switch section {
		case "header":
			if line == "" {
				continue
			}
			key, val, ok := strings.Cut(line, ": ")
			if !ok {
				return nil, bad(n, "want \"key: value\" in the header, got %q", line)
			}
			if err := tr.setHeader(key, val); err != nil {
				return nil, bad(n, "%v", err)
			}
			seen[key] = true
		case "decisions", "after-drain":
			d := strings.TrimSpace(line)
			if d == "" {
				continue
			}
			if d == "# drain" {
				if drained {
					return nil, bad(n, "a second \"# drain\" line")
				}
				drained, section = true, "after-drain"
				continue
			}
			if !strings.HasPrefix(line, "  ") || !(validDecision(d) || d == nothingChosen && section == "decisions") {
				return nil, bad(n, "malformed decision %q (want e.g. \"apply c1\", \"cancel c2\", \"advance 14s\", \"stop s0\")", line)
			}
			if section == "decisions" {
				tr.Decisions = append(tr.Decisions, d) // the drain's own decisions are not replayed: it drains the same way
			}
		case "history":
			history.WriteString(line + "\n")
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("check: reading %s: %w", path, err)
	}
	for _, key := range []string{"variant", "clients", "property"} {
		if !seen[key] {
			return nil, bad(n, "the header has no %q line", key)
		}
	}
	switch {
	case !seen["decisions:"]:
		return nil, bad(n, "the trace ends without its \"decisions:\" section: the file is truncated, write it again (make check, or your test with -check.traces)")
	case !drained:
		return nil, bad(n, "the decisions end without the \"# drain\" line: the file is truncated")
	case !seen["history:"]:
		return nil, bad(n, "the trace ends without its \"history:\" section: the file is truncated")
	}
	if tr.IDOrder != nil && len(tr.IDOrder) != tr.Config.Clients {
		return nil, bad(n, "id-order: %s orders %d clients' ids, and the trace has %d clients", idOrderText(tr.IDOrder), len(tr.IDOrder), tr.Config.Clients)
	}
	tr.History = history.String()
	return tr, nil
}

func validDecision(d string) bool {
	f := strings.Fields(d)
	if len(f) != 2 {
		return false
	}
	switch f[0] {
	case "advance":
		_, err := time.ParseDuration(f[1])
		return err == nil
	case "apply", "deliver", "reconnect", "lose-request", "lose-reply", "disconnect", "expire", "cancel", "cs-read", "cs-write", "cs-hold":
		id, err := strconv.Atoi(strings.TrimPrefix(f[1], "c"))
		return strings.HasPrefix(f[1], "c") && err == nil && id > 0
	case "stop", "start": // a server of the emulated ensemble, numbered from 0
		id, err := strconv.Atoi(strings.TrimPrefix(f[1], "s"))
		return strings.HasPrefix(f[1], "s") && err == nil && id >= 0
	}
	return false
}

func (tr *Trace) setHeader(key, val string) error {
	c := &tr.Config
	atoi := func() (int, error) {
		v, err := strconv.Atoi(val)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("%s: want a whole number, got %q", key, val)
		}
		return v, nil
	}
	var err error
	switch key {
	case "variant":
		if err := validName(val); err != nil {
			return err
		}
		c.Name = val
	case "clients":
		c.Clients, err = atoi()
	case "rounds":
		c.Rounds, err = atoi()
	case "steps":
		c.Steps, err = atoi()
	case "max-faults":
		c.MaxFault, err = atoi()
	case "faults":
		c.Faults, err = ParseFaults(val)
	case "deadline":
		c.Deadline, err = time.ParseDuration(val)
		if err != nil {
			err = fmt.Errorf("deadline: %w", err)
		}
	case "primitive":
		c.Primitive, err = ParsePrimitive(val)
	case "leases":
		c.Leases, err = atoi()
	case "run-seed":
		tr.RunSeed, err = strconv.ParseUint(val, 10, 64)
		if err != nil {
			err = fmt.Errorf("run-seed: want the run's seed, a whole number, got %q", val)
		}
	case "id-order":
		tr.IDOrder, err = parseIDOrder(val)
		if err == nil {
			c.idStreams = idStreamsOf(tr.IDOrder)
		}
	case "property":
		tr.Property = val
	case "client-kind":
		if val != modelKind && val != wireKind {
			return fmt.Errorf("client-kind: want %q or %q, got %q", modelKind, wireKind, val)
		}
		tr.ClientKind = val
	case "verdict":
		tr.Verdict = val
	default:
		return fmt.Errorf("unknown header key %q", key)
	}
	return err
}

// ErrDiverged is matched (errors.Is) by Replay's error when a trace no longer replays; the error is a
// *Divergence, which says what the trace's schedule does now.
var ErrDiverged = errors.New("check: the replay diverged from the trace")

// Replay re-runs a trace's decisions with f and returns the replayed trace's text. When the history or the
// verdict come out differently, or a decision cannot be taken, it fails with a *Divergence (matching
// ErrDiverged) that names the first difference and judges the run the schedule gives now — "this schedule
// now passes" (matching ErrNowPasses), or fails differently — and the text is that run's.
func Replay(t *testing.T, f Factory, tr *Trace) (string, error) {
	t.Helper()
	return replayWith(t, modelClients(f), tr)
}

// replayWith is Replay and ReplayZK.
func replayWith(t *testing.T, kind clients, tr *Trace) (string, error) {
	t.Helper()
	if tr.ClientKind != kind.name {
		return "", fmt.Errorf("check: %s ran %s clients; replay it with %s", tr.Path, tr.ClientKind, replayerOf(tr.ClientKind))
	}
	cfg := tr.Config
	cfg.TraceDir = "unused"
	cfg = cfg.withDefaults()
	var out *outcome
	synctest.Test(t, func(t *testing.T) {
		out = executeWith(kind, cfg, &replayDecider{decisions: tr.Decisions, seed: tr.RunSeed})
	})
	prop := out.property
	if prop == "" {
		prop = "none"
	}
	d := &Divergence{Path: tr.Path, RecordedProperty: tr.Property, Property: out.property, Verdict: out.verdict,
		Followed: len(tr.Decisions), Decisions: len(tr.Decisions)}
	if i, w, g, differ := firstDifferentLine(tr.History, out.historyText()); out.property == "replay" {
		// A decision cannot be taken: judge the run that follows the decisions before it, then drains.
		d.Where = out.verdict
		follow := &followDecider{replayDecider: replayDecider{decisions: tr.Decisions, seed: tr.RunSeed}}
		synctest.Test(t, func(t *testing.T) {
			out = executeWith(kind, cfg, follow)
		})
		d.Property, d.Verdict, d.Followed = out.property, out.verdict, follow.followed
	} else if differ {
		d.Where = fmt.Sprintf("history line %d (%s): recorded %q, replayed %q", i+1, stepOf(strings.Split(tr.History, "\n"), i), w, g)
	} else if prop != tr.Property {
		d.Where = fmt.Sprintf("its verdict, with the same history: recorded %q, replayed %q", tr.Property, prop)
	} else {
		return out.render(cfg), nil
	}
	return out.render(cfg), d
}

// firstDifferentLine returns the index of the first line where a and b differ, and those lines ("" past the
// end of either).
func firstDifferentLine(a, b string) (i int, x, y string, differ bool) {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i = 0; i < max(len(al), len(bl)); i++ {
		x, y = "", ""
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return i, x, y, true
		}
	}
	return 0, "", "", false
}

// stepOf names the step a history line belongs to.
func stepOf(lines []string, i int) string {
	for ; i >= 0; i-- {
		if i < len(lines) && strings.HasPrefix(lines[i], "  step ") {
			return strings.TrimSpace(lines[i])
		}
	}
	return "before the first step"
}

// truncated refuses a trace that does not end with its last line, traceEnd: a file cut short, wherever it was
// cut. It says where the file ends, so that a cut is not mistaken for a malformed line or, replayed, for a
// divergence.
func truncated(path, data string) error {
	if data == "" {
		return fmt.Errorf("check: %s: the file is empty, not a trace: a trace starts with %q and ends with %q (was it cut while being written? write it again)", path, traceMagic, traceEnd)
	}
	if !strings.HasPrefix(data, traceMagic+"\n") && !strings.HasPrefix(traceMagic, data) {
		return fmt.Errorf("check: %s:1: not a zkmodel trace: the first line must be %q", path, traceMagic)
	}
	if strings.HasSuffix(data, "\n"+traceEnd+"\n") {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(data, "\n"), "\n")
	last := lines[len(lines)-1]
	if strings.HasPrefix(last, "verdict: ") && strings.Contains(data, "\nfinal state:\n") {
		return fmt.Errorf("check: %s:%d: the trace ends with its closing verdict but without the line %q after it: it is truncated, or was written before zkmodel v0.1.0 added that line (if the file is otherwise complete, append the line)", path, len(lines), traceEnd)
	}
	section := "header"
	for _, s := range []string{"decisions", "history", "final state"} {
		if strings.Contains(data, "\n"+s+":\n") {
			section = s + " section"
		}
	}
	return fmt.Errorf("check: %s:%d: the trace is truncated: it ends inside its %s, without its last line %q; write it again (make check, or your test with -check.traces)", path, len(lines), section, traceEnd)
}

// idOrderText writes an order of the clients' ids as a trace's "id-order:" does: "2 1 3".
func idOrderText(order []int) string {
	parts := make([]string, len(order))
	for i, s := range order {
		parts[i] = strconv.Itoa(s)
	}
	return strings.Join(parts, " ")
}

// parseIDOrder reads a trace's "id-order:", a permutation of 1…k (k at most maxOrderedClients).
func parseIDOrder(val string) ([]int, error) {
	fields := strings.Fields(val)
	if len(fields) == 0 || len(fields) > maxOrderedClients {
		return nil, fmt.Errorf("id-order: want an order of the clients' numbers 1…k (k from 1 to %d), e.g. \"2 1\", got %q", maxOrderedClients, val)
	}
	order := make([]int, len(fields))
	seen := make([]bool, len(fields)+1)
	for i, f := range fields {
		s, err := strconv.Atoi(f)
		if err != nil || s < 1 || s > len(fields) || seen[s] {
			return nil, fmt.Errorf("id-order: want each of the clients' numbers 1…%d once, e.g. \"2 1\", got %q", len(fields), val)
		}
		seen[s], order[i] = true, s
	}
	return order, nil
}
