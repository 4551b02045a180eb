package traffic

import (
	"bufio"
	"compress/gzip"
	"io"
	"math/rand/v2"
	"os"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/internal/muldiv"
)

// MaxArrivals bounds one run, so that a typo such as steady:1/ns over an
// hour is an error at once rather than a run of days. Arrivals are
// streamed, so the bound is time, not memory: a billion arrivals take
// about ten minutes per limit.
const MaxArrivals = 1_000_000_000

// DefaultDuration is a run's length when neither -duration nor a file
// says otherwise.
const DefaultDuration = time.Minute

// DefaultOrigin is the instant offset 0 stands for when no file holds
// instants: 2025-01-01 00:00:00 UTC, a whole number of days after the Unix
// epoch, so that fixed windows dividing a day begin at offset 0.
var DefaultOrigin = time.Date(2025, time.January, 1, 0, 0, 0, 0, time.UTC)

// Opener opens a file a pattern names.
type Opener func(path string) (io.ReadCloser, error)

// Plan is the traffic of one run: the patterns, merged, over a duration.
type Plan struct {
	Patterns []Pattern
	// Duration is the run's length. 0 means the default: a minute, or
	// longer to hold every spike; with files, up to their latest arrival
	// (rounded up to the next whole second). Given, arrivals of spikes and
	// files from it on are left out, and Summary says so.
	Duration time.Duration
	// Seed seeds the random patterns: pattern i draws from PCG(Seed, i),
	// so adding a pattern does not change the arrivals of the others.
	Seed uint64
	// Files opens the files patterns name; nil is os.Open. Compressed
	// files (gzip) are recognised by their first bytes.
	Files Opener
}

// Summary describes a stream once it has ended.
type Summary struct {
	Arrivals, Units, MaxCost int64
	// Duration is the run's length (see Plan.Duration); Extended reports a
	// default duration lengthened past DefaultDuration to hold the
	// spikes.
	Duration time.Duration
	Extended bool
	// Dropped counts the spikes' arrivals left out by an explicit
	// duration, FirstDropped is the earliest; Cut names the files whose
	// rows from CutAt[i] on were left out.
	Dropped      int64
	FirstDropped time.Duration
	Cut          []string
	CutAt        []time.Duration
	// Origin is the instant offset 0 stands for: the earliest instant of
	// the files that hold instants, else DefaultOrigin.
	Origin time.Time
	// Keys names the keys: Keys[k] is Arrival.Key k; Keys[0] is "".
	Keys []string
}

// Feed is an open Plan: a Stream of the merged arrivals, and what they
// were. It is not safe for concurrent use.
type Feed struct {
	srcs    []source
	head    []Arrival
	live    []bool
	files   []*fileSource // by pattern, nil for generated kinds
	sum     Summary
	explict bool // the duration was given
	learn   bool // the duration is learnt from the arrivals
	keys    map[string]uint32
}

// Open starts the plan's stream. The caller must read it to its end or
// Close it.
func (p Plan) Open() (*Feed, error) {
	if len(p.Patterns) == 0 {
		return nil, invalid("no traffic: give at least one pattern")
	}
	if p.Duration < 0 {
		return nil, invalid("duration %v is negative", p.Duration)
	}
	if p.Files == nil {
		p.Files = func(path string) (io.ReadCloser, error) { return os.Open(path) }
	}
	f := &Feed{keys: map[string]uint32{}, explict: p.Duration > 0}
	f.sum.Keys, f.sum.Origin = []string{""}, DefaultOrigin
	d, err := p.duration()
	if err != nil {
		return nil, err
	}
	if err := f.openFiles(p); err != nil {
		f.Close()
		return nil, err
	}
	if d == 0 && !p.generatesOverDuration() {
		f.learn = true // from the files' arrivals, as they come
	} else if d == 0 {
		// Generated traffic needs its end before it starts: a first pass
		// over the files finds their span.
		if d, err = p.span(); err != nil {
			f.Close()
			return nil, err
		}
	}
	f.sum.Duration = d
	var expected int64
	for i, pat := range p.Patterns {
		if pat.Kind.file() {
			f.srcs = append(f.srcs, f.files[i])
			continue
		}
		span := d
		if f.learn {
			span = p.spikesEnd()
		}
		expected = muldiv.Add(expected, pat.expected(span))
		f.srcs = append(f.srcs, pat.generator(span, rand.New(rand.NewPCG(p.Seed, uint64(i))), f.intern))
		if f.explict {
			f.countDropped(pat)
		}
	}
	if expected > MaxArrivals {
		f.Close()
		return nil, tooMany(expected, d)
	}
	f.head, f.live = make([]Arrival, len(f.srcs)), make([]bool, len(f.srcs))
	for i := range f.srcs {
		if err := f.advance(i); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

// Length is the run's length when it is known before reading the files (0
// when they decide it).
func (p Plan) Length() time.Duration {
	d, _ := p.duration()
	return d
}

// duration is the plan's duration when it is known before reading: given,
// or the default for generated traffic alone; 0 when files decide it.
func (p Plan) duration() (time.Duration, error) {
	if p.Duration > 0 {
		return p.Duration, nil
	}
	for _, pat := range p.Patterns {
		if pat.Kind.file() {
			return 0, nil
		}
	}
	return max(DefaultDuration, p.spikesEnd()), nil
}

// spikesEnd is the end of the latest spike, rounded up to a whole second.
func (p Plan) spikesEnd() time.Duration {
	var end time.Duration
	for _, pat := range p.Patterns {
		for _, s := range pat.Spikes {
			end = max(end, roundUp(s.At))
		}
	}
	return end
}

// roundUp is the next whole second strictly after d.
func roundUp(d time.Duration) time.Duration {
	if d > time.Duration(1<<63-1)-time.Second {
		return d
	}
	return (d/time.Second + 1) * time.Second
}

func (p Plan) generatesOverDuration() bool {
	for _, pat := range p.Patterns {
		if !pat.Kind.file() && pat.Kind != Spike {
			return true
		}
	}
	return false
}

// span reads the plan's files once to find the run's length: up to the
// latest arrival of files and spikes.
func (p Plan) span() (time.Duration, error) {
	files := Plan{Files: p.Files}
	for _, pat := range p.Patterns {
		if pat.Kind.file() || pat.Kind == Spike {
			files.Patterns = append(files.Patterns, pat)
		}
	}
	f, err := files.Open()
	if err != nil {
		return 0, err
	}
	buf := make([]Arrival, 4096)
	for {
		if _, err := f.Read(buf); err == io.EOF {
			return f.Summary().Duration, nil
		} else if err != nil {
			return 0, err
		}
	}
}

// openFiles opens every file and fixes the origin: the earliest instant of
// the files that hold instants, so that every instant keeps its place
// against the epoch (fixed windows count the calendar's windows, as the
// library's FixedWindow does on those instants).
func (f *Feed) openFiles(p Plan) error {
	f.files = make([]*fileSource, len(p.Patterns))
	origin, any := int64(0), false
	for i, pat := range p.Patterns {
		if !pat.Kind.file() {
			continue
		}
		fs, err := openFile(pat, p.Files, f.intern)
		if err != nil {
			return err
		}
		f.files[i] = fs
		if first, ok := fs.firstInstant(); ok && (!any || first < origin) {
			origin, any = first, true
		}
	}
	if any {
		f.sum.Origin = time.Unix(0, origin).UTC()
		for _, fs := range f.files {
			if fs != nil && fs.instants {
				fs.base = origin
			}
		}
	}
	return nil
}

// countDropped counts the spikes an explicit duration leaves out.
func (f *Feed) countDropped(p Pattern) {
	for _, s := range p.Spikes {
		if s.At < f.sum.Duration {
			continue
		}
		if f.sum.Dropped == 0 || s.At < f.sum.FirstDropped {
			f.sum.FirstDropped = s.At
		}
		f.sum.Dropped = muldiv.Add(f.sum.Dropped, s.N)
	}
}

func (f *Feed) intern(key string) uint32 {
	if k, ok := f.keys[key]; ok {
		return k
	}
	k := uint32(len(f.sum.Keys))
	f.keys[key] = k
	f.sum.Keys = append(f.sum.Keys, key)
	return k
}

// advance reads source i's next arrival into its head, cutting a file at an
// explicit duration.
func (f *Feed) advance(i int) error {
	a, ok, err := f.srcs[i].next()
	if err != nil {
		return err
	}
	if ok && f.explict && a.At >= f.sum.Duration {
		if fs := f.files[i]; fs != nil {
			f.sum.Cut, f.sum.CutAt = append(f.sum.Cut, fs.name), append(f.sum.CutAt, a.At)
			fs.Close()
		}
		ok = false
	}
	f.head[i], f.live[i] = a, ok
	return nil
}

// Read fills buf with the next arrivals, in order of instant, ties in the
// order of the patterns.
func (f *Feed) Read(buf []Arrival) (int, error) {
	n := 0
	for n < len(buf) {
		k := -1
		for i, ok := range f.live {
			if ok && (k < 0 || f.head[i].At < f.head[k].At) {
				k = i
			}
		}
		if k < 0 {
			break
		}
		a := f.head[k]
		buf[n] = a
		n++
		f.sum.Arrivals++
		f.sum.Units = muldiv.Add(f.sum.Units, a.Cost)
		f.sum.MaxCost = max(f.sum.MaxCost, a.Cost)
		if f.sum.Arrivals > MaxArrivals {
			return n, tooMany(f.sum.Arrivals, f.sum.Duration)
		}
		if f.learn {
			f.sum.Duration = max(f.sum.Duration, roundUp(a.At))
		}
		if err := f.advance(k); err != nil {
			return n, err
		}
	}
	if n == 0 {
		f.end()
		return 0, io.EOF
	}
	return n, nil
}

func (f *Feed) end() {
	if f.sum.Duration <= 0 {
		f.sum.Duration = roundUp(0)
	}
	f.sum.Extended = !f.explict && f.noFiles() && f.sum.Duration > DefaultDuration
	f.Close()
}

func (f *Feed) noFiles() bool {
	for _, fs := range f.files {
		if fs != nil {
			return false
		}
	}
	return true
}

// Summary describes the stream; it is complete once Read returned io.EOF.
func (f *Feed) Summary() Summary { return f.sum }

// Span is the run's length, once the stream has ended.
func (f *Feed) Span() time.Duration { return f.sum.Duration }

// Close closes the files still open; it is safe to call twice.
func (f *Feed) Close() error {
	for _, fs := range f.files {
		if fs != nil {
			fs.Close()
		}
	}
	return nil
}

// Generate reads the plan's arrivals into memory, for tests and small
// runs; it returns the duration used.
func Generate(ps []Pattern, duration time.Duration, seed uint64, open Opener) ([]Arrival, time.Duration, error) {
	f, err := Plan{Patterns: ps, Duration: duration, Seed: seed, Files: open}.Open()
	if err != nil {
		return nil, 0, err
	}
	a, err := Collect(f)
	f.Close()
	if err != nil {
		return nil, 0, err
	}
	return a, f.Summary().Duration, nil
}

func tooMany(n int64, d time.Duration) error {
	return invalid("%d arrivals or more in %v exceed the simulator's limit of %d: lower the rate or the duration", n, d, MaxArrivals)
}

// decompress recognises gzip by its magic bytes.
func decompress(name string, r io.Reader) (io.Reader, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		z, err := gzip.NewReader(br)
		if err != nil {
			return nil, invalid("%s: %v", name, err)
		}
		return bufio.NewReaderSize(z, 1<<16), nil
	}
	return br, nil
}
