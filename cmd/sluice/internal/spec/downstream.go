package spec

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/internal/human"
	"github.com/sluicehq/sluice/internal/downstream"
)

// ParseDownstream reads a modelled downstream (sluice simulate
// -downstream): fields NAME=VALUE separated by commas, for the downstream
// from the start, and at=INSTANT: that begins a change, whose fields
// follow:
//
//	servers=100,service=10ms±1ms,queue=10,at=30s:servers=40,at=1m:servers=150,service=exp:20ms
//
// servers=N serve one request each at a time (the capacity); service= is
// the service time: D (constant), D±S or D+-S (uniform in [D−S, D+S]), or
// exp:D (exponential of mean D); queue=N requests wait in FIFO order for a
// server, and one that finds it full is refused (Overload, a 503). A
// change keeps every field it does not set. The first phase needs servers
// and service; queue defaults to a tenth of the servers (at least 1) until
// one is given. Its errors match ErrInvalid and name the bad field.
func ParseDownstream(s string) (downstream.Config, error) {
	c, err := parseDownstream(s)
	if err != nil {
		return downstream.Config{}, fmt.Errorf("%w: downstream %q: %w", ErrInvalid, s, err)
	}
	return c, nil
}

func parseDownstream(s string) (downstream.Config, error) {
	var (
		cur              downstream.Phase
		out              []downstream.Phase
		queueSet, svcSet bool
		where            = "the start"
	)
	flush := func() { out = append(out, cur) }
	for _, field := range strings.Split(s, ",") {
		field = strings.TrimSpace(field)
		if rest, ok := cutPrefixFold(field, "at="); ok {
			at, f, ok := strings.Cut(rest, ":")
			d, err := time.ParseDuration(strings.TrimSpace(at))
			switch {
			case !ok:
				return downstream.Config{}, fmt.Errorf("at=%s needs a change after it, such as at=%s:servers=40", rest, rest)
			case err != nil || d <= 0:
				return downstream.Config{}, fmt.Errorf("at=%s: %q is not a positive duration such as 30s", at, at)
			case len(out) == 0 && (cur.Servers == 0 || !svcSet):
				return downstream.Config{}, errors.New("the downstream needs servers=N and service=D before its first at=")
			case d <= cur.At:
				return downstream.Config{}, fmt.Errorf("at=%s is not after the change before it (%s)", at, human.Exact(cur.At))
			}
			flush()
			cur.At, where, field = d, "at="+strings.TrimSpace(at), f
		}
		if err := setField(&cur, field, &queueSet, &svcSet); err != nil {
			return downstream.Config{}, fmt.Errorf("%s: %w", where, err)
		}
	}
	if cur.Servers == 0 || !svcSet {
		return downstream.Config{}, errors.New("the downstream needs servers=N and service=D")
	}
	flush()
	return downstream.Config{Phases: out}, nil
}

// setField sets one NAME=VALUE of p.
func setField(p *downstream.Phase, field string, queueSet, svcSet *bool) error {
	name, value, ok := strings.Cut(field, "=")
	name, value = strings.ToLower(strings.TrimSpace(name)), strings.TrimSpace(value)
	if !ok {
		return fmt.Errorf("%q is not NAME=VALUE (servers=, service=, queue= or at=)", field)
	}
	switch name {
	case "servers":
		n, err := strconv.Atoi(value)
		if err != nil || n < 1 || n > downstream.MaxServers {
			return fmt.Errorf("servers %q is not a whole number in [1, %d]", value, downstream.MaxServers)
		}
		p.Servers = n
		if !*queueSet {
			p.Queue = max(n/10, 1)
		}
	case "queue":
		n, err := strconv.Atoi(value)
		if err != nil || n < 0 || n > downstream.MaxServers {
			return fmt.Errorf("queue %q is not a whole number in [0, %d]", value, downstream.MaxServers)
		}
		p.Queue, *queueSet = n, true
	case "service":
		svc, err := parseService(value)
		if err != nil {
			return err
		}
		p.Service, *svcSet = svc, true
	default:
		return fmt.Errorf("unknown field %q: want servers=, service=, queue= or at=", name)
	}
	return nil
}

// parseService reads D, D±S, D+-S or exp:D.
func parseService(v string) (downstream.Service, error) {
	bad := fmt.Errorf("service %q is not D, D±S or exp:D with durations such as 10ms±1ms, D > 0, 0 ≤ S ≤ D", v)
	if d, ok := cutPrefixFold(v, "exp:"); ok {
		mean, err := time.ParseDuration(strings.TrimSpace(d))
		if err != nil || mean <= 0 {
			return downstream.Service{}, bad
		}
		return downstream.Service{Mean: mean, Exp: true}, nil
	}
	m, s, spread := strings.Cut(strings.Replace(v, "+-", "±", 1), "±")
	mean, err := time.ParseDuration(strings.TrimSpace(m))
	if err != nil || mean <= 0 {
		return downstream.Service{}, bad
	}
	svc := downstream.Service{Mean: mean}
	if spread {
		if svc.Spread, err = time.ParseDuration(strings.TrimSpace(s)); err != nil || svc.Spread < 0 || svc.Spread > mean {
			return downstream.Service{}, bad
		}
	}
	return svc, nil
}

// FormatDownstream is the canonical form of c, which ParseDownstream reads
// back: every field of the first phase, and the changed ones of each
// change.
func FormatDownstream(c downstream.Config) string {
	var b strings.Builder
	var prev downstream.Phase
	for i, p := range c.Phases {
		var f []string
		if i == 0 || p.Servers != prev.Servers {
			f = append(f, fmt.Sprintf("servers=%d", p.Servers))
		}
		if i == 0 || p.Service != prev.Service {
			f = append(f, "service="+formatService(p.Service))
		}
		if i == 0 || p.Queue != prev.Queue {
			f = append(f, fmt.Sprintf("queue=%d", p.Queue))
		}
		if len(f) == 0 { // a change that changes nothing still reads back
			f = append(f, fmt.Sprintf("servers=%d", p.Servers))
		}
		if i > 0 {
			b.WriteString(",at=" + human.Exact(p.At) + ":")
		}
		b.WriteString(strings.Join(f, ","))
		prev = p
	}
	return b.String()
}

func formatService(s downstream.Service) string {
	switch {
	case s.Exp:
		return "exp:" + s.Mean.String()
	case s.Spread > 0:
		return s.Mean.String() + "±" + s.Spread.String()
	}
	return s.Mean.String()
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}
