// Package probe marks the tries that permits.All makes on its own behalf.
//
// All asks each rate limiter of a combined request for a grant without
// waiting, and when one would make the request wait it gives back what it
// took and waits on that one: its refusals are steps of an admission that
// may well succeed, not refusals of a caller, and a limiter's Stats must
// not count them as rejections. All cannot say so through the Refunder
// interface, whose TryAcquireGrant takes no context, and a method for it
// would be exported on every limiter for the sake of one caller. So All
// calls AcquireGrant with a context that Context marked, on limiters whose
// type registered, at init, that it answers such a call as a TryAcquireGrant
// whose refusal it does not count. A limiter that did not register is asked
// with TryAcquireGrant, as before.
package probe

import (
	"context"
	"reflect"
	"sync"
)

type key struct{}

// Context returns ctx marked as a probe.
func Context(ctx context.Context) context.Context { return context.WithValue(ctx, key{}, true) }

// Is reports whether ctx was marked by Context.
func Is(ctx context.Context) bool {
	v, _ := ctx.Value(key{}).(bool)
	return v
}

var honours sync.Map // reflect.Type → struct{}

// Register records that values of v's dynamic type answer a probe (see the
// package doc). Call it from an init function.
func Register(v any) { honours.Store(reflect.TypeOf(v), struct{}{}) }

// Honours reports whether v's dynamic type registered.
func Honours(v any) bool {
	_, ok := honours.Load(reflect.TypeOf(v))
	return ok
}
