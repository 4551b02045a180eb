package keyed

import (
	"hash/maphash"
	"reflect"
)

// maphash.Comparable hashes an interface value by its dynamic value alone:
// int64(5) and uint64(5) in a Limiter[any], or in a struct field of type
// any, hash alike, and since the table keeps only hashes (see table) they
// would always share one limit. For a key type that holds interfaces,
// keyHash mixes in the dynamic type of each interface value it holds.

// holdsInterface reports whether a value of type t can hold an interface
// value: t is one, or a struct or array with one inside.
func holdsInterface(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Interface:
		return true
	case reflect.Array:
		return holdsInterface(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if holdsInterface(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
}

// keyHash is key's 64-bit hash, with the dynamic types of the interface
// values it holds mixed in when typed (holdsInterface of K).
func keyHash[K comparable](seed maphash.Seed, key K, typed bool) uint64 {
	h := maphash.Comparable(seed, key)
	if typed {
		h = mixTypes(seed, h, reflect.ValueOf(&key).Elem())
	}
	return h
}

// mixTypes folds into h the dynamic type of every interface value inside
// v, in order, so that two keys equal as values but of other types differ.
func mixTypes(seed maphash.Seed, h uint64, v reflect.Value) uint64 {
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return mix(h, 0)
		}
		e := v.Elem()
		return mixTypes(seed, mix(h, maphash.Comparable(seed, e.Type())), e)
	case reflect.Array:
		for i := range v.Len() {
			h = mixTypes(seed, h, v.Index(i))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			h = mixTypes(seed, h, v.Field(i))
		}
	}
	return h
}

// mix combines h with x so that order matters and no bit of either is
// lost to the other (a multiply-xorshift round, as in splitmix64).
func mix(h, x uint64) uint64 {
	h ^= x + 0x9e3779b97f4a7c15 + h<<6 + h>>2
	h ^= h >> 31
	h *= 0xbf58476d1ce4e5b9
	return h ^ h>>27
}
