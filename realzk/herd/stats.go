package herd

import (
	"math"
	"slices"
	"time"
)

// Percentile returns the p-th percentile (0 < p ≤ 100) of samples by the
// nearest-rank method: the smallest sample that at least p % of the samples
// do not exceed. It returns 0 for no samples; samples is not modified.
func Percentile(samples []time.Duration, p float64) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// Spread is a figure over the rounds of a cell: the median with the
// smallest and largest value. N is how many rounds had a value; with N = 0
// there is no data and the other fields are 0.
type Spread struct {
	Median, Min, Max float64
	N                int
}

// SpreadOf returns the median (the mean of the middle two for an even
// count), minimum and maximum of values, ignoring NaNs (rounds without
// data).
func SpreadOf(values []float64) Spread {
	var v []float64
	for _, x := range values {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return Spread{}
	}
	slices.Sort(v)
	s := Spread{Min: v[0], Max: v[len(v)-1], N: len(v)}
	if m := len(v) / 2; len(v)%2 == 1 {
		s.Median = v[m]
	} else {
		s.Median = (v[m-1] + v[m]) / 2
	}
	return s
}
