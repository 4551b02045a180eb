package spec

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/actor"
)

// controller builds a fresh controller from the spec's parameters (nil for
// pool:N). A value that is not a number (or a duration, for timeout) is an
// error naming it; a number the controller refuses is left to its own
// validation.
func (a Adaptive) controller() (actor.Controller, error) {
	var (
		f = map[string]*float64{}
		n = map[string]*int64{}
		d = map[string]*time.Duration{}
		c actor.Controller
	)
	switch a.Controller {
	case "":
		return nil, nil
	case "aimd":
		x := &actor.AIMD{}
		n["increase"], f["backoff"], d["timeout"], c = &x.Increase, &x.Backoff, &x.Timeout, x
	case "vegas":
		x := &actor.Vegas{}
		f["alpha"], f["beta"], n["probe"], c = &x.Alpha, &x.Beta, &x.Probe, x
	case "gradient2":
		x := &actor.Gradient2{}
		f["tolerance"], f["smoothing"], n["window"], n["queue"], c = &x.Tolerance, &x.Smoothing, &x.LongWindow, &x.QueueSize, x
	default:
		return nil, fmt.Errorf("unknown controller %q", a.Controller)
	}
	for _, p := range a.Params {
		switch {
		case f[p.Name] != nil:
			v, err := strconv.ParseFloat(p.Value, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%s %q is not a number", p.Name, p.Value)
			}
			*f[p.Name] = v
		case n[p.Name] != nil:
			v, err := strconv.ParseInt(p.Value, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s %q is not a whole number", p.Name, p.Value)
			}
			*n[p.Name] = v
		case d[p.Name] != nil:
			v, err := time.ParseDuration(p.Value)
			if err != nil {
				return nil, fmt.Errorf("%s %q is not a duration such as 50ms", p.Name, p.Value)
			}
			*d[p.Name] = v
		}
	}
	return c, nil
}
