package traffic

import (
	"bytes"
	"io"
	"time"
)

// clfTime is the Common Log Format's timestamp, between brackets.
const clfTime = "02/Jan/2006:15:04:05 -0700"

// logRows reads an access log in the Common or Combined Log Format, one
// request per line:
//
//	host ident user [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 2326 ["referer" "agent"]
//
// Each line is one arrival of cost 1 at its timestamp (a log holds
// instants, kept on the calendar); its key is the host (the client's
// address), the user, or none (Fields.Key). What follows the timestamp is
// not read. Blank lines are skipped.
type logRows struct {
	l      *lines
	key    string
	intern func(string) uint32
}

func newLogRows(r io.Reader, name string, f Fields, intern func(string) uint32) rowReader {
	return &logRows{l: newLines(r, name), key: f.Key, intern: intern}
}

func (lr *logRows) row() (row, error) {
	for {
		line, n, err := lr.l.next()
		if err != nil {
			return row{}, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		at, host, user, msg := parseCLF(line)
		if msg != "" {
			return row{}, invalid("%s:%d: %s", lr.l.name, n, msg)
		}
		r := row{at: at, instant: true, cost: 1, line: n}
		switch lr.key {
		case "host":
			r.key = lr.intern(host)
		case "user":
			r.key = lr.intern(user)
		}
		return r, nil
	}
}

// parseCLF reads a log line's host, user and timestamp (Unix ns); msg says
// what is wrong, or is empty.
func parseCLF(line []byte) (at int64, host, user string, msg string) {
	fields := bytes.SplitN(bytes.TrimSpace(line), []byte(" "), 4)
	if len(fields) < 4 {
		return 0, "", "", "not a Common Log Format line: want host ident user [time] \"request\" status size"
	}
	open, end := bytes.IndexByte(fields[3], '['), bytes.IndexByte(fields[3], ']')
	if open != 0 || end < 0 {
		return 0, "", "", "no [timestamp] after host, ident and user"
	}
	stamp := string(fields[3][1:end])
	t, err := time.Parse(clfTime, stamp)
	if err != nil {
		return 0, "", "", "timestamp [" + stamp + "] is not like [10/Oct/2000:13:55:36 -0700]"
	}
	if t.Year() < 1678 || t.Year() > 2261 {
		return 0, "", "", "timestamp [" + stamp + "] is outside the years 1678 to 2261"
	}
	return t.UnixNano(), string(fields[0]), string(fields[2]), ""
}
