package chart

import "testing"

func TestTicks(t *testing.T) {
	var labels []string
	for _, tk := range (ticks{}).Ticks(0, 52) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := labels; len(got) != 6 || got[0] != "0" || got[1] != "10" || got[5] != "50" {
		t.Errorf("labels on [0, 52] = %v, want 0 10 ... 50", got)
	}
	for _, tc := range []struct{ x, want float64 }{{0.7, 1}, {1, 1}, {1.2, 2}, {3, 5}, {6, 10}, {0.012, 0.02}, {40, 50}} {
		if got := nice(tc.x); got != tc.want {
			t.Errorf("nice(%v) = %v, want %v", tc.x, got, tc.want)
		}
	}
	if got := (ticks{}).Ticks(1, 1); len(got) == 0 {
		t.Error("no ticks for an empty range")
	}
}
