// Package metricsrc holds what sluiceotel and sluiceprom share about their
// sources: the rules a set of sources must keep, whichever adapter reads
// them.
package metricsrc

import "github.com/sluicehq/sluice/internal/configerr"

// Ident is what the rules need of a source: its kind ("limiter", "breaker",
// "budget", "transport": names are unique per kind), its name, the error its
// constructor met, and whether a constructor made it at all.
type Ident struct {
	Kind, Name string
	Err        error
	Made       bool
}

// Check fails, matching permits.ErrInvalidConfig with pkg's name, for no
// sources, a source whose constructor failed or that no constructor made,
// or two sources of one kind with one name (whose series would be one).
// what names the call that was given them ("Register", "NewCollector").
func Check(pkg, what string, sources []Ident) error {
	if len(sources) == 0 {
		return configerr.Errorf(pkg, "%s needs at least one source", what)
	}
	seen := make(map[[2]string]bool, len(sources))
	for _, s := range sources {
		switch id := [2]string{s.Kind, s.Name}; {
		case s.Err != nil:
			return s.Err
		case !s.Made:
			return configerr.Errorf(pkg, "a Source made without Limiter, Keyed, Pool, Breaker, Budget or Transport")
		case seen[id]:
			return configerr.Errorf(pkg, "two sources of kind %s named %q: their series would be one", s.Kind, s.Name)
		default:
			seen[id] = true
		}
	}
	return nil
}
