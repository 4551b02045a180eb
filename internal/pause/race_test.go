package pause_test

import (
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/pause"
)

// TestAPauseMadeWhileAPassedOneIsDroppedIsKept races the drop of a pause
// that has passed (Check, by a request that found it over) against a new
// pause of the same destination (a 429 that came meanwhile): whichever
// goes first, the new pause must be in the table afterwards. Before, the
// new end could be written into the entry being dropped, and lost.
func TestAPauseMadeWhileAPassedOneIsDroppedIsKept(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for i := range 20_000 {
		var tab pause.Table
		tab.Pause("h", t0.Add(time.Second))
		now := t0.Add(2 * time.Second) // the first pause has passed
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Go(func() { <-start; tab.Check("h", now) })
		wg.Go(func() { <-start; tab.PauseAt("h", now, now.Add(time.Minute)) })
		close(start)
		wg.Wait()
		if until, ok := tab.Until("h", now); !ok || !until.Equal(now.Add(time.Minute)) {
			t.Fatalf("round %d: the new pause was lost (paused %v until %v)", i, ok, until)
		}
	}
}
