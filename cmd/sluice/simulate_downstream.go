package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/internal/report"
	"github.com/sluicehq/sluice/cmd/sluice/internal/sim"
	"github.com/sluicehq/sluice/cmd/sluice/internal/spec"
	"github.com/sluicehq/sluice/internal/downstream"
)

// downstreamFlags are simulate's flags for pools in front of a modelled
// downstream: -downstream, and the -limit specs that are pools.
type downstreamFlags struct {
	model *downstream.Config
	text  string // the model's canonical form
	pools []spec.Adaptive
}

func (d *downstreamFlags) register(fs *flag.FlagSet) {
	fs.Func("downstream", "model a downstream `spec` behind adaptive pools: servers=N,service=D[±S]|exp:D[,queue=N][,at=INSTANT:FIELD=VALUE...]", func(s string) error {
		c, err := spec.ParseDownstream(s)
		if err != nil {
			return err
		}
		d.model, d.text = &c, spec.FormatDownstream(c)
		return nil
	})
}

func (d *downstreamFlags) addPool(s string) error {
	a, err := spec.ParseAdaptive(s)
	if err != nil {
		return err
	}
	d.pools = append(d.pools, a)
	return nil
}

// on reports whether the run is one of pools in front of a downstream.
func (d *downstreamFlags) on() bool { return d.model != nil || len(d.pools) > 0 }

// simulateUse is what else the command line asked for, which a run of
// pools must refuse or honour.
type simulateUse struct {
	upstream, series, retry bool
	format, charts          string
	bin                     time.Duration
}

// simulateDownstream runs the pools against the modelled downstream.
func simulateDownstream(c *common, d *downstreamFlags, limits []spec.Limit, use simulateUse, stdout, stderr io.Writer) int {
	if err := d.check(limits, use); err != nil {
		return usageError("simulate", err, stderr)
	}
	plan := c.plan()
	feed, err := plan.Open()
	if err != nil {
		return failure("simulate", err, stderr)
	}
	defer feed.Close()
	run := sim.Downstream{Config: *d.model, Bin: use.bin, Duration: plan.Length(), Seed: c.seed}
	for _, a := range d.pools {
		run.Pools = append(run.Pools, a.Pool())
	}
	results, err := sim.RunDownstream(feed, run)
	if err != nil {
		return failure("simulate", err, stderr)
	}
	sum := feed.Summary()
	if err := checkRun(sum); err != nil {
		return failure("simulate", err, stderr)
	}
	info := report.Run{Traffic: c.texts, Summary: sum, Seed: c.seed}
	if err := report.Downstream(stdout, info, d.text, results); err != nil {
		return failure("simulate", err, stderr)
	}
	if use.charts != "" {
		path, err := writeDownstreamChart(use.charts, strings.Join(c.texts, " + ")+" against "+d.text, *d.model, results)
		if err != nil {
			return failure("simulate", err, stderr)
		}
		fmt.Fprintf(stdout, "\ncharts    %s\n", path)
	}
	return exitOK
}

// check refuses what a run of pools cannot do.
func (d *downstreamFlags) check(limits []spec.Limit, use simulateUse) error {
	switch {
	case d.model == nil:
		return errors.New("adaptive:... and pool:N limits need a -downstream to stand in front of")
	case len(d.pools) == 0:
		return errors.New("-downstream needs at least one -limit adaptive:CONTROLLER or pool:N")
	case len(limits) > 0:
		return fmt.Errorf("-limit %v is a rate limit: with -downstream every -limit is adaptive:... or pool:N", limits[0])
	case use.upstream:
		return errors.New("-upstream does not apply to -downstream: the downstream's capacity is its limit")
	case use.retry:
		return errors.New("-retry does not apply to -downstream yet: the pool's callers do not retry")
	case use.series:
		return errors.New("-series does not apply to -downstream yet: use -charts")
	case use.format != "table":
		return fmt.Errorf("-format %s does not apply to -downstream yet: it prints a table", use.format)
	}
	return nil
}

// writeDownstreamChart draws DIR/adaptive.svg.
func writeDownstreamChart(dir, title string, c downstream.Config, results []*downstream.Result) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "adaptive.svg")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	if err := downstream.SVG(f, title, c, results); err != nil {
		f.Close()
		return "", err
	}
	return path, f.Close()
}
