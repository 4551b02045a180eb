package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/internal/chart"
	"github.com/sluicehq/sluice/cmd/sluice/internal/report"
	"github.com/sluicehq/sluice/cmd/sluice/internal/sim"
	"github.com/sluicehq/sluice/cmd/sluice/internal/spec"
)

const simulateUsage = `Usage: sluice simulate -limit SPEC [-limit SPEC...] -traffic SPEC [-traffic SPEC...] [flags]

Offers the same arrivals to every limit on a virtual clock and prints, per limit,
what was offered, admitted, refused and delayed, the p50/p99/max wait of the
admitted requests, the most units admitted in any window of -window (the
upstream's period by default), and whether the -upstream would ever have
refused any of it. With -charts DIR it writes rates.png/.svg (offered and
admitted units per second, a panel per limit) and waits.png/.svg.

Example:
  sluice simulate -limit fixed:100/1m -limit gcra:100/1m,burst=10 \
      -traffic spike:100@59s,100@1m -traffic poisson:1/s -duration 3m \
      -upstream 100/1m -charts out

With -downstream, the limits are adaptive pools (adaptive:aimd|vegas|gradient2[,floor=N,
initial=N,ceiling=N,...]) or static ones (pool:N) in front of a modelled downstream, and the
table has a row per phase of it: goodput, p50/p99 latency, shed and 503s; -charts writes
adaptive.svg (limit, in flight, latency, refusals over time). docs/simulator.md has the grammar.
  sluice simulate -limit pool:100 -limit adaptive:vegas,ceiling=400 \
      -downstream 'servers=100,service=10ms±1ms,queue=50,at=10s:servers=40' \
      -traffic poisson:12000/s -duration 20s -charts out
`

func simulate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	var (
		c        common
		limits   []spec.Limit
		upstream *spec.Limit
		window   time.Duration
		bin      = sim.AutoBin
		charts   string
		format   = "table"
		series   string
		ds       downstreamFlags
	)
	c.register(fs)
	ds.register(fs)
	fs.Func("limit", "a limit `spec` to simulate (repeat for several): gcra:RATE[,burst=N], token:RATE,N, leaky:RATE,N, sliding:RATE, fixed:RATE; with -downstream, adaptive:CONTROLLER[,...] or pool:N", func(s string) error {
		if spec.IsAdaptive(s) {
			return ds.addPool(s)
		}
		l, err := spec.Parse(s)
		if err != nil {
			return err
		}
		limits = append(limits, l)
		return nil
	})
	upstreamFlag(fs, &upstream, "the `limit` an upstream enforces (a bare rate such as 100/s is a sliding window): report whether each limit ever exceeds it")
	fs.Func("window", "the `length` of the windows in which the most admitted is measured (default: the upstream's period, else 1s)", positive(&window))
	fs.Func("bin", "the `width` of the charts' bins (default: a round width that draws the run in at most 2,000)", positive(&bin))
	fs.StringVar(&charts, "charts", "", "write rates.png, rates.svg, waits.png and waits.svg into `dir`")
	formatFlag(fs, &format)
	fs.StringVar(&series, "series", "", "write the binned series (units offered and admitted per bin) to `file`.csv")
	if code, done := parse(fs, simulateUsage, args, stdout, stderr); done {
		return code
	}
	if err := c.check(); err != nil {
		return usageError("simulate", err, stderr)
	}
	if ds.on() {
		return simulateDownstream(&c, &ds, limits, simulateUse{upstream != nil, series != "", c.retry.Max > 0, format, charts, bin}, stdout, stderr)
	}
	if len(limits) == 0 {
		return usageError("simulate", errors.New("no limit: give at least one -limit"), stderr)
	}
	if window == 0 {
		window = time.Second
		if upstream != nil {
			window = upstream.Rate.Per
		}
	}
	plan := c.plan()
	if d := plan.Length(); bin > 0 && d/bin > sim.MaxBins {
		return usageError("simulate", fmt.Errorf("-bin %v over %v makes more than %d bins: use a wider -bin", bin, d, sim.MaxBins), stderr)
	}
	feed, err := plan.Open()
	if err != nil {
		return failure("simulate", err, stderr)
	}
	defer feed.Close()
	cfgs := make([]sim.Config, len(limits))
	for i, l := range limits {
		cfgs[i] = sim.Config{Limit: l, MaxWait: c.maxWait, Window: window, Upstream: upstream, Bin: bin,
			Duration: plan.Length(), Origin: feed.Summary().Origin, Retry: c.retry, Seed: c.seed}
	}
	results, err := sim.RunStream(feed, cfgs)
	if err != nil {
		return failure("simulate", err, stderr)
	}
	sum := feed.Summary()
	if err := checkRun(sum); err != nil {
		return failure("simulate", err, stderr)
	}
	info := report.Run{Traffic: c.texts, Summary: sum, Seed: c.seed, MaxWait: c.maxWait, Retry: c.retry, Upstream: upstream, Window: window}
	if err := output(stdout, format, info, results); err != nil {
		return failure("simulate", err, stderr)
	}
	if series != "" {
		if err := writeSeries(series, results); err != nil {
			return failure("simulate", err, stderr)
		}
	}
	if charts != "" {
		paths, err := chart.Write(charts, results, chart.Options{Upstream: upstream, Title: strings.Join(c.texts, " + ")})
		if err != nil {
			return failure("simulate", err, stderr)
		}
		if format == "table" {
			fmt.Fprintf(stdout, "\ncharts    %s\n", strings.Join(paths, " "))
		}
	}
	return exitOK
}

// formatFlag registers -format: table, csv or json.
func formatFlag(fs *flag.FlagSet, format *string) {
	fs.Func("format", "how to print the results: `table` (the default), csv or json (schema in docs/simulator.md)", func(s string) error {
		switch s {
		case "table", "csv", "json":
			*format = s
			return nil
		}
		return fmt.Errorf("%q is not a format: want table, csv or json", s)
	})
}

// positive is a flag.Func for a positive duration.
func positive(d *time.Duration) func(string) error {
	return func(s string) error {
		v, err := time.ParseDuration(s)
		switch {
		case err != nil:
			return fmt.Errorf("%q is not a duration such as 1s or 5m", s)
		case v <= 0:
			return errors.New("it must be positive")
		}
		*d = v
		return nil
	}
}

// output prints the results in the format asked for.
func output(w io.Writer, format string, info report.Run, results []*sim.Result) error {
	switch format {
	case "json":
		return report.JSON(w, info, results)
	case "csv":
		return report.CSV(w, info, results)
	}
	return report.Simulation(w, info, results)
}

func writeSeries(path string, results []*sim.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := report.Series(f, results); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
