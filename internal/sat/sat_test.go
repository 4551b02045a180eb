package sat_test

import (
	"math"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/internal/sat"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestAfterSaturatesInsteadOfWrapping(t *testing.T) {
	for _, c := range []struct {
		at   int64
		d    time.Duration
		want int64
	}{
		{0, time.Second, int64(time.Second)},
		{int64(time.Second), math.MaxInt64, math.MaxInt64},
		{math.MaxInt64 - 1, 1, math.MaxInt64},
		{math.MaxInt64 - 1, 2, math.MaxInt64},
		{math.MaxInt64, 0, math.MaxInt64},
	} {
		if got := sat.After(c.at, c.d); got != c.want {
			t.Errorf("After(%d, %d) = %d, want %d", c.at, c.d, got, c.want)
		}
	}
}

func TestTimesSaturatesInsteadOfWrapping(t *testing.T) {
	for _, c := range []struct{ n, d, want int64 }{
		{0, math.MaxInt64, 0},
		{49, 10_000_000, 490_000_000},
		{math.MaxInt64 / 3, 4, math.MaxInt64},
		{1 << 40, 1 << 40, math.MaxInt64},
	} {
		if got := sat.Times(c.n, c.d); got != c.want {
			t.Errorf("Times(%d, %d) = %d, want %d", c.n, c.d, got, c.want)
		}
	}
}
