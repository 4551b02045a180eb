package muldiv_test

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/cmd/sluice/internal/muldiv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestAgainstBig checks every function against math/big on random and
// extreme operands.
func TestAgainstBig(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	sat := func(x *big.Int) int64 {
		if x.Cmp(big.NewInt(math.MaxInt64)) > 0 {
			return math.MaxInt64
		}
		return x.Int64()
	}
	edge := []int64{0, 1, 2, 3, 1 << 31, 1<<62 - 1, math.MaxInt64 - 1, math.MaxInt64}
	pick := func() int64 {
		if rng.IntN(3) == 0 {
			return edge[rng.IntN(len(edge))]
		}
		return rng.Int64N(math.MaxInt64 >> rng.IntN(63))
	}
	for range 100_000 {
		a, b, c := pick(), pick(), max(pick(), 1)
		p := new(big.Int).Mul(big.NewInt(a), big.NewInt(b))
		q, r := new(big.Int).QuoRem(p, big.NewInt(c), new(big.Int))
		ceil := new(big.Int).Set(q)
		if r.Sign() != 0 {
			ceil.Add(ceil, big.NewInt(1))
		}
		if got, want := muldiv.Floor(a, b, c), sat(q); got != want {
			t.Fatalf("Floor(%d, %d, %d) = %d, want %d", a, b, c, got, want)
		}
		if got, want := muldiv.Ceil(a, b, c), sat(ceil); got != want {
			t.Fatalf("Ceil(%d, %d, %d) = %d, want %d", a, b, c, got, want)
		}
		if got, want := muldiv.Mul(a, b), sat(p); got != want {
			t.Fatalf("Mul(%d, %d) = %d, want %d", a, b, got, want)
		}
		if got, want := muldiv.Add(a, b), sat(new(big.Int).Add(big.NewInt(a), big.NewInt(b))); got != want {
			t.Fatalf("Add(%d, %d) = %d, want %d", a, b, got, want)
		}
	}
}
