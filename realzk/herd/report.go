package herd

// The herd's report is hand-written SVG, not a plotting library's: the plots are
// six small line charts on a log scale, which take about 150 lines here, while
// gonum/plot (the well-kept Go choice) would bring gonum, a font stack and image
// encoders into the module for them and still need the dodging of coinciding
// series and the "no data" notes written by hand.

import (
	"fmt"
	"html"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// herdStyle is how a variant is drawn: every series has its own colour,
// marker and dash pattern, and is shifted sideways a little, so that none
// hides another where their values coincide.
type herdStyle struct {
	color, dash, marker string
}

var herdStyles = map[Variant]herdStyle{
	Recipe:      {"#1f77b4", "", "circle"},
	WatchParent: {"#d62728", "7,3", "square"},
	ZKLock:      {"#2ca02c", "2,3", "triangle"},
	Curator:     {"#9467bd", "9,3,2,3", "diamond"},
	Kazoo:       {"#ff7f0e", "5,2", "square"},
	None:        {"#555555", "1,4", "cross"},
}

// primitiveLabel is the name of primitive p's implementation v in tables and
// legends.
func primitiveLabel(p Primitive, v Variant) string {
	names := map[Primitive]map[Variant]string{
		RWLock:    {Recipe: "recipe NewRWLock", Curator: "Curator InterProcessReadWriteLock", Kazoo: "kazoo ReadLock/WriteLock"},
		Semaphore: {Recipe: "recipe NewSemaphore", Curator: "Curator InterProcessSemaphoreV2", Kazoo: "kazoo Semaphore"},
		Election:  {Recipe: "recipe NewElection", Curator: "Curator LeaderLatch", Kazoo: "kazoo Election"},
	}
	if name, ok := names[p][v]; ok {
		return name
	}
	return herdLabel(v)
}

// primitiveTitle names a primitive in captions and plot titles.
func primitiveTitle(p Primitive) string {
	return map[Primitive]string{Mutex: "The mutex", RWLock: "The read-write lock", Semaphore: "The semaphore",
		Election: "Leader election"}[p]
}

// herdLabel is a variant's name in tables and legends.
func herdLabel(v Variant) string {
	switch v {
	case None:
		return "no contention"
	case Curator:
		return "Curator InterProcessMutex"
	case WatchParent:
		return "watch-parent"
	}
	return string(v)
}

// formatFigure prints v with a precision that suits its size.
func formatFigure(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v):
		return "–"
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// formatSpread prints a spread as "median (min–max)", or "no data".
func formatSpread(s Spread) string {
	if s.N == 0 {
		return "no data"
	}
	if s.N == 1 || s.Min == s.Max {
		return formatFigure(s.Median)
	}
	return fmt.Sprintf("%s (%s–%s)", formatFigure(s.Median), formatFigure(s.Min), formatFigure(s.Max))
}

// herdTable is a table of the report: a caption, a header and rows.
type herdTable struct {
	caption string
	header  []string
	rows    [][]string
}

// herdTables builds the report's tables from res: the mutex's, then one per
// primitive beyond it.
func herdTables(res Results) []herdTable {
	var tables []herdTable
	if len(res.Variants) > 0 {
		tables = mutexTables(res)
	}
	for _, p := range res.Primitives {
		tables = append(tables, primitiveTable(res, p))
	}
	return tables
}

// mutexTables are the mutex's tables: the locks, the bystanders, and the
// recipe's throughput against the others'.
func mutexTables(res Results) []herdTable {
	locks := &herdTable{
		caption: "The locks: median over rounds (min–max). Requests are counted on the clients' connections (Go locks; " +
			"pings excepted); server packets are the servers' zk_packets_received less the bystanders' requests (pings " +
			"included: the only count there is for Curator). Notifications are watch events: client-side for the Go locks, " +
			"server-side (zk_*_watch_count sums, less the bystanders') for all.",
		header: []string{"N", "lock", "acquisitions/s", "handoff p50 ms", "handoff p99 ms", "requests/acq (client)",
			"server packets/acq", "notifications/release (client)", "notifications/release (server)"},
	}
	by := &herdTable{
		caption: fmt.Sprintf("Bystanders: %d sessions, %s operations/s in all (get, set, exists with a watch on their own nodes), "+
			"open-loop; latency from when each operation was due. Server figures summed over the %d servers; outstanding "+
			"requests and watches are the largest values sampled twice a second.", res.Bystanders, formatFigure(res.BystanderRate), res.Servers),
		header: []string{"N", "while", "bystander p50 ms", "bystander p99 ms", "bystander max ms", "bystander errors",
			"server packets sent/release", "max outstanding requests", "max watches"},
	}
	for _, n := range res.Clients {
		for _, v := range res.Variants {
			s := func(m Metric) string { return formatSpread(res.Spread(v, n, m)) }
			locks.rows = append(locks.rows, []string{strconv.Itoa(n), herdLabel(v), s(MetricAcquisitionsPerSecond),
				s(MetricHandoffP50), s(MetricHandoffP99), s(MetricRequestsPerAcquisition), s(MetricServerPacketsPerAcquisition),
				s(MetricNotificationsPerRelease), s(MetricServerNotificationsPerRelease)})
		}
		for _, v := range append(slices.Clone(res.Variants), None) {
			s := func(m Metric) string { return formatSpread(res.Spread(v, n, m)) }
			sent := s(MetricServerPacketsSentPerRelease)
			if v == None {
				sent = "–"
			}
			by.rows = append(by.rows, []string{strconv.Itoa(n), herdLabel(v), s(MetricBystanderP50), s(MetricBystanderP99),
				s(MetricBystanderMax), s(MetricBystanderErrors), sent, s(MetricMaxOutstanding), s(MetricMaxWatches)})
		}
	}
	tables := []herdTable{*locks, *by}
	if ratios := herdRatios(res); len(ratios.rows) > 0 {
		tables = append(tables, ratios)
	}
	return tables
}

// primitiveCaption says what was run of primitive p and how to read it.
func primitiveCaption(res Results, p Primitive) string {
	switch p {
	case RWLock:
		return fmt.Sprintf(rwlockCaption, res.WriterEvery)
	case Semaphore:
		return fmt.Sprintf(semaphoreCaption, res.Leases)
	}
	return electionCaption
}

// The captions' texts.
const (
	rwlockCaption = "Contender i takes the write lock when i %% %[1]d == 0, the read lock otherwise. A release is any unlock. Releases " +
		"equal acquisitions, and a waiter needs one wake-up to acquire, so a lock without a herd stays at or below about 1 " +
		"wake-up per release however large N: a writer's release that wakes the k readers queued directly behind it counts k " +
		"wake-ups, and is correct sharing — those k readers then acquire together and make k releases that wake nobody but " +
		"the next writer. A herd — waiters woken that cannot acquire, and list and wait again — shows as more than 1 per " +
		"release, growing with N. Split by what was released: per write release (the readers directly behind it, or the one " +
		"writer; more means readers behind later writers were woken too), per read release (at most the one writer queued " +
		"directly behind it)."
	semaphoreCaption = "%[1]d leases. An acquisition is a lease; a release returns it. In InterProcessSemaphoreV2's " +
		"algorithm (the recipe's and Curator's; kazoo's is alike) acquirers queue in an admission mutex, each watching its " +
		"predecessor, and only the mutex's holder lists the leases with a watch, so a returned lease wakes at most that one " +
		"waiter. With zero hold time the leases are seldom all taken: the waiters queue in the admission mutex, whose every " +
		"pass wakes the next (on the admission mutex, per acquisition), and the watch that the granting listing leaves is " +
		"fired by the next change of the leases, often the holder's own release (on the leases, per release). Without a herd " +
		"both stay near 1 however large N; waiters that all watched the leases would make the leases' figure grow with N " +
		"(up to N − %[1]d per change)."
	electionCaption = "An acquisition is a leadership: the leader resigns at once (the recipe's Resign; Curator: closes its " +
		"LeaderLatch and starts a new one; kazoo: its Election's run returns) and campaigns again. Every candidate watches " +
		"its predecessor, so a resignation wakes one candidate: 1 per release; a herd (every candidate watching the " +
		"leader) would be N − 1."
)

// primitiveTable is the table of primitive p: each implementation at each N.
func primitiveTable(res Results, p Primitive) herdTable {
	t := herdTable{
		caption: primitiveTitle(p) + ": median over rounds (min–max); N sessions contend with zero hold time, every one through " +
			"a proxy that counts, on the wire, its requests (every frame but connect requests, pings and auth) and the watch " +
			"notifications it receives (replies with xid -1): the wake-ups. " + primitiveCaption(res, p) +
			" The recipe's Go clients also count for themselves (the client columns): the two counts agree but for what is in " +
			"flight at a cell's edges.",
		header: []string{"N", "implementation", "acquisitions/s", "requests/acquisition", "wake-ups/release"},
	}
	metrics := []Metric{MetricAcquisitionsPerSecond, MetricWireRequestsPerAcquisition, MetricWakeupsPerRelease}
	switch p {
	case Election:
		t.header[2] = "leaderships/s"
		t.header[3] = "requests/leadership"
	case RWLock:
		t.header = append(t.header, "wake-ups/write release", "wake-ups/read release")
		metrics = append(metrics, MetricWakeupsPerWriteRelease, MetricWakeupsPerReadRelease)
	case Semaphore:
		t.header = append(t.header, "on the leases/release", "on the admission mutex/acquisition")
		metrics = append(metrics, MetricLeaseWakeupsPerRelease, MetricMutexWakeupsPerAcquisition)
	}
	t.header = append(t.header, "requests/acquisition (client)", "wake-ups/release (client)", "bystander p99 ms")
	metrics = append(metrics, MetricRequestsPerAcquisition, MetricNotificationsPerRelease, MetricBystanderP99)
	for _, n := range res.PrimitiveClients {
		for _, v := range res.Implementations {
			row := []string{strconv.Itoa(n), primitiveLabel(p, v)}
			for _, m := range metrics {
				row = append(row, formatSpread(res.PrimitiveSpread(p, v, n, m)))
			}
			t.rows = append(t.rows, row)
		}
	}
	return t
}

// herdRatios compares the recipe's acquisitions per second with the other
// locks', round by round (the cells of a round ran back to back).
func herdRatios(res Results) herdTable {
	t := herdTable{caption: "The recipe's acquisitions/s divided by the other lock's, per round (the cells of a round ran back to back): median (min–max)."}
	var others []Variant
	for _, v := range res.Variants {
		if v != Recipe {
			others = append(others, v)
		}
	}
	if !slices.Contains(res.Variants, Recipe) || len(others) == 0 {
		return t
	}
	t.header = []string{"N"}
	for _, v := range others {
		t.header = append(t.header, "recipe ÷ "+herdLabel(v))
	}
	for _, n := range res.Clients {
		row := []string{strconv.Itoa(n)}
		for _, v := range others {
			var ratios []float64
			for r := 1; r <= res.Rounds; r++ {
				a, b := res.cell(Recipe, n, r), res.cell(v, n, r)
				ratios = append(ratios, a.Value(MetricAcquisitionsPerSecond)/b.Value(MetricAcquisitionsPerSecond))
			}
			row = append(row, formatSpread(SpreadOf(ratios)))
		}
		t.rows = append(t.rows, row)
	}
	return t
}

// cell returns the cell of variant v with n clients in round r (one with
// Err set when there is none).
func (r Results) cell(v Variant, n, round int) Cell {
	for _, c := range r.Cells {
		if c.primitive() == Mutex && c.Variant == v && c.Clients == n && c.Round == round {
			return c
		}
	}
	return Cell{Variant: v, Clients: n, Round: round, Err: "not run"}
}

// Claim is docs/herd.md's sentence for the largest N: the bystanders' p99
// with the parent-watching lock, with the recipe, and with no contention.
func Claim(res Results) string {
	if len(res.Clients) == 0 || len(res.Variants) == 0 {
		return ""
	}
	n := slices.Max(res.Clients)
	p99 := func(v Variant) string {
		s := res.Spread(v, n, MetricBystanderP99)
		if s.N == 0 {
			return "(no data)"
		}
		return formatFigure(s.Median) + " ms"
	}
	return fmt.Sprintf("with %d clients watching the parent, a bystander's p99 is %s; with the recipe, %s; with no contention, %s",
		n, p99(WatchParent), p99(Recipe), p99(None))
}

// plural returns "1 round", "3 rounds".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// herdDescription says how the results were measured.
func herdDescription(res Results) string {
	d := fmt.Sprintf("ZooKeeper 3.8, %d servers on loopback; N sessions contend with zero hold time; %v per cell, %s, "+
		"the locks and the no-contention baseline alternating (each round rotates the order); %d bystander sessions at %s operations/s.",
		res.Servers, res.Duration, plural(res.Rounds, "round"), res.Bystanders, formatFigure(res.BystanderRate))
	if len(res.Primitives) > 0 {
		d += fmt.Sprintf(" Beyond the mutex: %s at N = %s, each in %s, %v per cell, the implementations' order rotating from round to round.",
			joinStrings(res.Primitives, ", "), joinInts(res.PrimitiveClients), joinStrings(res.Implementations, ", "), res.PrimitiveDuration)
	}
	return d
}

// joinStrings joins names with sep.
func joinStrings[T ~string](names []T, sep string) string {
	s := make([]string, len(names))
	for i, n := range names {
		s[i] = string(n)
	}
	return strings.Join(s, sep)
}

// joinInts joins numbers with commas.
func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// FormatMarkdown renders res as markdown: the description, the docs/herd.md
// claim, the tables, and the cells without data.
func FormatMarkdown(res Results) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", herdDescription(res))
	if claim := Claim(res); claim != "" {
		fmt.Fprintf(&b, "\n%s.\n", claim)
	}
	for _, t := range herdTables(res) {
		fmt.Fprintf(&b, "\n%s\n\n| %s |\n|%s\n", t.caption, strings.Join(t.header, " | "), strings.Repeat(" --- |", len(t.header)))
		for _, row := range t.rows {
			fmt.Fprintf(&b, "| %s |\n", strings.Join(row, " | "))
		}
	}
	if notes := herdNotes(res); len(notes) > 0 {
		b.WriteString("\nCells without data:\n\n")
		for _, n := range notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	return b.String()
}

// herdNotes lists the cells that have no data, and why.
func herdNotes(res Results) []string {
	var notes []string
	for _, c := range res.Cells {
		if c.Err != "" {
			notes = append(notes, fmt.Sprintf("%s, N=%d, round %d: %s", primitiveLabel(c.primitive(), c.Variant), c.Clients, c.Round, c.Err))
		}
	}
	return notes
}

// herdPanel is one plot of the report: a figure of a primitive against N,
// one series per variant, with min–max bars.
type herdPanel struct {
	name          string // file name stem of the standalone SVG
	title, ylabel string
	metric        Metric
	variants      []Variant
	log           bool // logarithmic y axis
	primitive     Primitive
	clients       []int // the values of N
}

// label is variant v's name in the panel's legend.
func (p herdPanel) label(v Variant) string { return primitiveLabel(p.primitive, v) }

// herdPanels are the report's plots: the mutex's, then two for each
// primitive beyond it.
func herdPanels(res Results) []herdPanel {
	var panels []herdPanel
	if len(res.Variants) > 0 {
		all := append(slices.Clone(res.Variants), None)
		mutex := func(name, title, ylabel string, m Metric, variants []Variant) herdPanel {
			return herdPanel{name, title, ylabel, m, variants, true, Mutex, res.Clients}
		}
		panels = append(panels,
			mutex("notifications", "Watch notifications per release (server-side)", "notifications / release", MetricServerNotificationsPerRelease, res.Variants),
			mutex("bystander-p99", "Bystander p99 latency", "p99 latency (ms)", MetricBystanderP99, all),
			mutex("acquisitions", "Acquisitions per second (min–max bars)", "acquisitions / s", MetricAcquisitionsPerSecond, res.Variants),
			mutex("handoff-p50", "Handoff latency p50 (release → next acquisition)", "p50 (ms)", MetricHandoffP50, res.Variants),
			mutex("handoff-p99", "Handoff latency p99 (release → next acquisition)", "p99 (ms)", MetricHandoffP99, res.Variants),
			mutex("server-packets", "Server packets received per acquisition", "packets / acquisition", MetricServerPacketsPerAcquisition, res.Variants))
	}
	for _, p := range res.Primitives {
		title := primitiveTitle(p)
		panels = append(panels,
			herdPanel{string(p) + "-wakeups", title + ": wake-ups per release (on the wire)", "notifications / release",
				MetricWakeupsPerRelease, res.Implementations, true, p, res.PrimitiveClients},
			herdPanel{string(p) + "-requests", title + ": requests per acquisition (on the wire)", "requests / acquisition",
				MetricWireRequestsPerAcquisition, res.Implementations, true, p, res.PrimitiveClients})
	}
	return panels
}

// Plot is one plot of the report as a standalone SVG document.
type Plot struct {
	// Name is a file name stem, e.g. "bystander-p99".
	Name string
	// SVG is the plot.
	SVG []byte
}

// Plots returns the report's plots as standalone SVG documents, in the
// report's order.
func Plots(res Results) []Plot {
	var plots []Plot
	for _, p := range herdPanels(res) {
		plots = append(plots, Plot{Name: p.name, SVG: []byte(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + p.svg(res) + "\n")})
	}
	return plots
}

// HTML renders res as a self-contained HTML page: the description, the
// docs/herd.md claim, the plots as inline SVG, the tables, and the cells without
// data.
func HTML(res Results, title string) []byte {
	var b strings.Builder
	e := html.EscapeString
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s</title>\n", e(title))
	b.WriteString("<style>body{font-family:sans-serif;margin:2em;max-width:1300px}figure{display:inline-block;margin:0 1em 1em 0;vertical-align:top}" +
		"table{border-collapse:collapse;margin-bottom:1.5em}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}" +
		"th{background:#f3f3f3}caption{text-align:left;padding:4px 0;max-width:1100px}.note{color:#a00}</style></head><body>\n")
	fmt.Fprintf(&b, "<h1>%s</h1>\n<p>%s</p>\n", e(title), e(herdDescription(res)))
	if claim := Claim(res); claim != "" {
		fmt.Fprintf(&b, "<p><b>%s.</b></p>\n", e(claim))
	}
	for _, p := range herdPanels(res) {
		fmt.Fprintf(&b, "<figure>%s</figure>\n", p.svg(res))
	}
	for _, t := range herdTables(res) {
		fmt.Fprintf(&b, "<table><caption>%s</caption>\n<tr>", e(t.caption))
		for _, h := range t.header {
			fmt.Fprintf(&b, "<th>%s</th>", e(h))
		}
		b.WriteString("</tr>\n")
		for _, row := range t.rows {
			b.WriteString("<tr>")
			for _, c := range row {
				fmt.Fprintf(&b, "<td>%s</td>", e(c))
			}
			b.WriteString("</tr>\n")
		}
		b.WriteString("</table>\n")
	}
	if notes := herdNotes(res); len(notes) > 0 {
		b.WriteString("<h2>Cells without data</h2>\n<ul>\n")
		for _, n := range notes {
			fmt.Fprintf(&b, "<li class=\"note\">%s</li>\n", e(n))
		}
		b.WriteString("</ul>\n")
	}
	b.WriteString("</body></html>\n")
	return []byte(b.String())
}

// Plot geometry.
const (
	plotW, plotH       = 680, 380
	plotLeft, plotTop  = 70, 40
	plotRight, plotBot = 290, 60 // room for the legend, and for the x axis and notes
)

// svg draws the panel.
func (p herdPanel) svg(res Results) string {
	innerW, innerH := float64(plotW-plotLeft-plotRight), float64(plotH-plotTop-plotBot)
	type point struct {
		n int
		s Spread
	}
	pts := map[Variant][]point{}
	var missing []string
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range p.variants {
		var gaps []string
		for _, n := range p.clients {
			s := res.PrimitiveSpread(p.primitive, v, n, p.metric)
			if s.N == 0 || p.log && s.Min <= 0 {
				gaps = append(gaps, strconv.Itoa(n))
				continue
			}
			pts[v] = append(pts[v], point{n, s})
			lo, hi = math.Min(lo, s.Min), math.Max(hi, s.Max)
		}
		if len(gaps) > 0 {
			missing = append(missing, fmt.Sprintf("%s at N=%s", p.label(v), strings.Join(gaps, ",")))
		}
	}
	var b strings.Builder
	e := html.EscapeString
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`, plotW, plotH, plotW, plotH)
	fmt.Fprintf(&b, `<title>%s</title><rect width="100%%" height="100%%" fill="white"/>`, e(p.title))
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>`, plotLeft, e(p.title))
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="#999"/>`, plotLeft, plotTop, innerW, innerH)
	if math.IsInf(lo, 1) {
		fmt.Fprintf(&b, `<text class="nodata" x="%.0f" y="%.0f" text-anchor="middle" fill="#a00">no data</text></svg>`, plotLeft+innerW/2, plotTop+innerH/2)
		return b.String()
	}
	// The y axis spans the data (log: from the decade step below the
	// smallest value to the one above the largest; linear: a margin around
	// them), not from zero.
	var yOf func(float64) float64
	var ticks []float64
	if p.log {
		ylo, yhi := math.Log10(lo)-0.05, math.Log10(hi)+0.05
		if yhi-ylo < 0.3 {
			mid := (ylo + yhi) / 2
			ylo, yhi = mid-0.15, mid+0.15
		}
		yOf = func(v float64) float64 { return plotTop + innerH*(1-(math.Log10(v)-ylo)/(yhi-ylo)) }
		ticks = logTicks(math.Pow(10, ylo), math.Pow(10, yhi))
	} else {
		pad := math.Max((hi-lo)*0.1, math.Abs(hi)*0.05+1e-9)
		ylo, yhi := lo-pad, hi+pad
		yOf = func(v float64) float64 { return plotTop + innerH*(1-(v-ylo)/(yhi-ylo)) }
		ticks = linearTicks(ylo, yhi)
	}
	for _, t := range ticks {
		y := yOf(t)
		fmt.Fprintf(&b, `<line x1="%d" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end" dy="4">%s</text>`,
			plotLeft, plotLeft+innerW, y, y, plotLeft-6, y, tickLabel(t))
	}
	fmt.Fprintf(&b, `<text transform="translate(16,%.0f) rotate(-90)" text-anchor="middle">%s</text>`, plotTop+innerH/2, e(p.ylabel))
	// The x axis: N on a log scale, or one point in the middle.
	nlo, nhi := float64(slices.Min(p.clients)), float64(slices.Max(p.clients))
	xOf := func(n int) float64 {
		if nlo == nhi {
			return plotLeft + innerW/2
		}
		return plotLeft + 20 + (innerW-40)*(math.Log(float64(n))-math.Log(nlo))/(math.Log(nhi)-math.Log(nlo))
	}
	for _, n := range p.clients {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%d</text>`, xOf(n), plotTop+innerH+16, n)
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">N (contending sessions, log scale)</text>`, plotLeft+innerW/2, plotTop+innerH+32)
	// The series, each shifted sideways by its own offset.
	k := len(p.variants)
	for i, v := range p.variants {
		st := herdStyles[v]
		dx := (float64(i) - float64(k-1)/2) * 5
		var line []string
		for _, pt := range pts[v] {
			x := xOf(pt.n) + dx
			line = append(line, fmt.Sprintf("%.1f,%.1f", x, yOf(pt.s.Median)))
			if pt.s.Max > pt.s.Min {
				fmt.Fprintf(&b, `<line class="bar" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="1.5"/>`, x, x, yOf(pt.s.Min), yOf(pt.s.Max), st.color)
			}
		}
		if len(line) > 1 {
			fmt.Fprintf(&b, `<polyline class="series" data-variant="%s" points="%s" fill="none" stroke="%s" stroke-width="2" stroke-dasharray="%s"/>`,
				e(string(v)), strings.Join(line, " "), st.color, st.dash)
		}
		for _, pt := range pts[v] {
			b.WriteString(marker(st, xOf(pt.n)+dx, yOf(pt.s.Median), string(v)))
		}
		// The legend.
		ly := float64(plotTop + 10 + 20*i)
		lx := plotLeft + innerW + 10
		fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.0f" y2="%.0f" stroke="%s" stroke-width="2" stroke-dasharray="%s"/>`, lx, lx+28, ly, ly, st.color, st.dash)
		b.WriteString(marker(st, lx+14, ly, ""))
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" dy="4">%s</text>`, lx+34, ly, e(p.label(v)))
	}
	if len(missing) > 0 {
		fmt.Fprintf(&b, `<text class="nodata" x="%d" y="%d" fill="#a00">no data: %s</text>`, plotLeft, plotH-8, e(strings.Join(missing, "; ")))
	}
	b.WriteString("</svg>")
	return b.String()
}

// marker draws a series' marker at (x, y); variant, when set, tags it.
func marker(st herdStyle, x, y float64, variant string) string {
	tag := ""
	if variant != "" {
		tag = fmt.Sprintf(` class="marker" data-variant="%s"`, html.EscapeString(variant))
	}
	const r = 4.5
	switch st.marker {
	case "square":
		return fmt.Sprintf(`<rect%s x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`, tag, x-r, y-r, 2*r, 2*r, st.color)
	case "triangle":
		return fmt.Sprintf(`<polygon%s points="%.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="%s"/>`, tag, x, y-r-1, x-r-1, y+r, x+r+1, y+r, st.color)
	case "diamond":
		return fmt.Sprintf(`<polygon%s points="%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="none" stroke="%s" stroke-width="2"/>`, tag, x, y-r-1, x+r+1, y, x, y+r+1, x-r-1, y, st.color)
	case "cross":
		return fmt.Sprintf(`<path%s d="M%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1f" stroke="%s" stroke-width="2"/>`, tag, x-r, y-r, x+r, y+r, x-r, y+r, x+r, y-r, st.color)
	}
	return fmt.Sprintf(`<circle%s cx="%.1f" cy="%.1f" r="%.1f" fill="none" stroke="%s" stroke-width="2"/>`, tag, x, y, r, st.color)
}

// logTicks returns 1-2-5 ticks between lo and hi (both positive).
func logTicks(lo, hi float64) []float64 {
	var ticks []float64
	for d := math.Floor(math.Log10(lo)); d <= math.Ceil(math.Log10(hi)); d++ {
		for _, m := range []float64{1, 2, 5} {
			if t := m * math.Pow(10, d); t >= lo && t <= hi {
				ticks = append(ticks, t)
			}
		}
	}
	if len(ticks) < 2 { // a narrow range: its ends
		ticks = []float64{lo, hi}
	}
	return ticks
}

// linearTicks returns about five round ticks between lo and hi.
func linearTicks(lo, hi float64) []float64 {
	step := math.Pow(10, math.Floor(math.Log10((hi-lo)/5)))
	for _, m := range []float64{1, 2, 5, 10} {
		if (hi-lo)/(step*m) <= 6 {
			step *= m
			break
		}
	}
	var ticks []float64
	for t := math.Ceil(lo/step) * step; t <= hi; t += step {
		ticks = append(ticks, t)
	}
	return ticks
}

// tickLabel prints an axis value briefly.
func tickLabel(v float64) string {
	if v >= 1000 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// Title is the report's title for cells of d.
func Title(d time.Duration) string {
	return fmt.Sprintf("The herd's cost to everyone else, and what each primitive spends: ZooKeeper 3.8, zero hold time, %v cells", d)
}
