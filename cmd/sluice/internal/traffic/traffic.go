package traffic

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/cmd/sluice/internal/muldiv"
)

// ErrInvalid is matched, with errors.Is, by every error Parse, ReadCSV and
// Generate return for traffic they cannot honour.
var ErrInvalid = errors.New("invalid traffic")

// MaxArrivals bounds one run, so that a typo such as steady:1/ns over an
// hour is an error rather than a machine out of memory: 16 bytes each, 20
// million is 320 MB.
const MaxArrivals = 20_000_000

// Arrival is one request: its instant after the start of the run and its
// cost in units.
type Arrival struct {
	At   time.Duration
	Cost int64
}

// Kind names a pattern.
type Kind string

// The kinds, as written before the colon.
const (
	Steady  Kind = "steady"
	Poisson Kind = "poisson"
	OnOff   Kind = "onoff"
	Spike   Kind = "spike"
	CSV     Kind = "csv"
)

// Pattern is one parsed traffic description.
type Pattern struct {
	Kind        Kind
	Rate        algorithms.Rate // steady, poisson, onoff
	On, Off     time.Duration   // onoff
	Spikes      []SpikeAt       // spike
	Path        string          // csv
	CostMin     int64           // generated kinds: costs are drawn from
	CostMax     int64           // [CostMin, CostMax]; both 1 by default
	From, Until time.Duration   // generated kinds; Until 0 is the end of the run
}

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
	if p.Kind == CSV {
		// The path is everything after the colon: it may hold commas.
		if p.Path = strings.TrimSpace(rest); p.Path == "" {
			return Pattern{}, errors.New("csv needs a file: csv:PATH")
		}
		return p, nil
	}
	switch p.Kind {
	case Steady, Poisson, OnOff, Spike:
	default:
		return Pattern{}, fmt.Errorf("unknown kind %q: want one of steady, poisson, onoff, spike, csv", head)
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
		return fmt.Errorf("unknown option %q: want cost=, from=, until= (and on=, off= for onoff)", name)
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
	case p.Until != 0 && p.Until <= p.From:
		return fmt.Errorf("until=%v is not after from=%v", p.Until, p.From)
	}
	return nil
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
	if p.Kind == CSV {
		return "csv:" + p.Path
	}
	var b strings.Builder
	b.WriteString(string(p.Kind) + ":")
	if p.Kind == Spike {
		for i, s := range p.Spikes {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%d@%v", s.N, s.At)
		}
	} else {
		b.WriteString(p.Rate.String())
	}
	if p.Kind == OnOff {
		fmt.Fprintf(&b, ",on=%v,off=%v", p.On, p.Off)
	}
	switch {
	case p.CostMin != p.CostMax:
		fmt.Fprintf(&b, ",cost=%d-%d", p.CostMin, p.CostMax)
	case p.CostMin != 1:
		fmt.Fprintf(&b, ",cost=%d", p.CostMin)
	}
	if p.From != 0 {
		fmt.Fprintf(&b, ",from=%v", p.From)
	}
	if p.Until != 0 {
		fmt.Fprintf(&b, ",until=%v", p.Until)
	}
	return b.String()
}

// Generate returns the merged arrivals of the patterns in [0, duration),
// sorted by instant (ties in pattern order), reading csv files through read.
// A duration of 0 means the span of the csv data: up to the latest recorded
// arrival, rounded up to the next whole second; it is an error without a
// csv pattern. It returns the duration used.
//
// Pattern i draws from its own generator seeded with (seed, i), so adding a
// pattern does not change the arrivals of the others.
func Generate(ps []Pattern, duration time.Duration, seed uint64, read func(path string) ([]Arrival, error)) ([]Arrival, time.Duration, error) {
	if len(ps) == 0 {
		return nil, 0, invalid("no traffic: give at least one pattern")
	}
	if duration < 0 {
		return nil, 0, invalid("duration %v is negative", duration)
	}
	replays := make([][]Arrival, len(ps))
	var latest time.Duration = -1
	for i, p := range ps {
		if p.Kind != CSV {
			continue
		}
		a, err := read(p.Path)
		if err != nil {
			return nil, 0, err
		}
		replays[i] = a
		for _, x := range a {
			latest = max(latest, x.At)
		}
	}
	if duration == 0 {
		if latest < 0 {
			return nil, 0, invalid("a duration is needed: no csv data to take it from")
		}
		duration = (latest/time.Second + 1) * time.Second
	}
	var all []Arrival
	for i, p := range ps {
		var err error
		if p.Kind == CSV {
			for _, x := range replays[i] {
				if x.At < duration {
					all = append(all, x)
				}
			}
		} else {
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			all, err = p.generate(all, duration, rng)
		}
		if err != nil {
			return nil, 0, err
		}
		if len(all) > MaxArrivals {
			return nil, 0, tooMany(int64(len(all)), duration)
		}
	}
	slices.SortStableFunc(all, func(a, b Arrival) int {
		switch {
		case a.At < b.At:
			return -1
		case a.At > b.At:
			return 1
		}
		return 0
	})
	return all, duration, nil
}

func tooMany(n int64, d time.Duration) error {
	return invalid("%d arrivals or more in %v exceed the simulator's limit of %d: lower the rate or the duration", n, d, MaxArrivals)
}

// generate appends the pattern's arrivals in [0, duration) to out.
func (p Pattern) generate(out []Arrival, duration time.Duration, rng *rand.Rand) ([]Arrival, error) {
	from, until := p.From, duration
	if p.Until != 0 {
		until = min(p.Until, duration)
	}
	cost := func() int64 {
		if p.CostMin == p.CostMax {
			return p.CostMin
		}
		return p.CostMin + rng.Int64N(p.CostMax-p.CostMin+1)
	}
	room := int64(MaxArrivals - len(out))
	switch p.Kind {
	case Spike:
		for _, s := range p.Spikes {
			if s.At >= duration {
				continue
			}
			if s.N > room {
				return nil, tooMany(int64(len(out))+s.N, duration)
			}
			for range s.N {
				out = append(out, Arrival{At: s.At, Cost: cost()})
			}
			room -= s.N
		}
	case Steady:
		return p.steady(out, from, until, room, cost, duration)
	case OnOff:
		for start := from; start < until; start += p.On + p.Off {
			var err error
			if out, err = p.steady(out, start, min(start+p.On, until), room, cost, duration); err != nil {
				return nil, err
			}
			room = int64(MaxArrivals - len(out))
			if p.On+p.Off > until-start { // the next start would overflow or end the run
				break
			}
		}
	case Poisson:
		if until > from && muldiv.Ceil(int64(until-from), p.Rate.Count, int64(p.Rate.Per)) > room {
			// Expected to overflow: say so before drawing millions.
			return nil, tooMany(int64(len(out))+muldiv.Ceil(int64(until-from), p.Rate.Count, int64(p.Rate.Per)), duration)
		}
		mean := float64(p.Rate.Per) / float64(p.Rate.Count) // ns between arrivals
		for t := float64(from) + rng.ExpFloat64()*mean; t < float64(until); t += rng.ExpFloat64() * mean {
			if room == 0 {
				return nil, tooMany(int64(len(out))+1, duration)
			}
			out = append(out, Arrival{At: time.Duration(t), Cost: cost()})
			room--
		}
	}
	return out, nil
}

// steady appends arrivals at from + n·Per/Count (exact, rounded down to the
// nanosecond) for every n that lands before until.
func (p Pattern) steady(out []Arrival, from, until time.Duration, room int64, cost func() int64, duration time.Duration) ([]Arrival, error) {
	span := int64(until - from)
	if span <= 0 {
		return out, nil
	}
	// The arrivals in [0, span) are n = 0 .. ⌈span·Count/Per⌉-1.
	n := muldiv.Ceil(span, p.Rate.Count, int64(p.Rate.Per))
	if n > room {
		return nil, tooMany(int64(len(out))+n, duration)
	}
	for i := range n {
		out = append(out, Arrival{At: from + time.Duration(muldiv.Floor(i, int64(p.Rate.Per), p.Rate.Count)), Cost: cost()})
	}
	return out, nil
}
