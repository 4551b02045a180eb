package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/internal/fit"
	"github.com/sluicehq/sluice/cmd/sluice/internal/report"
	"github.com/sluicehq/sluice/cmd/sluice/internal/spec"
	"github.com/sluicehq/sluice/cmd/sluice/internal/traffic"
)

const fitUsage = `Usage: sluice fit -traffic SPEC [-traffic SPEC...] -upstream SPEC -p99 DURATION [flags]

Searches each algorithm's parameters for the configuration that admits the most
units of the traffic while the upstream would never refuse any of them and the
admitted requests' p99 wait is at most -p99, held to the upstream less
-headroom (5% by default). Rates are tried at 100, 95, 90, 80, 70, 60 and 50% of
the upstream's, then around the best in steps down to 1%; windows at its period
and 1/2 ... 1/20 of it; sizes (burst, capacity, window limit) by binary search
from the traffic's largest cost. Every pick is simulated in full. Exits 1 when no
configuration of any algorithm fits, after naming the closest.

Example:
  sluice fit -traffic csv:traffic.csv -upstream 100/s -p99 200ms -max-wait 1s
`

func fitCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fit", flag.ContinueOnError)
	var (
		c        common
		upstream *spec.Limit
		p99      = time.Duration(-1)
		kinds    = spec.Kinds
		headroom = int64(5)
		format   = "table"
	)
	c.register(fs)
	upstreamFlag(fs, &upstream, "the `limit` the upstream enforces, never to be exceeded (a bare rate such as 100/s is a sliding window)")
	fs.Func("p99", "the goal for the admitted requests' p99 `wait`", func(s string) error {
		d, err := time.ParseDuration(s)
		switch {
		case err != nil:
			return fmt.Errorf("%q is not a duration such as 200ms", s)
		case d < 0:
			return errors.New("it must not be negative")
		}
		p99 = d
		return nil
	})
	fs.Func("algorithms", "a comma-separated `list` of the kinds to search (default gcra,token,leaky,sliding,fixed)", func(s string) error {
		kinds = nil
		for _, k := range strings.Split(s, ",") {
			kind := spec.Kind(strings.ToLower(strings.TrimSpace(k)))
			if !kind.Paced() && kind != spec.Sliding && kind != spec.Fixed {
				return fmt.Errorf("unknown algorithm %q: want gcra, token, leaky, sliding or fixed", k)
			}
			kinds = append(kinds, kind)
		}
		return nil
	})
	fs.Func("headroom", "the `percent` of the upstream to leave unused against what the model leaves out (default 5; 0 for none)", func(s string) error {
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(s), "%"), 10, 64)
		if err != nil || n < 0 || n > 90 {
			return fmt.Errorf("%q is not a whole percent from 0 to 90", s)
		}
		headroom = n
		return nil
	})
	formatFlag(fs, &format)
	if code, done := parse(fs, fitUsage, args, stdout, stderr); done {
		return code
	}
	switch err := c.check(); {
	case err != nil:
		return usageError("fit", err, stderr)
	case upstream == nil:
		return usageError("fit", errors.New("no upstream: give -upstream, such as -upstream 100/s"), stderr)
	case p99 < 0:
		return usageError("fit", errors.New("no goal: give -p99, such as -p99 200ms"), stderr)
	}
	tr, sum, err := load(c.plan())
	if err != nil {
		return failure("fit", err, stderr)
	}
	goal := fit.Goal{Upstream: *upstream, P99: p99, MaxWait: c.maxWait, Duration: sum.Duration, Origin: sum.Origin, Headroom: headroom,
		Retry: c.retry, Seed: c.seed}
	bests, err := fit.Search(tr, goal, kinds)
	if err != nil {
		return failure("fit", err, stderr)
	}
	info := report.Run{Traffic: c.texts, Summary: sum, Seed: c.seed, MaxWait: c.maxWait, Retry: c.retry, Upstream: upstream}
	print := report.Fit
	switch format {
	case "json":
		print = report.FitJSON
	case "csv":
		print = report.FitCSV
	}
	if err := print(stdout, info, goal, bests); err != nil {
		return failure("fit", err, stderr)
	}
	if fit.Overall(bests) == nil {
		return exitFail
	}
	return exitOK
}

// fitInMemory is the most arrivals fit holds in memory (24 bytes each:
// 48 MB) to replay them for every candidate; beyond it, each candidate
// reads the traffic afresh, files and all, so that memory stays that of
// one run whatever the traffic.
var fitInMemory = 2 << 20

// load reads the plan once, for its summary, keeping the arrivals when
// there are at most fitInMemory of them, and returns what fit replays.
func load(p traffic.Plan) (fit.Traffic, traffic.Summary, error) {
	f, err := p.Open()
	if err != nil {
		return fit.Traffic{}, traffic.Summary{}, err
	}
	defer f.Close()
	kept, buf := []traffic.Arrival{}, make([]traffic.Arrival, 8192)
	for {
		n, err := f.Read(buf)
		if kept != nil && len(kept)+n <= fitInMemory {
			kept = append(kept, buf[:n]...)
		} else {
			kept = nil
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return fit.Traffic{}, traffic.Summary{}, err
		}
	}
	sum := f.Summary()
	if err := checkRun(sum); err != nil {
		return fit.Traffic{}, sum, err
	}
	if kept != nil {
		return fit.InMemory(kept), sum, nil
	}
	// The run's length is known now: given, the stream needs no first
	// pass over the files for it.
	p.Duration = sum.Duration
	return fit.Traffic{Open: func() (traffic.Stream, error) { return p.Open() }, MaxCost: sum.MaxCost}, sum, nil
}
