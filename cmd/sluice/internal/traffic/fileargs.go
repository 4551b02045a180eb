package traffic

import (
	"errors"
	"fmt"
	"strings"
)

// fileArgs reads what follows a file kind's colon: the path, then options
// as ,name=value at its end. A path may hold commas; a trailing
// ",time=...", ",key=..." or ",cost=..." is an option, not part of it.
func (p *Pattern) fileArgs(rest string) error {
	opts := map[string]string{}
	for {
		i := strings.LastIndexByte(rest, ',')
		if i < 0 {
			break
		}
		name, value, ok := strings.Cut(rest[i+1:], "=")
		name = strings.ToLower(strings.TrimSpace(name))
		if !ok || !fileOption(name) {
			break
		}
		if _, twice := opts[name]; twice {
			return fmt.Errorf("%s= is given twice", name)
		}
		opts[name], rest = strings.TrimSpace(value), strings.TrimSpace(rest[:i])
	}
	if p.Path = rest; p.Path == "" {
		return fmt.Errorf("%s needs a file: %s:PATH", p.Kind, p.Kind)
	}
	switch p.Kind {
	case CSV:
		if len(opts) > 0 {
			return errors.New("csv takes a path only; its rows are time[,cost]")
		}
	case Log:
		return p.logArgs(opts)
	case JSONL:
		return p.jsonArgs(opts)
	}
	return nil
}

func fileOption(name string) bool { return name == "time" || name == "key" || name == "cost" }

func (p *Pattern) logArgs(opts map[string]string) error {
	p.Fields.Key = "host"
	for name, v := range opts {
		switch {
		case name != "key":
			return fmt.Errorf("log takes key= only (host, user or none), not %s=", name)
		case v == "host" || v == "user":
			p.Fields.Key = v
		case v == "none":
			p.Fields.Key = ""
		default:
			return fmt.Errorf("log key=%q: want host (the client's address), user or none", v)
		}
	}
	return nil
}

func (p *Pattern) jsonArgs(opts map[string]string) error {
	for name, v := range opts {
		if v == "" {
			return fmt.Errorf("%s= needs a field name", name)
		}
	}
	p.Fields = Fields{Time: opts["time"], Key: opts["key"], Cost: opts["cost"]}
	if p.Fields.Time == "" {
		return errors.New("jsonl needs time=FIELD, the field holding each line's instant")
	}
	return nil
}

func (p Pattern) fileString() string {
	s := string(p.Kind) + ":" + p.Path
	switch p.Kind {
	case Log:
		if p.Fields.Key == "" {
			s += ",key=none"
		} else if p.Fields.Key != "host" {
			s += ",key=" + p.Fields.Key
		}
	case JSONL:
		s += ",time=" + p.Fields.Time
		if p.Fields.Key != "" {
			s += ",key=" + p.Fields.Key
		}
		if p.Fields.Cost != "" {
			s += ",cost=" + p.Fields.Cost
		}
	}
	return s
}
