package traffic

import (
	"bufio"
	"errors"
	"io"
)

// maxLine bounds one line of a log or JSON-lines file.
const maxLine = 1 << 20

// lines reads a file line by line, numbering them; blank lines are
// skipped by the readers.
type lines struct {
	sc   *bufio.Scanner
	name string
	n    int
}

func newLines(r io.Reader, name string) *lines {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	return &lines{sc: sc, name: name}
}

// next returns the next line and its number, io.EOF at the end.
func (l *lines) next() ([]byte, int, error) {
	if l.sc.Scan() {
		l.n++
		return l.sc.Bytes(), l.n, nil
	}
	err := l.sc.Err()
	switch {
	case err == nil:
		return nil, 0, io.EOF
	case errors.Is(err, bufio.ErrTooLong):
		return nil, 0, invalid("%s:%d: a line longer than %d bytes", l.name, l.n+1, maxLine)
	}
	return nil, 0, invalid("%s: %v", l.name, err)
}
