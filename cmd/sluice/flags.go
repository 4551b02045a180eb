package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/internal/human"
	"github.com/sluicehq/sluice/cmd/sluice/internal/sim"
	"github.com/sluicehq/sluice/cmd/sluice/internal/spec"
	"github.com/sluicehq/sluice/cmd/sluice/internal/traffic"
)

// maxDuration bounds -duration: a year of traffic, so that with the
// simulator's horizon (ten times the run) every instant stays far inside
// what the algorithms and time.Time can tell apart.
const maxDuration = 366 * 24 * time.Hour

// common holds the flags simulate and fit share: the traffic and the
// callers.
type common struct {
	patterns    []traffic.Pattern
	texts       []string // the patterns as given, for the report
	duration    time.Duration
	durationSet bool
	seed        uint64
	maxWait     time.Duration
	retry       sim.Retry // the zero Retry: callers do not retry
}

func (c *common) register(fs *flag.FlagSet) {
	c.maxWait = sim.Forever
	fs.Func("traffic", "a traffic `pattern` (repeat to merge): steady:RATE, poisson:RATE, onoff:RATE,on=D,off=D, spike:N@AT,..., csv:FILE, log:FILE, jsonl:FILE,time=F", func(s string) error {
		p, err := traffic.Parse(s)
		if err != nil {
			return err
		}
		c.patterns, c.texts = append(c.patterns, p), append(c.texts, strings.TrimSpace(s))
		return nil
	})
	fs.Func("duration", "how much traffic to generate (default 1m, or a csv replay's own span)", func(s string) error {
		d, err := time.ParseDuration(s)
		switch {
		case err != nil:
			return fmt.Errorf("%q is not a duration such as 90s or 1h", s)
		case d <= 0:
			return errors.New("it must be positive")
		case d > maxDuration:
			return fmt.Errorf("%s is longer than the simulator's limit of %s", human.Exact(d), human.Exact(maxDuration))
		}
		c.duration, c.durationSet = d, true
		return nil
	})
	fs.Uint64Var(&c.seed, "seed", 1, "the seed of random traffic (poisson, cost ranges): the same seed, the same run")
	fs.Func("max-wait", "how long a caller may wait, or `forever` (the default, as actor.Limiter); 0: never wait", func(s string) error {
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "forever", "none", "inf":
			c.maxWait = sim.Forever
			return nil
		}
		d, err := time.ParseDuration(s)
		switch {
		case err != nil:
			return fmt.Errorf("%q is neither a duration (250ms, 2s) nor forever", s)
		case d < 0:
			return errors.New("it must not be negative (use forever for no limit)")
		}
		c.maxWait = d
		return nil
	})
	fs.Func("retry", "make refused callers retry: `options` max=N, after=retry-after|exp, base=D, cap=D, jitter=none|full|equal (default max=3,after=retry-after,jitter=full)", func(s string) error {
		r, err := sim.ParseRetry(s)
		c.retry = r
		return err
	})
}

// check reports what is missing once the flags are parsed.
func (c *common) check() error {
	if len(c.patterns) == 0 {
		return errors.New("no traffic: give at least one -traffic")
	}
	return nil
}

// plan is the traffic the flags describe.
func (c *common) plan() traffic.Plan {
	d := time.Duration(0) // the default: a minute, the spikes', or the files' own span
	if c.durationSet {
		d = c.duration
	}
	return traffic.Plan{Patterns: c.patterns, Duration: d, Seed: c.seed}
}

// checkRun refuses a run with no arrivals, which would print an empty
// table, and a replay longer than the simulator's limit.
func checkRun(s traffic.Summary) error {
	switch {
	case s.Arrivals == 0 && s.Dropped > 0:
		return fmt.Errorf("no arrivals in the run's %s: all %d are at or after -duration (the first at %s)", human.Exact(s.Duration), s.Dropped, human.Exact(s.FirstDropped))
	case s.Arrivals == 0:
		return fmt.Errorf("no arrivals in the run's %s: the traffic makes none (an empty file, or patterns that start later?)", human.Exact(s.Duration))
	case s.Duration > maxDuration:
		return fmt.Errorf("the replay spans %s, longer than the simulator's limit of %s: give a shorter -duration", human.Exact(s.Duration), human.Exact(maxDuration))
	}
	return nil
}

func upstreamFlag(fs *flag.FlagSet, up **spec.Limit, help string) {
	fs.Func("upstream", help, func(s string) error {
		l, err := spec.ParseUpstream(s)
		if err != nil {
			return err
		}
		*up = &l
		return nil
	})
}

// parse parses args with fs. It reports done when the command should end
// at once with code: -h (usage on stdout, 0) or a bad flag (a message on
// stderr, 2).
func parse(fs *flag.FlagSet, text string, args []string, stdout, stderr io.Writer) (code int, done bool) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, text+"\nFlags:\n")
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return exitOK, true
	case err != nil:
		return usageError(fs.Name(), err, stderr), true
	case fs.NArg() > 0:
		return usageError(fs.Name(), fmt.Errorf("unexpected argument %q (flags come as -name value)", fs.Arg(0)), stderr), true
	}
	return 0, false
}

func usageError(cmd string, err error, stderr io.Writer) int {
	fmt.Fprintf(stderr, "sluice %s: %v\nRun 'sluice %s -h' for usage.\n", cmd, err, cmd)
	return exitUsage
}

func failure(cmd string, err error, stderr io.Writer) int {
	fmt.Fprintf(stderr, "sluice %s: %v\n", cmd, err)
	return exitFail
}
