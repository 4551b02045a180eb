package testutil_test

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/internal/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestClockMovesBothWays(t *testing.T) {
	var c testutil.Clock
	if !c.Now().Equal(testutil.Epoch) {
		t.Fatalf("zero clock reads %v", c.Now())
	}
	c.Set(5 * time.Second)
	c.Advance(-2 * time.Second)
	if got := c.Now().Sub(testutil.Epoch); got != 3*time.Second {
		t.Fatalf("got %v after Set(5s), Advance(-2s)", got)
	}
}
