package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/internal/demoapi"
)

// progress is the live display: one line redrawn with \r on a terminal,
// a plain line every second otherwise.
type progress struct {
	w        io.Writer
	terminal bool
}

func newProgress(w io.Writer, terminal bool) *progress { return &progress{w: w, terminal: terminal} }

// start draws until the returned stop is called; stop draws the last line.
func (p *progress) start(cfg config, live *liveCounts, tr *httplimit.Transport, conns *actor.Pool) (stop func()) {
	every := time.Duration(cfg.progressEvery)
	if !p.terminal {
		every = max(every, time.Second)
	}
	begin := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				p.draw(cfg, live, tr, conns, time.Since(begin), false)
			case <-done:
				p.draw(cfg, live, tr, conns, time.Since(begin), true)
				return
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

func (p *progress) draw(cfg config, live *liveCounts, tr *httplimit.Transport, conns *actor.Pool, elapsed time.Duration, last bool) {
	secs := max(elapsed.Seconds(), 1e-9)
	st := conns.Stats()
	line := fmt.Sprintf("%4d/%d jobs  429s %d  %5.1f req/s  %9s tokens/min  in flight %2d  waiting for a slot %2d  %5.1fs",
		live.done.Load(), cfg.jobs, tr.Stats().Throttled, float64(live.done.Load())/secs,
		demoapi.Grouped(int64(float64(live.tokens.Load())/secs*60)), st.InFlight, st.Waiting, secs)
	switch {
	case !p.terminal:
		fmt.Fprintln(p.w, line)
	case last:
		fmt.Fprintf(p.w, "\r%s\n", line)
	default:
		fmt.Fprintf(p.w, "\r%s%s", line, strings.Repeat(" ", 2))
	}
}
