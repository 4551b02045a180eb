package traffic

import (
	"container/heap"
	"github.com/sluicehq/sluice/cmd/sluice/internal/human"
	"io"
	"time"
)

// Reorder is how far out of order a file's rows may be: rows are held
// until a row this much later has been read, and a row earlier than one
// already replayed is an error naming its line. Access logs are written as
// requests end, so their timestamps (when requests began) are a little out
// of order; a minute covers slow requests, and holds about a minute of
// rows in memory.
const Reorder = time.Minute

// row is one arrival read from a file: at is an offset from the start
// (ns), or an instant (Unix ns) when instant is set.
type row struct {
	at      int64
	instant bool
	cost    int64
	key     uint32
	line    int
}

// rowReader reads a file's rows in file order; io.EOF at the end. Its
// errors name the file and the line.
type rowReader interface {
	row() (row, error)
}

// fileSource replays a file in order of instant, through a window of
// Reorder. Memory: the rows of one such window.
type fileSource struct {
	name     string
	rr       rowReader
	closer   io.Closer
	held     rows  // min-heap by (at, line)
	latest   int64 // the latest instant read
	last     int64 // the instant last replayed
	lastLine int
	instants bool  // the file holds instants (Unix ns), else offsets
	mode     int   // 0 before the first row, 1 offsets, 2 instants
	base     int64 // subtracted from instants: the run's origin, Unix ns
	eof      bool
	started  bool
}

func openFile(p Pattern, open Opener, intern func(string) uint32) (*fileSource, error) {
	rc, err := open(p.Path)
	if err != nil {
		return nil, invalid("%v", err)
	}
	r, err := decompress(p.Path, rc)
	if err != nil {
		rc.Close()
		return nil, err
	}
	fs := &fileSource{name: p.Path, closer: rc}
	switch p.Kind {
	case CSV:
		fs.rr = newCSVRows(r, p.Path)
	case Log:
		fs.rr = newLogRows(r, p.Path, p.Fields, intern)
	case JSONL:
		fs.rr = newJSONRows(r, p.Path, p.Fields, intern)
	}
	if err := fs.fill(); err != nil {
		rc.Close()
		return nil, err
	}
	return fs, nil
}

// firstInstant is the file's earliest instant (Unix ns), for the origin.
func (fs *fileSource) firstInstant() (int64, bool) {
	if !fs.instants || len(fs.held) == 0 {
		return 0, false
	}
	return fs.held[0].at, true
}

// fill reads rows until the earliest held row is Reorder older than the
// latest read (no row still to come may precede it), or the file ends.
func (fs *fileSource) fill() error {
	for !fs.eof && (len(fs.held) == 0 || fs.latest-fs.held[0].at < int64(Reorder)) {
		r, err := fs.rr.row()
		if err == io.EOF {
			fs.eof = true
			break
		}
		if err != nil {
			return err
		}
		if err := fs.check(r); err != nil {
			return err
		}
		heap.Push(&fs.held, r)
		fs.latest = max(fs.latest, r.at)
	}
	return nil
}

// check holds the file to one kind of time and to the order Reorder
// allows.
func (fs *fileSource) check(r row) error {
	m := 1
	if r.instant {
		m = 2
	}
	switch {
	case fs.mode != 0 && m != fs.mode:
		return invalid("%s:%d: mixes RFC 3339 instants and offsets; use one or the other", fs.name, r.line)
	case fs.started && r.at < fs.last:
		return invalid("%s:%d: %s is more than %s before line %d's %s: rows may be out of order by %s at most; sort the file",
			fs.name, r.line, fs.show(r.at), human.Exact(Reorder), fs.lastLine, fs.show(fs.last), human.Exact(Reorder))
	}
	fs.mode, fs.instants = m, m == 2
	return nil
}

func (fs *fileSource) show(at int64) string {
	if fs.instants {
		return time.Unix(0, at).UTC().Format(time.RFC3339Nano)
	}
	return human.Exact(time.Duration(at))
}

func (fs *fileSource) next() (Arrival, bool, error) {
	if err := fs.fill(); err != nil {
		return Arrival{}, false, err
	}
	if len(fs.held) == 0 {
		fs.Close()
		return Arrival{}, false, nil
	}
	r := heap.Pop(&fs.held).(row)
	fs.last, fs.lastLine, fs.started = r.at, r.line, true
	at := r.at
	if fs.instants {
		if at < fs.base {
			return Arrival{}, false, invalid("%s:%d: %s is before the run's start", fs.name, r.line, fs.show(at))
		}
		at -= fs.base
	}
	return Arrival{At: time.Duration(at), Cost: r.cost, Key: r.key}, true, nil
}

// Close closes the file; safe to call twice.
func (fs *fileSource) Close() {
	if fs.closer != nil {
		fs.closer.Close()
		fs.closer = nil
	}
	fs.eof = true
}

type rows []row

func (h rows) Len() int { return len(h) }
func (h rows) Less(i, j int) bool {
	return h[i].at < h[j].at || h[i].at == h[j].at && h[i].line < h[j].line
}
func (h rows) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *rows) Push(x any)   { *h = append(*h, x.(row)) }
func (h *rows) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
