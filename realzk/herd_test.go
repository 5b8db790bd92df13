package realzk

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// TestHerdSmall runs a small herd experiment (N=10) on the shared ensemble
// and checks what the experiment is about: the recipe and zk.Lock wake at
// most one waiter per release, the parent-watching lock wakes more. The
// clients drain instead of being cancelled, so every notification counted
// was caused by a lock node's creation or release.
func TestHerdSmall(t *testing.T) {
	e := Shared(t)
	ctx := testContext(t, 2*time.Minute)
	row, err := RunHerd(ctx, HerdConfig{Addrs: e.Addrs(), Clients: 10, Duration: 1500 * time.Millisecond, Path: "/TestHerdSmall", Drain: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("herd, N=10:\n%s", FormatHerdTable([]HerdRow{row}))
	if len(row.Cells) != len(HerdVariants) {
		t.Fatalf("got %d cells, want one per variant (%d)", len(row.Cells), len(HerdVariants))
	}
	for _, c := range row.Cells {
		if c.Releases == 0 || c.Acquisitions != c.Releases {
			t.Errorf("%s: %d acquisitions, %d releases; want as many releases as acquisitions, and some", c.Variant, c.Acquisitions, c.Releases)
		}
		switch c.Variant {
		case HerdRecipe, HerdZKLock:
			if c.Notifications > c.Releases {
				t.Errorf("%s: %d notifications to waiters for %d releases; want at most one per release", c.Variant, c.Notifications, c.Releases)
			}
		case HerdWatchParent:
			if c.Notifications <= c.Releases {
				t.Errorf("%s: %d notifications for %d releases; want more than one per release (the herd)", c.Variant, c.Notifications, c.Releases)
			}
		}
	}
	if row.Floor.Handoffs == 0 {
		t.Errorf("floor: no write-then-read pair done")
	}
	checkHerdSVG(t, HerdSVG([]HerdRow{row, row}, "test <plot>"))
}

// checkHerdSVG checks that svg is well-formed XML with one line per
// variant and the floor in each panel.
func checkHerdSVG(t *testing.T, svg []byte) {
	t.Helper()
	polylines := 0
	decoder := xml.NewDecoder(bytes.NewReader(svg))
	for {
		token, err := decoder.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the plot is not well-formed SVG: %v\n%s", err, svg)
		}
		if start, ok := token.(xml.StartElement); ok && start.Name.Local == "polyline" {
			polylines++
		}
	}
	if want := 2*len(HerdVariants) + 1; polylines != want {
		t.Errorf("the plot has %d lines, want %d (each variant in both panels, the floor in one)", polylines, want)
	}
	for _, v := range HerdVariants {
		if !strings.Contains(string(svg), ">"+string(v)+"<") {
			t.Errorf("the plot's legend lacks %s", v)
		}
	}
}

func TestHerdRejectsBadConfig(t *testing.T) {
	ctx := testContext(t, 10*time.Second)
	for _, tc := range []struct {
		cfg  HerdConfig
		want string
	}{
		{HerdConfig{Clients: 10, Duration: time.Second}, "no server addresses"},
		{HerdConfig{Addrs: []string{"127.0.0.1:1"}, Clients: 1, Duration: time.Second}, "at least 2"},
		{HerdConfig{Addrs: []string{"127.0.0.1:1"}, Clients: 10}, "positive duration"},
		{HerdConfig{Addrs: []string{"127.0.0.1:1"}, Clients: 10, Duration: time.Second, Variants: []HerdVariant{"nope"}}, "unknown variant"},
	} {
		if _, err := RunHerd(ctx, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("RunHerd(%+v) = %v, want an error saying %q", tc.cfg, err, tc.want)
		}
	}
}
