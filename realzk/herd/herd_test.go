package herd

import (
	"encoding/xml"
	"errors"
	"html"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkmodel/zkmodel/realzk"
)

// TestHerdSmall runs the herd experiment small (N=4, one round of 1 s
// cells, every lock, Curator's JVM included) on the shared ensemble and
// checks what it is about: the predecessor-watching locks wake at most one
// waiter per release, the parent-watching one wakes more; the recipe spends
// no more requests per acquisition than the minimal lock's 5 (issue 12,
// point 3) plus the cell's edges; the bystanders ran without errors, and the
// servers' mntr was read.
func TestHerdSmall(t *testing.T) {
	e := realzk.Shared(t)
	ctx := testContext(t, 3*time.Minute)
	const n = 4
	res, err := Run(ctx, Experiment{Addrs: e.Addrs(), Clients: []int{n}, Duration: time.Second, Rounds: 1,
		Primitives: []Primitive{Mutex}, Bystanders: 2, BystanderRate: 50, Path: "/TestHerdSmall"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("herd, N=%d:\n%s", n, FormatMarkdown(res))
	if want := len(Variants) + 1; len(res.Cells) != want {
		t.Fatalf("got %d cells, want %d (every lock and the baseline)", len(res.Cells), want)
	}
	for _, c := range res.Cells {
		if c.Err != "" {
			t.Errorf("%s: no data: %s", c.Variant, c.Err)
			continue
		}
		if c.Bystanders.Ops == 0 || c.Bystanders.Errors != 0 {
			t.Errorf("%s: the bystanders did %d operations with %d errors; want some, and no error", c.Variant, c.Bystanders.Ops, c.Bystanders.Errors)
		}
		if c.Server.PacketsReceived <= 0 {
			t.Errorf("%s: the servers received %d packets by mntr; want the bystanders' at least", c.Variant, c.Server.PacketsReceived)
		}
		if c.Variant == None {
			continue
		}
		if c.Acquisitions == 0 || c.Releases == 0 || c.Handoffs == 0 {
			t.Errorf("%s: %d acquisitions, %d releases, %d handoffs; want some of each", c.Variant, c.Acquisitions, c.Releases, c.Handoffs)
		}
		switch c.Variant {
		case Recipe, ZKLock:
			// +1: the counts are read at the cell's end while one release may
			// be in flight, its notification delivered and its Unlock not yet
			// returned.
			if c.Notifications > c.Releases+1 {
				t.Errorf("%s: %d notifications to waiters for %d releases; want at most one per release", c.Variant, c.Notifications, c.Releases)
			}
		case WatchParent:
			if c.Notifications <= c.Releases {
				t.Errorf("%s: %d notifications for %d releases; want more than one per release (the herd)", c.Variant, c.Notifications, c.Releases)
			}
		}
		if c.Variant == Recipe {
			// 5 per contended acquisition; a cell's first acquisition may be
			// uncontended (3), and each waiter cancelled at its end spends up
			// to 4 (create, list, exists, the cleanup's delete) without
			// acquiring. A 6-request lock would be well above this bound.
			if per := c.Value(MetricRequestsPerAcquisition); !(per <= 5+float64(4*n)/float64(c.Acquisitions)) {
				t.Errorf("recipe: %.2f requests per acquisition (%d for %d); want at most 5 and the cell's edges", per, c.Requests, c.Acquisitions)
			}
		}
	}
	checkHerdReport(t, res, false)
}

func TestHerdExperimentRejectsBadSettings(t *testing.T) {
	ok := Experiment{Addrs: []string{"127.0.0.1:1"}, Clients: []int{10}, Duration: time.Second, Rounds: 1}
	if err := ok.Validate(); err != nil {
		t.Fatalf("Validate(%+v) = %v, want nil", ok, err)
	}
	// What the mutex alone does not use is not checked when it runs alone,
	// nor the mutex's settings when only the others run.
	alone := ok
	alone.Primitives, alone.Implementations, alone.PrimitiveClients = []Primitive{Mutex}, []Variant{}, []int{1}
	others := ok
	others.Primitives, others.Clients, others.Variants = []Primitive{Election}, nil, []Variant{}
	for _, x := range []Experiment{alone, others} {
		if err := x.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v, want nil", x, err)
		}
	}
	for _, tc := range []struct {
		change func(*Experiment)
		want   string
	}{
		{func(x *Experiment) { x.Addrs = nil }, "no server addresses"},
		{func(x *Experiment) { x.Clients = nil }, "no numbers of clients"},
		{func(x *Experiment) { x.Clients = []int{10, 1} }, "at least 2"},
		{func(x *Experiment) { x.Duration = time.Millisecond }, "at least 100ms"},
		{func(x *Experiment) { x.Rounds = 0 }, "rounds"},
		{func(x *Experiment) { x.Variants = []Variant{"nope"} }, "unknown variant"},
		{func(x *Experiment) { x.Variants = []Variant{} }, "no variants"},
		{func(x *Experiment) { x.Variants = []Variant{Recipe, Recipe} }, "given twice"},
		{func(x *Experiment) { x.Primitives = []Primitive{"barrier"} }, "unknown primitive"},
		{func(x *Experiment) { x.Primitives = []Primitive{} }, "no primitives"},
		{func(x *Experiment) { x.Primitives = []Primitive{RWLock, RWLock} }, "given twice"},
		{func(x *Experiment) { x.Implementations = []Variant{ZKLock} }, "unknown implementation"},
		{func(x *Experiment) { x.Implementations = []Variant{} }, "no implementations"},
		{func(x *Experiment) { x.PrimitiveClients = []int{} }, "no numbers of clients for"},
		{func(x *Experiment) { x.PrimitiveClients = []int{1} }, "at least 2"},
		{func(x *Experiment) { x.PrimitiveClients = []int{2} }, "more clients than leases"},
		{func(x *Experiment) { x.Leases = -1 }, "leases"},
		{func(x *Experiment) { x.WriterEvery = -1 }, "writer every"},
		{func(x *Experiment) { x.PrimitiveDuration = time.Millisecond }, "at least 100ms"},
		{func(x *Experiment) { x.Bystanders = -1 }, "bystanders"},
		{func(x *Experiment) { x.BystanderRate = math.NaN() }, "bystander rate"},
		{func(x *Experiment) { x.BystanderRate = 0.5 }, "bystander rate"},
		{func(x *Experiment) { x.SessionTimeout = -time.Second }, "session timeout"},
		{func(x *Experiment) { x.Path = "relative" }, "absolute"},
		{func(x *Experiment) { x.Path = "/trailing/" }, "absolute"},
	} {
		x := ok
		tc.change(&x)
		if err := x.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want an error saying %q", x, err, tc.want)
		}
	}
}

func TestSpreadAndPercentile(t *testing.T) {
	if got := SpreadOf([]float64{3, math.NaN(), 1, 2}); got != (Spread{Median: 2, Min: 1, Max: 3, N: 3}) {
		t.Errorf("SpreadOf(3, NaN, 1, 2) = %+v, want median 2 of 3 values from 1 to 3", got)
	}
	if got := SpreadOf([]float64{4, 1}); got != (Spread{Median: 2.5, Min: 1, Max: 4, N: 2}) {
		t.Errorf("SpreadOf(4, 1) = %+v, want median 2.5", got)
	}
	if got := SpreadOf([]float64{math.NaN()}); got.N != 0 {
		t.Errorf("SpreadOf(NaN) = %+v, want no data", got)
	}
	samples := make([]time.Duration, 100)
	for i := range samples {
		samples[i] = time.Duration(100-i) * time.Millisecond
	}
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{{50, 50 * time.Millisecond}, {99, 99 * time.Millisecond}, {100, 100 * time.Millisecond}, {0.1, time.Millisecond}} {
		if got := Percentile(samples, tc.p); got != tc.want {
			t.Errorf("Percentile(1..100 ms, %v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if samples[0] != 100*time.Millisecond {
		t.Error("Percentile sorted its argument in place")
	}
	if got := Percentile(nil, 50); got != 0 {
		t.Errorf("Percentile(nil) = %v, want 0", got)
	}
}

// TestHerdReportShowsEverySeries renders made-up results with two rounds,
// one cell without data, and two locks with the same figures, and checks the
// report's panels: well-formed SVG, one line per lock with data in every
// panel (the two alike drawn side by side, not one under the other), the
// missing cell named in its panels and in the notes, and y axes that start
// where the data is.
func TestHerdReportShowsEverySeries(t *testing.T) {
	res := Results{Clients: []int{10, 50, 200}, Variants: Variants, Rounds: 2, Duration: time.Second, Bystanders: 8,
		BystanderRate: 400, Servers: 3}
	for _, n := range res.Clients {
		for r := 1; r <= res.Rounds; r++ {
			for i, v := range append(Variants, None) {
				c := Cell{Variant: v, Clients: n, Round: r, Elapsed: time.Second, Acquisitions: int64(100*(i+1) + r),
					Releases: int64(100*(i+1) + r), Notifications: int64(100*(i+1) + r), Requests: int64(500*(i+1) + 5*r),
					HandoffP50: time.Duration(i+1) * time.Millisecond, HandoffP99: time.Duration(i+3) * time.Millisecond, Handoffs: 50,
					Bystanders: BystanderStats{Ops: 400, P50: time.Millisecond, P99: time.Duration(10+n/10+i) * time.Millisecond, Max: 50 * time.Millisecond},
					Server:     ServerLoad{PacketsReceived: 10000, PacketsSent: 12000, WatchEvents: int64(120 * (i + 1) * (i + 1))}}
				if v == ZKLock { // the same figures as the recipe's
					c.Acquisitions, c.Releases, c.Notifications, c.Requests = int64(100+r), int64(100+r), int64(100+r), int64(500+5*r)
					c.HandoffP50, c.HandoffP99, c.Server.WatchEvents = time.Millisecond, 3*time.Millisecond, 120
				}
				if v == Curator {
					c.Notifications, c.Requests = -1, -1
					if n == 50 {
						c = Cell{Variant: v, Clients: n, Round: r, Err: "the Curator driver did not start"}
					}
				}
				res.Cells = append(res.Cells, c)
			}
		}
	}
	html := checkHerdReport(t, res, true)
	if !strings.Contains(html, "no data: Curator InterProcessMutex at N=50") {
		t.Errorf("the report does not say that Curator has no data at N=50")
	}
	if !strings.Contains(html, "the Curator driver did not start") {
		t.Errorf("the report's notes lack the reason Curator's cells have no data")
	}
	plots := Plots(res)
	if len(plots) != len(herdPanels(res)) {
		t.Fatalf("Plots gives %d plots, want one per panel (%d)", len(plots), len(herdPanels(res)))
	}
	for _, p := range plots {
		if err := xml.Unmarshal(p.SVG, new(struct{})); err != nil || p.Name == "" || !strings.Contains(string(p.SVG), "</svg>") {
			t.Errorf("plot %q is not a standalone SVG document: %v", p.Name, err)
		}
	}
	md := FormatMarkdown(res)
	if !strings.Contains(md, "| 50 | Curator InterProcessMutex | no data |") {
		t.Errorf("the markdown tables do not say that Curator has no data at N=50:\n%s", md)
	}
}

var (
	svgPattern    = regexp.MustCompile(`(?s)<svg.*?</svg>`)
	seriesPattern = regexp.MustCompile(`<polyline class="series" data-variant="([^"]+)" points="([^"]+)"`)
	markerPattern = regexp.MustCompile(`class="marker" data-variant="([^"]+)"[^>]*?(?:cy="([0-9.]+)"|y="([0-9.]+)" width|points="[0-9.]+,([0-9.]+))`)
)

// checkHerdReport renders res and checks every panel of the report: its SVG
// is well-formed, every lock with data at two or more N has its own line,
// no two lines share their points, and the markers lie inside the plot.
// With wide set (data that varies over more than the axis's smallest span,
// 0.3 decades) the data must also span most of the y axis: the axis starts
// where the data is. It returns the page.
func checkHerdReport(t *testing.T, res Results, wide bool) string {
	t.Helper()
	page := string(HTML(res, Title(res.Duration)))
	panels := svgPattern.FindAllString(page, -1)
	if want := len(herdPanels(res)); len(panels) != want {
		t.Fatalf("the report has %d plots, want %d", len(panels), want)
	}
	for i, svg := range panels {
		p := herdPanels(res)[i]
		dec := xml.NewDecoder(strings.NewReader(svg))
		for {
			_, err := dec.Token()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("plot %q is not well-formed SVG: %v", p.title, err)
			}
		}
		points := map[string]string{}
		for _, m := range seriesPattern.FindAllStringSubmatch(svg, -1) {
			for v, other := range points {
				if other == m[2] {
					t.Errorf("plot %q: the lines of %s and %s lie on each other", p.title, v, m[1])
				}
			}
			points[m[1]] = m[2]
		}
		for _, v := range p.variants {
			withData := 0
			for _, n := range p.clients {
				if s := res.PrimitiveSpread(p.primitive, v, n, p.metric); s.N > 0 && !(p.log && s.Min <= 0) {
					withData++
				}
			}
			if _, drawn := points[string(v)]; drawn != (withData >= 2) {
				t.Errorf("plot %q: %s has data at %d values of N, and its line drawn is %v", p.title, v, withData, drawn)
			}
			if !strings.Contains(svg, ">"+html.EscapeString(p.label(v))+"<") {
				t.Errorf("plot %q: the legend lacks %s", p.title, p.label(v))
			}
		}
		top, bottom := math.Inf(1), math.Inf(-1)
		for _, m := range markerPattern.FindAllStringSubmatch(svg, -1) {
			y, err := strconv.ParseFloat(m[2]+m[3]+m[4], 64)
			if err != nil {
				t.Fatalf("plot %q: a marker without a y: %q", p.title, m[0])
			}
			top, bottom = math.Min(top, y), math.Max(bottom, y)
		}
		inner := float64(plotH - plotTop - plotBot)
		if math.IsInf(top, 0) || top < plotTop || bottom > plotTop+inner {
			t.Errorf("plot %q: markers from y=%v to %v, want some, inside the plot (%d to %v)", p.title, top, bottom, plotTop, plotTop+inner)
		} else if wide && bottom-top < 0.6*inner {
			t.Errorf("plot %q: the data spans %.0f of the axis's %.0f pixels; want the axis to start where the data is", p.title, bottom-top, inner)
		}
	}
	return page
}

// TestHerdReportShowsThePrimitives renders made-up results of the
// primitives beyond the mutex alone (two rounds, N = 10 and 50, one cell
// without data) and checks the report: no mutex table or claim, a table per
// primitive with its own columns and every implementation's row, figures
// computed from the wire counts, two plots per primitive with every
// implementation's line, and the missing cell named.
func TestHerdReportShowsThePrimitives(t *testing.T) {
	res := Results{Primitives: []Primitive{RWLock, Semaphore, Election}, Implementations: Implementations,
		PrimitiveClients: []int{10, 50}, PrimitiveDuration: time.Second, Leases: 2, WriterEvery: 4, Rounds: 2, Duration: time.Second,
		Bystanders: 8, BystanderRate: 400, Servers: 3}
	for _, n := range res.PrimitiveClients {
		for r := 1; r <= res.Rounds; r++ {
			for _, p := range res.Primitives {
				for i, v := range res.Implementations {
					k := int64(i + 1)
					c := Cell{Primitive: p, Variant: v, Clients: n, Round: r, Elapsed: time.Second, Acquisitions: 400, Releases: 400,
						WriteAcquisitions: 100, WriteReleases: 100, Notifications: -1, Requests: -1,
						Wire: realzk.WireCounts{Requests: 400 * (4 + k*int64(n)/10), Notifications: 400 * k * int64(n) / 10,
							Classes: map[string]int64{wakeRead: 300, wakeExclusive: 100 * k * int64(n) / 10, wakeChildren: 400}},
						Bystanders: BystanderStats{Ops: 400, P99: time.Duration(10+i) * time.Millisecond}}
					if v == Recipe {
						c.Requests, c.Notifications = c.Wire.Requests-3, c.Wire.Notifications+1
					}
					if p == RWLock && v == Kazoo && n == 50 {
						c = Cell{Primitive: p, Variant: v, Clients: n, Round: r, Err: "the kazoo driver did not start"}
					}
					res.Cells = append(res.Cells, c)
				}
			}
		}
	}
	page := checkHerdReport(t, res, true)
	if strings.Contains(page, "watching the parent") {
		t.Error("the report makes the mutex's claim without mutex cells")
	}
	md := FormatMarkdown(res)
	for _, want := range []string{
		"| N | implementation | acquisitions/s | requests/acquisition | wake-ups/release | wake-ups/write release | wake-ups/read release |",
		"| N | implementation | acquisitions/s | requests/acquisition | wake-ups/release | on the leases/release | on the admission mutex/acquisition |",
		"| N | implementation | leaderships/s | requests/leadership | wake-ups/release |",
		// Curator (k=2) at N=50: 400·(4+10) requests, 400·10 notifications, 100·10 write wake-ups for 100 write releases, 300 for 300 reads.
		"| 50 | Curator InterProcessReadWriteLock | 400 | 14.0 | 10.0 | 10.0 | 1.00 |",
		"| 10 | recipe NewSemaphore | 400 | 5.00 | 1.00 | 1.00 | 0.25 | 4.99 | 1.00 |",
		"| 10 | kazoo Election | 400 | 7.00 | 3.00 |",
		"| 50 | kazoo ReadLock/WriteLock | no data |",
		"kazoo ReadLock/WriteLock, N=50, round 1: the kazoo driver did not start",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the markdown lacks %q:\n%s", want, md)
		}
	}
	if got, want := len(herdPanels(res)), 2*len(res.Primitives); got != want {
		t.Errorf("%d plots, want %d (two per primitive)", got, want)
	}
}
