package traffic

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/cmd/sluice/internal/human"
)

// ErrInvalid is matched, with errors.Is, by every error Parse, ReadCSV and
// Generate return for traffic they cannot honour.
var ErrInvalid = errors.New("invalid traffic")

// Kind names a pattern.
type Kind string

// The kinds, as written before the colon.
const (
	Steady  Kind = "steady"
	Poisson Kind = "poisson"
	OnOff   Kind = "onoff"
	Spike   Kind = "spike"
	CSV     Kind = "csv"
	Log     Kind = "log"   // Common or Combined Log Format
	JSONL   Kind = "jsonl" // one JSON object per line
)

// file reports whether the kind replays a file.
func (k Kind) file() bool { return k == CSV || k == Log || k == JSONL }

// Fields names what a file's rows hold: jsonl's field names, and a log's
// key ("host", the default, or "user"; "" for none).
type Fields struct {
	Time, Key, Cost string
}

// Pattern is one parsed traffic description.
type Pattern struct {
	Kind        Kind
	Rate        algorithms.Rate // steady, poisson, onoff
	On, Off     time.Duration   // onoff
	Spikes      []SpikeAt       // spike
	Path        string          // csv, log, jsonl
	Fields      Fields          // log, jsonl
	CostMin     int64           // generated kinds: costs are drawn from
	CostMax     int64           // [CostMin, CostMax]; both 1 by default
	From, Until time.Duration   // generated kinds; Until 0 is the end of the run
	// Keys spreads a generated kind's arrivals over that many keys, named
	// k1 ... kN (0: no key); Zipf, when above 1, draws them with Zipf's
	// law of that exponent (k1 the busiest), else uniformly.
	Keys int64
	Zipf float64
}

// MaxKeys bounds keys=: each key of a per-key limit holds an algorithm.
const MaxKeys = 100_000_000

// DefaultZipf is spread=zipf's exponent: a few keys take most of the
// traffic, as the clients of a public API do.
const DefaultZipf = 1.1

// SpikeAt is N arrivals at one instant.
type SpikeAt struct {
	N  int64
	At time.Duration
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// Parse reads one pattern in the grammar of the package documentation. A
// csv pattern's file is read by Generate, not here.
func Parse(s string) (Pattern, error) {
	p, err := parse(s)
	if err != nil {
		return Pattern{}, fmt.Errorf("%w %q: %w", ErrInvalid, s, err)
	}
	return p, nil
}

func parse(s string) (Pattern, error) {
	head, rest, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return Pattern{}, errors.New("want KIND:ARGS, such as poisson:100/s or spike:200@59s")
	}
	p := Pattern{Kind: Kind(strings.ToLower(strings.TrimSpace(head))), CostMin: 1, CostMax: 1}
	if p.Kind.file() {
		return p, p.fileArgs(strings.TrimSpace(rest))
	}
	switch p.Kind {
	case Steady, Poisson, OnOff, Spike:
	default:
		return Pattern{}, fmt.Errorf("unknown kind %q: want one of steady, poisson, onoff, spike, csv, log, jsonl", head)
	}
	seen := map[string]bool{}
	for _, arg := range strings.Split(rest, ",") {
		arg = strings.TrimSpace(arg)
		name, value, named := strings.Cut(arg, "=")
		name, value = strings.ToLower(strings.TrimSpace(name)), strings.TrimSpace(value)
		if !named {
			if err := p.positional(arg); err != nil {
				return Pattern{}, err
			}
			continue
		}
		if seen[name] {
			return Pattern{}, fmt.Errorf("%s= is given twice", name)
		}
		seen[name] = true
		if err := p.option(name, value); err != nil {
			return Pattern{}, err
		}
	}
	return p, p.check(seen)
}

func (p *Pattern) positional(arg string) error {
	switch {
	case arg == "":
		return errors.New("empty argument")
	case p.Kind == Spike:
		n, at, ok := strings.Cut(arg, "@")
		if !ok {
			return fmt.Errorf("spike wants N@AT such as 200@59s, not %q", arg)
		}
		count, err := strconv.ParseInt(strings.TrimSpace(n), 10, 64)
		if err != nil || count < 1 {
			return fmt.Errorf("spike count %q is not a whole number of at least 1", n)
		}
		d, err := instant("spike instant", strings.TrimSpace(at))
		if err != nil {
			return err
		}
		p.Spikes = append(p.Spikes, SpikeAt{N: count, At: d})
	case p.Rate.Count != 0:
		return fmt.Errorf("the rate is given twice (or %q is not NAME=VALUE)", arg)
	default:
		r, err := algorithms.ParseRate(arg)
		if err != nil {
			return err
		}
		p.Rate = r
	}
	return nil
}

func (p *Pattern) option(name, value string) error {
	var err error
	switch name {
	case "cost":
		p.CostMin, p.CostMax, err = costs(value)
	case "from":
		p.From, err = instant("from", value)
	case "until":
		p.Until, err = instant("until", value)
		if err == nil && p.Until == 0 {
			err = errors.New("until=0 leaves no arrivals")
		}
	case "keys":
		p.Keys, err = strconv.ParseInt(value, 10, 64)
		if err != nil || p.Keys < 1 || p.Keys > MaxKeys {
			err = fmt.Errorf("keys %q is not a whole number from 1 to %d", value, MaxKeys)
		}
	case "spread":
		p.Zipf, err = spread(value)
	case "on", "off":
		if p.Kind != OnOff {
			return fmt.Errorf("%s= is for onoff only", name)
		}
		var d time.Duration
		if d, err = instant(name, value); err == nil && d <= 0 {
			err = fmt.Errorf("%s= must be positive", name)
		}
		if name == "on" {
			p.On = d
		} else {
			p.Off = d
		}
	default:
		return fmt.Errorf("unknown option %q: want cost=, from=, until=, keys=, spread= (and on=, off= for onoff)", name)
	}
	return err
}

// check reports what is missing or contradictory once every argument is in.
func (p *Pattern) check(seen map[string]bool) error {
	switch {
	case p.Kind == Spike && len(p.Spikes) == 0:
		return errors.New("spike needs at least one N@AT, such as 200@59s")
	case p.Kind == Spike && (seen["from"] || seen["until"]):
		return errors.New("spike takes its instants as N@AT, not from= or until=")
	case p.Kind != Spike && p.Rate.Count == 0:
		return fmt.Errorf("%s needs a rate (COUNT/PERIOD such as 100/s)", p.Kind)
	case p.Kind == OnOff && (p.On == 0 || p.Off == 0):
		return errors.New("onoff needs on= and off= durations, such as on=10s,off=50s")
	case p.Kind == OnOff && p.On > math.MaxInt64-p.Off:
		return errors.New("on= plus off= is longer than time.Duration can hold")
	case seen["spread"] && p.Keys == 0:
		return errors.New("spread= needs keys=N, the number of keys to spread over")
	case p.Until != 0 && p.Until <= p.From:
		return fmt.Errorf("until=%v is not after from=%v", p.Until, p.From)
	}
	return nil
}

// spread reads spread=: uniform (0), zipf (DefaultZipf) or zipf:S, S > 1.
func spread(s string) (float64, error) {
	switch name, exp, ok := strings.Cut(strings.ToLower(s), ":"); {
	case name == "uniform" && !ok:
		return 0, nil
	case name == "zipf" && !ok:
		return DefaultZipf, nil
	case name == "zipf":
		v, err := strconv.ParseFloat(exp, 64)
		if err != nil || !(v > 1 && v <= 100) {
			return 0, fmt.Errorf("zipf exponent %q is not a number above 1 (such as 1.1)", exp)
		}
		return v, nil
	}
	return 0, fmt.Errorf("spread %q: want uniform, zipf or zipf:S (S above 1)", s)
}

// instant reads a non-negative Go duration.
func instant(what, s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%s %q is not a duration such as 1.5s or 2m", what, s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%s %q is before the start", what, s)
	}
	return d, nil
}

func costs(s string) (lo, hi int64, err error) {
	a, b, isRange := strings.Cut(s, "-")
	lo, err1 := strconv.ParseInt(strings.TrimSpace(a), 10, 64)
	hi, err2 := lo, error(nil)
	if isRange {
		hi, err2 = strconv.ParseInt(strings.TrimSpace(b), 10, 64)
	}
	switch {
	case err1 != nil || err2 != nil || lo < 1:
		return 0, 0, fmt.Errorf("cost %q is not a whole number of at least 1 nor a range such as 1-10", s)
	case hi < lo:
		return 0, 0, fmt.Errorf("cost range %q runs backwards", s)
	}
	return lo, hi, nil
}

// String formats the pattern so that Parse reads it back.
func (p Pattern) String() string {
	if p.Kind.file() {
		return p.fileString()
	}
	var b strings.Builder
	b.WriteString(string(p.Kind) + ":")
	if p.Kind == Spike {
		for i, s := range p.Spikes {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%d@%s", s.N, human.Exact(s.At))
		}
	} else {
		b.WriteString(p.Rate.String())
	}
	if p.Kind == OnOff {
		fmt.Fprintf(&b, ",on=%s,off=%s", human.Exact(p.On), human.Exact(p.Off))
	}
	switch {
	case p.CostMin != p.CostMax:
		fmt.Fprintf(&b, ",cost=%d-%d", p.CostMin, p.CostMax)
	case p.CostMin != 1:
		fmt.Fprintf(&b, ",cost=%d", p.CostMin)
	}
	if p.From != 0 {
		fmt.Fprintf(&b, ",from=%s", human.Exact(p.From))
	}
	if p.Until != 0 {
		fmt.Fprintf(&b, ",until=%s", human.Exact(p.Until))
	}
	if p.Keys != 0 {
		fmt.Fprintf(&b, ",keys=%d", p.Keys)
	}
	if p.Zipf != 0 {
		fmt.Fprintf(&b, ",spread=zipf:%s", strconv.FormatFloat(p.Zipf, 'g', -1, 64))
	}
	return b.String()
}
