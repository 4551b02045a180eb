package traffic

import "io"

// unsupported is a file kind not read yet.
type unsupported struct{ name string }

func (u unsupported) row() (row, error) {
	return row{}, invalid("%s: this kind of file is not read yet", u.name)
}

func newLogRows(_ io.Reader, name string, _ Fields, _ func(string) uint32) rowReader {
	return unsupported{name}
}

func newJSONRows(_ io.Reader, name string, _ Fields, _ func(string) uint32) rowReader {
	return unsupported{name}
}
