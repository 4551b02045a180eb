package keyed

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/configerr"
)

// ErrTooManyKeys is matched by the error a Limiter returns, at once and
// without waiting, for a key it would have to start tracking while it
// already tracks WithMaxKeys live keys. Keys already live are served as
// usual; the new key can be served once others have gone idle.
var ErrTooManyKeys = errors.New("keyed: too many live keys")

// ErrInvalidKey is matched by the error of a request for a key that is
// not equal to itself, such as a float NaN: it could never be found again,
// so it is refused rather than given a fresh, full limit every time.
var ErrInvalidKey = errors.New("keyed: invalid key")

// ErrInvalidConfig is permits.ErrInvalidConfig, the one error that every
// configuration error of sluice matches.
//
// Deprecated: match permits.ErrInvalidConfig, the same error.
var ErrInvalidConfig = configerr.ErrInvalid

// ErrNotTunable is matched by the error of SetRate or SetBurst for a key
// whose algorithm cannot change (it does not implement algorithms.Tunable),
// and of SetBurst for a key with a window, which has no burst. It is
// actor.ErrNotTunable itself, not a sentinel of keyed's own: the condition
// is the same, and code that tunes either kind of limiter (a client that
// lowers its rate on a 429) matches one error.
var ErrNotTunable = actor.ErrNotTunable

func invalid(format string, args ...any) error { return configerr.Errorf("keyed", format, args...) }

func tooMany(max int) error {
	return fmt.Errorf("%w: %d live keys is the most this limiter tracks", ErrTooManyKeys, max)
}

var errNilAlgorithm = errors.New("the constructor returned a nil algorithm and no error")

// isNilPointer reports whether alg is a nil pointer in an interface, such
// as a (*algorithms.GCRA)(nil), which passes a nil check and would panic
// at its first decision, on a caller's goroutine or the owner's.
func isNilPointer(alg algorithms.Algorithm) bool {
	v := reflect.ValueOf(alg)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// AlgorithmError is the error of a request whose key could not be made
// because the constructor given to New failed; Err is its error.
type AlgorithmError struct{ Err error }

func (e *AlgorithmError) Error() string { return "keyed: making the key's algorithm: " + e.Err.Error() }

// Unwrap returns Err.
func (e *AlgorithmError) Unwrap() error { return e.Err }
