// Command compare measures sluice side by side with the libraries users
// would pick instead, in the same run on the same machine, and prints
// Markdown tables with the median of several runs, the ratio per pair and
// whether each goal is met.
//
//	go run -C bench ./cmd/compare          # the full run, a few minutes
//	go run -C bench ./cmd/compare -quick   # the CI run, well under a minute
//
// Subjects are interleaved (sluice, peer, sluice, peer, ...) so that a
// machine that slows down during the run slows every subject alike.
// Progress goes to stderr, the tables to stdout. The exit status is 0
// whether or not the goals are met; only a scenario that cannot run (a
// constructor fails, a Wait returns an error) makes it 1.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"strings"
	"time"
)

// config is what the flags select.
type config struct {
	quick bool
	model bool          // run the adaptive model downstream (a go test of its own)
	d     time.Duration // per measurement of a per-call cost
	count int           // runs of each subject for per-call costs
	heavy int           // runs of each subject for the waiting scenarios
	only  *regexp.Regexp

	wait  []waitCase
	storm stormCase
	heapN int
}

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		os.Exit(2)
	}
	if err := run(cfg, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "a short run for CI: shorter measurements, fewer runs, scaled-down waiting scenarios")
	d := fs.Duration("d", 200*time.Millisecond, "time per measurement of a per-call cost (quick: 20ms)")
	count := fs.Int("count", 5, "runs of each subject for per-call costs; the waiting scenarios run (count+1)/2 times (quick: 3)")
	only := fs.String("only", "", "run only the sections whose name matches this regexp: decision, rates, roundtrip, wait, storm, heap, pool, adaptive, breaker, budget, retry, keyed, middleware, redis")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: go run -C bench ./cmd/compare [flags]\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	cfg := config{quick: *quick, d: *d, count: *count, model: true}
	if *quick {
		if !set["d"] {
			cfg.d = 20 * time.Millisecond
		}
		if !set["count"] {
			cfg.count = 3
		}
	}
	if cfg.count < 1 || cfg.d <= 0 {
		fmt.Fprintln(stderr, "compare: -count must be at least 1 and -d positive")
		return config{}, fmt.Errorf("invalid flags")
	}
	cfg.heavy = (cfg.count + 1) / 2
	re, err := regexp.Compile(*only)
	if err != nil {
		fmt.Fprintln(stderr, "compare: -only:", err)
		return config{}, err
	}
	cfg.only = re
	cfg.wait, cfg.storm, cfg.heapN = workloads(*quick)
	return cfg, nil
}

// run measures every selected section and writes the report to out.
func run(cfg config, out, progress io.Writer) error {
	r := &runner{cfg: cfg, progress: progress}
	n := startNoise()
	var body strings.Builder
	for _, s := range sections {
		if !cfg.only.MatchString(s.name) {
			continue
		}
		s.run(r, &body)
	}
	var b strings.Builder
	writeHeader(&b, cfg, n.report())
	b.WriteString(body.String())
	if _, err := io.WriteString(out, b.String()); err != nil {
		return err
	}
	if len(r.errs) > 0 {
		return fmt.Errorf("%d scenarios could not run; first: %w", len(r.errs), r.errs[0])
	}
	return nil
}

type section struct {
	name string
	run  func(*runner, *strings.Builder)
}

var sections = []section{
	{"decision", decisionSection},
	{"rates", userRatesSection},
	{"roundtrip", roundTripSection},
	{"wait", waitSection},
	{"storm", stormSection},
	{"heap", heapSection},
	{"pool", poolSection},
	{"adaptive", adaptiveSection},
	{"breaker", func(r *runner, b *strings.Builder) { breakerSection(r, b) }},
	{"budget", func(r *runner, b *strings.Builder) { budgetSection(r, b) }},
	{"retry", measureRetry},
	{"keyed", keyedSection},
	{"middleware", middlewareSection},
	{"redis", redisSection},
}

// The sections for packages that other work adds to the tree are set by
// the files that import them (breaker.go, budget.go); until those files are
// in, the tables say so instead of failing to build.
var (
	breakerSection = notAvailable("Circuit breaker", "breaker")
	budgetSection  = notAvailable("Retry budget", "budget")
)

func notAvailable(title, pkg string) func(*runner, *strings.Builder) {
	return func(r *runner, b *strings.Builder) {
		fmt.Fprintf(b, "## %s\n\nNot available yet: this build of bench does not include package %s.\n\n", title, pkg)
		r.logf("%s: not available yet", title)
	}
}

func writeHeader(b *strings.Builder, cfg config, noise string) {
	mode := "full"
	if cfg.quick {
		mode = "quick"
	}
	fmt.Fprintf(b, "# sluice side by side\n\n")
	fmt.Fprintf(b, "Machine: %s, %d CPUs, GOMAXPROCS=%d; %s %s/%s.  \n", cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(b, "Run: %s mode, `-d %v -count %d`; each figure is the median of %d runs (waiting scenarios: %d), subjects interleaved.\n",
		mode, cfg.d, cfg.count, cfg.count, cfg.heavy)
	fmt.Fprintf(b, "%s\n\n", noise)
}

// cpuModel returns the first "model name" of /proc/cpuinfo, or GOARCH.
func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				return strings.TrimSpace(v)
			}
		}
	}
	return runtime.GOARCH
}
