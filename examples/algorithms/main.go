// Command algorithms sends one traffic pattern through the five rate
// algorithms of package algorithms, configured comparably (10 per second,
// capacity 10, window 1s), and prints what each admits in every 100 ms slot.
//
// The clock is simulated: every request carries its instant, nothing sleeps,
// and the program finishes at once. Run it with
//
//	go run ./examples/algorithms
//
// The pattern: one request every 100 ms for two seconds (exactly the limit),
// a quiet spell, a burst of 20 at 2.95 s and another of 20 at 3.00 s
// (straddling the fixed windows' boundary at 3 s), then two requests every
// 100 ms (twice the limit) until 5 s. Look for the fixed window's double
// burst at the boundary, and for GCRA's one-per-slot pacing after the burst.
package main

import (
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"time"

	"github.com/sluicehq/sluice/algorithms"
)

const (
	limit    = 10
	window   = time.Second
	slot     = 100 * time.Millisecond
	slots    = 50
	boundary = 3 * time.Second // a fixed window starts here
)

// start is the first instant of the simulation. It is a whole second after
// the Unix epoch, so the fixed windows begin at start, start+1s, ...
var start = time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC)

// contender is one algorithm under the traffic.
type contender struct {
	name string
	alg  algorithms.Algorithm
}

func contenders() ([]contender, error) {
	rate := algorithms.Rate{Count: limit, Per: window}
	gcra, err := algorithms.NewGCRA(rate, limit)
	if err != nil {
		return nil, err
	}
	tb, err := algorithms.NewTokenBucket(rate, limit)
	if err != nil {
		return nil, err
	}
	lb, err := algorithms.NewLeakyBucket(rate, limit)
	if err != nil {
		return nil, err
	}
	sw, err := algorithms.NewSlidingWindow(algorithms.Rate{Count: limit, Per: window})
	if err != nil {
		return nil, err
	}
	fw, err := algorithms.NewFixedWindow(algorithms.Rate{Count: limit, Per: window})
	if err != nil {
		return nil, err
	}
	return []contender{{"GCRA", gcra}, {"TokenBucket", tb}, {"LeakyBucket", lb}, {"SlidingWindow", sw}, {"FixedWindow", fw}}, nil
}

// traffic returns the instant (after start) of every request, in order.
func traffic() []time.Duration {
	var at []time.Duration
	for i := range 20 { // steady: one per slot, 0.0s to 1.9s
		at = append(at, time.Duration(i)*slot)
	}
	for range 20 { // the burst, 50ms before the boundary ...
		at = append(at, boundary-50*time.Millisecond)
	}
	for range 20 { // ... and at it
		at = append(at, boundary)
	}
	for i := 31; i < slots; i++ { // overload: two per slot, 3.1s to 4.9s
		at = append(at, time.Duration(i)*slot, time.Duration(i)*slot)
	}
	return at
}

// result is what the simulation observed.
type result struct {
	names    []string
	offered  [slots]int
	admitted [][slots]int      // per contender, per slot
	instants [][]time.Duration // per contender, every admission's instant
}

// simulate sends the traffic through every contender.
func simulate() (*result, error) {
	cs, err := contenders()
	if err != nil {
		return nil, err
	}
	r := &result{admitted: make([][slots]int, len(cs)), instants: make([][]time.Duration, len(cs))}
	for _, c := range cs {
		r.names = append(r.names, c.name)
	}
	for _, at := range traffic() {
		s := int(at / slot)
		r.offered[s]++
		for i, c := range cs {
			if c.alg.AllowAt(start.Add(at), 1).Allowed {
				r.admitted[i][s]++
				r.instants[i] = append(r.instants[i], at)
			}
		}
	}
	return r, nil
}

// total returns what contender i admitted in all.
func (r *result) total(i int) int { return len(r.instants[i]) }

// admittedIn counts contender i's admissions at instants in [from, to).
func (r *result) admittedIn(i int, from, to time.Duration) int {
	n := 0
	for _, at := range r.instants[i] {
		if at >= from && at < to {
			n++
		}
	}
	return n
}

// busiestWindow is the most contender i admitted in any half-open interval
// of one window's length (the fullest one starts at an admission).
func (r *result) busiestWindow(i int) int {
	most := 0
	for _, from := range r.instants[i] {
		most = max(most, r.admittedIn(i, from, from+window))
	}
	return most
}

// busiestSlotAfter is the most contender i admitted in one slot from the
// given instant on.
func (r *result) busiestSlotAfter(i int, from time.Duration) int {
	most := 0
	for s := int(from / slot); s < slots; s++ {
		most = max(most, r.admitted[i][s])
	}
	return most
}

func (r *result) index(name string) int {
	for i, n := range r.names {
		if n == name {
			return i
		}
	}
	panic("no contender " + name)
}

// print writes the table and what to look for in it.
func (r *result) print(w io.Writer) {
	fmt.Fprintf(w, "Five rate algorithms, one traffic pattern: %d per %v, capacity %d, window %v; simulated clock.\n", limit, window, limit, window)
	fmt.Fprintf(w, "Requests: 1 every 100ms for 2s (the limit); quiet; 20 at 2.95s and 20 at 3.00s\n")
	fmt.Fprintf(w, "(a burst straddling the fixed windows' boundary at 3s); then 2 every 100ms until 5s.\n\n")

	header := []string{"slot", "offered"}
	header = append(header, r.names...)
	widths := make([]int, len(header))
	for i, h := range header {
		widths[i] = max(len(h), 5)
	}
	row := func(cells ...string) {
		var b strings.Builder
		for i, c := range cells {
			if i == 0 {
				fmt.Fprintf(&b, "%-*s", widths[i], c)
			} else {
				fmt.Fprintf(&b, "  %*s", widths[i], c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	row(header...)
	for s := range slots {
		cells := []string{fmt.Sprintf("%.1fs", (time.Duration(s) * slot).Seconds()), fmt.Sprint(r.offered[s])}
		for i := range r.names {
			cells = append(cells, dots(r.admitted[i][s], r.offered[s]))
		}
		row(cells...)
	}
	offered := 0
	for _, n := range r.offered {
		offered += n
	}
	cells := []string{"total", fmt.Sprint(offered)}
	for i := range r.names {
		cells = append(cells, fmt.Sprint(r.total(i)))
	}
	row(cells...)

	gcra, sw, fw := r.index("GCRA"), r.index("SlidingWindow"), r.index("FixedWindow")
	fmt.Fprintf(w, "\nWhat to look for:\n")
	fmt.Fprintf(w, "  - FixedWindow admits %d between 2.95s and 3.00s: %d at the end of one window, %d at the start of the next.\n",
		r.admittedIn(fw, boundary-50*time.Millisecond, boundary+time.Nanosecond),
		r.admittedIn(fw, boundary-50*time.Millisecond, boundary), r.admittedIn(fw, boundary, boundary+time.Nanosecond))
	fmt.Fprintf(w, "  - SlidingWindow never admits more than %d in any %v (at most %d here); it is exact, not an estimate.\n",
		limit, window, r.busiestWindow(sw))
	fmt.Fprintf(w, "  - GCRA spends its burst of %d at 2.95s, then paces: at most %d per 100ms slot after 3.00s.\n",
		limit, r.busiestSlotAfter(gcra, boundary))
	fmt.Fprintf(w, "  - TokenBucket and LeakyBucket admit exactly what GCRA admits: one rule, described three ways.\n")
}

// dots shows an admitted count, or "." when nothing was offered.
func dots(admitted, offered int) string {
	if offered == 0 {
		return "."
	}
	return fmt.Sprint(admitted)
}

func run(w io.Writer) error {
	r, err := simulate()
	if err != nil {
		return err
	}
	r.print(w)
	return nil
}

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}
