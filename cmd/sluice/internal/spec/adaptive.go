package spec

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/internal/downstream"
)

// Adaptive is a concurrency limit in front of a modelled downstream
// (sluice simulate -downstream): an adaptive pool whose Controller is aimd,
// vegas or gradient2, moving between Floor and Ceiling from Initial, or,
// as pool:N, a static limit of N.
//
//	adaptive:vegas,floor=1,initial=20,ceiling=200
//	adaptive:aimd,backoff=0.8,increase=2,timeout=50ms
//	adaptive:gradient2,tolerance=2,smoothing=0.1,window=100,queue=4
//	pool:100
//
// The controller's parameters are those of actor.AIMD (increase, backoff,
// timeout), actor.Vegas (alpha, beta, probe) and actor.Gradient2
// (tolerance, smoothing, window, queue); an absent one takes the
// controller's default. The limits default to actor.NewAdaptivePool's: 1,
// 20, 1000.
type Adaptive struct {
	Controller              string // "aimd", "vegas", "gradient2", or "" for pool:N
	Floor, Initial, Ceiling int64
	Params                  []Param // in the order of the controller's names
}

// Param is one of a controller's parameters, as given.
type Param struct{ Name, Value string }

// controllerParams are the names each controller takes, in canonical order.
var controllerParams = map[string][]string{
	"aimd":      {"increase", "backoff", "timeout"},
	"vegas":     {"alpha", "beta", "probe"},
	"gradient2": {"tolerance", "smoothing", "window", "queue"},
}

// IsAdaptive reports whether s is written as an adaptive spec (adaptive:
// or pool:), so that a -limit flag can tell it from a rate limit.
func IsAdaptive(s string) bool {
	head, _, _ := strings.Cut(strings.TrimSpace(s), ":")
	head = strings.ToLower(strings.TrimSpace(head))
	return head == "adaptive" || head == "pool"
}

// ParseAdaptive reads an adaptive spec. Its errors match ErrInvalid and
// name the bad piece; one the pool itself refuses matches
// permits.ErrInvalidConfig too.
func ParseAdaptive(s string) (Adaptive, error) {
	a, err := parseAdaptive(s)
	if err == nil {
		err = a.check()
	}
	if err != nil {
		return Adaptive{}, fmt.Errorf("%w %q: %w", ErrInvalid, s, err)
	}
	return a, nil
}

func parseAdaptive(s string) (Adaptive, error) {
	head, rest, _ := strings.Cut(strings.TrimSpace(s), ":")
	switch strings.ToLower(strings.TrimSpace(head)) {
	case "pool":
		n, err := whole("pool", strings.TrimSpace(rest))
		return Adaptive{Floor: n, Initial: n, Ceiling: n}, err
	case "adaptive":
	default:
		return Adaptive{}, errors.New("want adaptive:CONTROLLER[,NAME=VALUE...] or pool:N")
	}
	args := strings.Split(rest, ",")
	a := Adaptive{Controller: strings.ToLower(strings.TrimSpace(args[0])), Floor: 1, Initial: 20, Ceiling: 1000}
	names, ok := controllerParams[a.Controller]
	if !ok {
		return Adaptive{}, fmt.Errorf("unknown controller %q: want aimd, vegas or gradient2", args[0])
	}
	given := map[string]string{}
	for _, arg := range args[1:] {
		name, value, named := strings.Cut(arg, "=")
		name, value = strings.ToLower(strings.TrimSpace(name)), strings.TrimSpace(value)
		if !named || name == "" {
			return Adaptive{}, fmt.Errorf("%q is not NAME=VALUE", strings.TrimSpace(arg))
		}
		if _, dup := given[name]; dup {
			return Adaptive{}, fmt.Errorf("%s is given twice", name)
		}
		given[name] = value
		var err error
		switch name {
		case "floor":
			a.Floor, err = whole(name, value)
		case "initial":
			a.Initial, err = whole(name, value)
		case "ceiling":
			a.Ceiling, err = whole(name, value)
		default:
			if !contains(names, name) {
				return Adaptive{}, fmt.Errorf("%s takes floor=, initial=, ceiling= and %s=, not %q", a.Controller, strings.Join(names, "=, "), name)
			}
		}
		if err != nil {
			return Adaptive{}, err
		}
	}
	for _, n := range names {
		if v, ok := given[n]; ok {
			a.Params = append(a.Params, Param{n, v})
		}
	}
	return a, nil
}

// check builds the controller and has the real pool judge it and the
// limits.
func (a Adaptive) check() error {
	ctl, err := a.controller()
	if err != nil || ctl == nil {
		if err == nil && !(1 <= a.Floor && a.Floor < 1<<31) {
			err = fmt.Errorf("pool %d is not in [1, 2^31)", a.Floor)
		}
		return err
	}
	p, err := actor.NewAdaptivePool(ctl, actor.WithLimits(a.Floor, a.Initial, a.Ceiling))
	if err != nil {
		return err
	}
	return p.Close()
}

// Pool returns the model's pool for the spec, with a fresh controller.
func (a Adaptive) Pool() downstream.Pool {
	ctl, _ := a.controller() // checked by ParseAdaptive
	return downstream.Pool{Name: a.String(), Controller: ctl, Floor: a.Floor, Initial: a.Initial, Ceiling: a.Ceiling}
}

// String is the canonical form, which ParseAdaptive reads back:
// "adaptive:vegas,floor=1,initial=20,ceiling=200,alpha=2", "pool:100".
func (a Adaptive) String() string {
	if a.Controller == "" {
		return fmt.Sprintf("pool:%d", a.Floor)
	}
	s := fmt.Sprintf("adaptive:%s,floor=%d,initial=%d,ceiling=%d", a.Controller, a.Floor, a.Initial, a.Ceiling)
	for _, p := range a.Params {
		s += "," + p.Name + "=" + p.Value
	}
	return s
}

// Equal reports whether a and b are the same spec.
func (a Adaptive) Equal(b Adaptive) bool { return a.String() == b.String() }

func whole(name, v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s %q is not a whole number of at least 1", name, v)
	}
	return n, nil
}

func contains(names []string, n string) bool {
	for _, x := range names {
		if x == n {
			return true
		}
	}
	return false
}
