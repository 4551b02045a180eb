// Command lanes shows fair shares inside one limit (issue 14): a batch
// tenant and an interactive tenant share one API key of 200 requests per
// second. The batch queues 600 requests at once, a three-second backlog;
// the interactive tenant sends one request every 50ms for those three
// seconds. The program runs the same traffic three times and prints, for
// each tenant, its share of the grants made while both were asking, the
// 99th percentile of its waits and when its last request was granted:
//
//   - one FIFO (no lanes): every interactive request waits behind what is
//     left of the batch, seconds;
//
//   - lanes of weight 1 each: the interactive tenant asks for less than its
//     half, so each request waits for one or two grants (a tie with the
//     batch's head goes to the one that arrived first), and the batch gets
//     every grant the interactive tenant does not use: the key is used in
//     full, and all is done at the same instant as with one FIFO;
//
//   - the interactive lane at a higher priority, with a floor of a tenth for
//     the batch: at most one grant's wait, and under an interactive flood
//     the batch would still keep a tenth.
//
//     go run ./examples/lanes
//     go run ./examples/lanes -rate 100 -batch 300 -every 20ms -for 3s
//
// It takes about three seconds a run, in real time; its test runs it in a
// testing/synctest bubble, where time is virtual and the output exact.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
)

type config struct {
	rate  int           // the API key's requests per second
	batch int           // requests the batch tenant queues at once
	every time.Duration // between two interactive requests
	span  time.Duration // how long the interactive tenant keeps asking
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("lanes", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&cfg.rate, "rate", 200, "the API key's limit, requests per second")
	fs.IntVar(&cfg.batch, "batch", 600, "requests the batch tenant queues at once")
	fs.DurationVar(&cfg.every, "every", 50*time.Millisecond, "time between two interactive requests")
	fs.DurationVar(&cfg.span, "for", 3*time.Second, "how long the interactive tenant keeps asking")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if cfg.rate < 1 || cfg.batch < 1 || cfg.every <= 0 || cfg.span < cfg.every {
		return cfg, errors.New("lanes: -rate and -batch must be positive, -every positive and -for at least -every")
	}
	return cfg, nil
}

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err == nil {
		err = run(cfg, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

// mode is one way of sharing the key.
type mode struct {
	name  string
	lanes func(lim *actor.Limiter) (batch, interactive permits.Limiter, err error)
}

var modes = []mode{
	{"one FIFO", func(lim *actor.Limiter) (permits.Limiter, permits.Limiter, error) { return lim, lim, nil }},
	{"lanes 1:1", func(lim *actor.Limiter) (permits.Limiter, permits.Limiter, error) {
		batch, err := lim.Lane("batch", 1)
		if err != nil {
			return nil, nil, err
		}
		interactive, err := lim.Lane("interactive", 1)
		return batch, interactive, err
	}},
	{"interactive first", func(lim *actor.Limiter) (permits.Limiter, permits.Limiter, error) {
		batch, err := lim.Lane("batch", 1)
		if err != nil {
			return nil, nil, err
		}
		interactive, err := lim.Lane("interactive", 1, actor.WithPriority(1))
		if err != nil {
			return nil, nil, err
		}
		return batch, interactive, lim.SetPriorityFloor(0.1)
	}},
}

func run(cfg config, w io.Writer) error {
	fmt.Fprintf(w, "one API key at %d requests/s: a batch of %d queued at once, an interactive request every %v for %v\n\n",
		cfg.rate, cfg.batch, cfg.every, cfg.span)
	fmt.Fprintf(w, "%-18s  %-30s  %-30s\n", "", "batch", "interactive")
	fmt.Fprintf(w, "%-18s  %8s %10s %10s  %8s %10s %10s\n", "", "share", "p99 wait", "done at", "share", "p99 wait", "done at")
	for _, m := range modes {
		batch, interactive, err := share(cfg, m)
		if err != nil {
			return err
		}
		total := batch.inWindow + interactive.inWindow
		fmt.Fprintf(w, "%-18s  %7.1f%% %10v %10v  %7.1f%% %10v %10v\n", m.name,
			100*float64(batch.inWindow)/float64(total), batch.p99(), batch.last.Round(time.Millisecond),
			100*float64(interactive.inWindow)/float64(total), interactive.p99(), interactive.last.Round(time.Millisecond))
	}
	fmt.Fprintf(w, "\nshare: of the grants in the first %v, while both ask; done at: the tenant's last grant\n", cfg.span)
	return nil
}

// tenant is what one tenant saw.
type tenant struct {
	mu       sync.Mutex
	waits    []time.Duration
	inWindow int           // grants before the end of the interactive span
	last     time.Duration // the latest grant, since the start
}

func (t *tenant) record(asked, start time.Time, span time.Duration) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.waits = append(t.waits, now.Sub(asked))
	if now.Sub(start) < span {
		t.inWindow++
	}
	t.last = max(t.last, now.Sub(start))
}

// p99 is the wait 99% of the requests did not exceed, to the millisecond.
func (t *tenant) p99() time.Duration {
	w := slices.Clone(t.waits)
	slices.Sort(w)
	return w[(len(w)*99+99)/100-1].Round(time.Millisecond)
}

// share runs the traffic once through a fresh limiter shared as m says.
func share(cfg config, m mode) (batch, interactive *tenant, err error) {
	gcra, err := algorithms.NewGCRA(algorithms.PerSecond(int64(cfg.rate)), 1)
	if err != nil {
		return nil, nil, err
	}
	lim := actor.MustNew(gcra, actor.WithName("api-key"))
	defer lim.Close()
	b, i, err := m.lanes(lim)
	if err != nil {
		return nil, nil, err
	}
	batch, interactive = &tenant{}, &tenant{}
	start := time.Now()
	var wg sync.WaitGroup
	var failed error
	var once sync.Once
	ask := func(lim permits.Limiter, t *tenant) {
		defer wg.Done()
		asked := time.Now()
		if _, err := lim.Acquire(context.Background(), 1); err != nil {
			once.Do(func() { failed = err })
			return
		}
		t.record(asked, start, cfg.span)
	}
	for range cfg.batch {
		wg.Add(1)
		go ask(b, batch)
	}
	// The interactive tenant starts one interval later: by then the
	// batch is queued, whatever order its goroutines ran in. Half a grant
	// off the key's pace, so that in a test's virtual time no request
	// arrives at the very instant of a grant, which the owner could take in
	// either order.
	time.Sleep(time.Second / time.Duration(2*cfg.rate))
	tick := time.NewTicker(cfg.every)
	defer tick.Stop()
	for n := cfg.every; n <= cfg.span; n += cfg.every {
		<-tick.C
		wg.Add(1)
		go ask(i, interactive)
	}
	wg.Wait()
	return batch, interactive, failed
}
