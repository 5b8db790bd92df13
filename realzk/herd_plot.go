package realzk

import (
	"fmt"
	"html"
	"math"
	"strings"
	"text/tabwriter"
)

// FormatHerdTable renders rows as a table: one line per N and variant with
// notifications per release, acquisitions per second, and the row's floor
// (handoffs per second, an upper bound).
func FormatHerdTable(rows []HerdRow) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "clients\tvariant\tnotifications/release\tacquisitions/s\treleases\tfloor handoffs/s\t")
	for _, row := range rows {
		for _, c := range row.Cells {
			fmt.Fprintf(w, "%d\t%s\t%.2f\t%.1f\t%d\t%.1f\t\n", row.Clients, c.Variant, c.NotificationsPerRelease(), c.AcquisitionsPerSecond(), c.Releases, row.Floor.HandoffsPerSecond())
		}
	}
	w.Flush()
	return b.String()
}

// herdColors gives each variant, and the floor, a colour in the plot.
var herdColors = map[HerdVariant]string{
	HerdRecipe:      "#1f77b4",
	HerdWatchParent: "#d62728",
	HerdZKLock:      "#2ca02c",
	"floor":         "#7f7f7f",
}

// herdStrokes tells the lines apart where they overlap (the recipe and
// zk.Lock both get one notification per release).
var herdStrokes = map[HerdVariant]string{
	HerdRecipe:      `stroke-width="5" stroke-opacity="0.6"`,
	HerdWatchParent: `stroke-width="2"`,
	HerdZKLock:      `stroke-width="2" stroke-dasharray="3,3"`,
	"floor":         `stroke-width="2" stroke-dasharray="8,4"`,
}

// HerdSVG draws rows as an SVG image of two panels over N (log scale):
// watch notifications per release, and acquisitions per second with the
// floor (both log scale). It is written by hand to keep the module free of
// a plotting dependency.
func HerdSVG(rows []HerdRow, title string) []byte {
	const (
		width, height = 1000, 460
		panelW        = 400
		panelH        = 300
		top           = 70
	)
	var clients []int
	series := map[HerdVariant][][2]float64{} // variant → (N, notifications/release)
	rates := map[HerdVariant][][2]float64{}  // variant → (N, acquisitions/s); "floor" too
	var order []HerdVariant
	for _, row := range rows {
		clients = append(clients, row.Clients)
		for _, c := range row.Cells {
			if _, ok := series[c.Variant]; !ok {
				order = append(order, c.Variant)
			}
			series[c.Variant] = append(series[c.Variant], [2]float64{float64(row.Clients), c.NotificationsPerRelease()})
			rates[c.Variant] = append(rates[c.Variant], [2]float64{float64(row.Clients), c.AcquisitionsPerSecond()})
		}
		rates["floor"] = append(rates["floor"], [2]float64{float64(row.Clients), row.Floor.HandoffsPerSecond()})
	}

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="16" text-anchor="middle">%s</text>`+"\n", width/2, html.EscapeString(title))
	panel := func(left int, label string, data map[HerdVariant][][2]float64, names []HerdVariant) {
		x := logAxis(clients, float64(left), float64(left+panelW))
		var ys []float64
		for _, name := range names {
			for _, p := range data[name] {
				ys = append(ys, p[1])
			}
		}
		y := logAxisFloat(ys, float64(top+panelH), float64(top))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#000"/>`+"\n", left, top, panelW, panelH)
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" font-size="14">%s</text>`+"\n", left+panelW/2, top-10, html.EscapeString(label))
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">clients (N)</text>`+"\n", left+panelW/2, top+panelH+36)
		for _, n := range clients {
			px := x.at(float64(n))
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`+"\n", px, top, px, top+panelH)
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", px, top+panelH+16, n)
		}
		for _, tick := range y.ticks() {
			py := y.at(tick)
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", left, py, left+panelW, py)
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, py+4, formatTick(tick))
		}
		for _, name := range names {
			var points []string
			for _, p := range data[name] {
				if p[1] <= 0 {
					continue // nothing to show on a log scale
				}
				px, py := x.at(p[0]), y.at(p[1])
				points = append(points, fmt.Sprintf("%.1f,%.1f", px, py))
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>`+"\n", px, py, herdColors[name])
			}
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" %s/>`+"\n", strings.Join(points, " "), herdColors[name], herdStrokes[name])
		}
	}
	panel(80, "watch notifications per release (log)", series, order)
	panel(570, "acquisitions per second (log)", rates, append(append([]HerdVariant(nil), order...), "floor"))
	legend := append(append([]HerdVariant(nil), order...), "floor")
	for i, name := range legend {
		lx := 80 + i*200
		label := string(name)
		if name == "floor" {
			label = "floor: 1 write + 1 read per handoff"
		}
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/>`+"\n", lx, height-20, lx+24, height-20, herdColors[name])
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", lx+30, height-16, html.EscapeString(label))
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// axis maps values on a log scale between two decades to pixels.
type axis struct {
	lo, hi       float64 // log10 of the range
	pixLo, pixHi float64
}

func logAxis(ns []int, pixLo, pixHi float64) axis {
	vs := make([]float64, len(ns))
	for i, n := range ns {
		vs[i] = float64(n)
	}
	a := axis{pixLo: pixLo, pixHi: pixHi}
	a.lo, a.hi = logRange(vs)
	// Pad by a fraction of the range so the first and last N are not on
	// the frame.
	pad := (a.hi - a.lo) * 0.08
	a.lo, a.hi = a.lo-pad, a.hi+pad
	return a
}

func logAxisFloat(vs []float64, pixLo, pixHi float64) axis {
	a := axis{pixLo: pixLo, pixHi: pixHi}
	lo, hi := logRange(vs)
	a.lo, a.hi = math.Floor(lo), math.Ceil(hi)
	if a.hi == a.lo {
		a.hi++
	}
	return a
}

// logRange is the log10 of the smallest and largest positive value (0 and 1
// without any).
func logRange(vs []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		if v > 0 {
			lo, hi = min(lo, math.Log10(v)), max(hi, math.Log10(v))
		}
	}
	if math.IsInf(lo, 1) {
		return 0, 1
	}
	if lo == hi {
		lo, hi = lo-0.5, hi+0.5
	}
	return lo, hi
}

func (a axis) at(v float64) float64 {
	return a.pixLo + (math.Log10(v)-a.lo)/(a.hi-a.lo)*(a.pixHi-a.pixLo)
}

// ticks returns the powers of ten (and 2× and 5× them) within the range.
func (a axis) ticks() []float64 {
	var ts []float64
	for e := math.Floor(a.lo); e <= a.hi; e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if l := math.Log10(v); l >= a.lo-1e-9 && l <= a.hi+1e-9 {
				ts = append(ts, v)
			}
		}
	}
	return ts
}

func formatTick(v float64) string {
	if v >= 1 {
		return fmt.Sprintf("%g", v)
	}
	return fmt.Sprintf("%.2g", v)
}
