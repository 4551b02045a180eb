package traffic

import (
	"io"
	"time"
)

// Arrival is one request: its instant after the start of the run, its cost
// in units, and its key (0 for none; Summary.Keys names the others).
type Arrival struct {
	At   time.Duration
	Cost int64
	Key  uint32
}

// Stream yields arrivals in order of instant, as io.Reader yields bytes:
// Read fills buf with the next ones and returns how many; at the end it
// returns 0 and io.EOF. Any other error ends the stream.
type Stream interface {
	Read(buf []Arrival) (int, error)
}

// Slice is a Stream over arrivals already in order.
func Slice(a []Arrival) Stream { return &slice{a: a} }

type slice struct{ a []Arrival }

func (s *slice) Read(buf []Arrival) (int, error) {
	if len(s.a) == 0 {
		return 0, io.EOF
	}
	n := copy(buf, s.a)
	s.a = s.a[n:]
	return n, nil
}

// Collect reads a stream to its end into memory: for tests and small runs.
func Collect(s Stream) ([]Arrival, error) {
	var out []Arrival
	buf := make([]Arrival, 4096)
	for {
		n, err := s.Read(buf)
		out = append(out, buf[:n]...)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
