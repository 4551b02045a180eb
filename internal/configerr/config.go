// Package configerr holds the one error every package of sluice returns for
// a configuration it cannot honour. permits.ErrInvalidConfig is ErrInvalid,
// and so are the older sentinels of algorithms, keyed, retry, breaker,
// budget and httplimit, so that one errors.Is matches them all. It is a
// leaf, so that the pure packages (algorithms) can use it without
// importing permits.
package configerr

import (
	"errors"
	"fmt"
)

// ErrInvalid is permits.ErrInvalidConfig.
var ErrInvalid = errors.New("sluice: invalid configuration")

// Error is a configuration error of package Pkg: it reads "Pkg: invalid
// configuration: what", names what was wrong (the option or field, and the
// value given), and matches ErrInvalid with errors.Is.
type Error struct {
	Pkg string
	err error
}

// Errorf returns an *Error of package pkg, whose cause is formatted as
// fmt.Errorf does (a %w in format wraps an error errors.Is finds too).
func Errorf(pkg, format string, args ...any) error {
	return &Error{Pkg: pkg, err: fmt.Errorf(format, args...)}
}

func (e *Error) Error() string {
	return e.Pkg + ": invalid configuration: " + e.err.Error()
}

// Is reports whether target is ErrInvalid.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// Unwrap returns the cause, for an error it wraps.
func (e *Error) Unwrap() error { return e.err }
