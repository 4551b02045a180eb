package redislimit

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzParseValue feeds parseValue what a key could hold (the limiter
// reads the value every call returns): it never panics, accepts exactly
// four fields that are 64-bit decimal integers, and what it accepts holds
// the fields it was given.
func FuzzParseValue(f *testing.F) {
	for _, s := range []string{"", "1:0:1:1", "1796083200000000:2:17:1796083200000001", "1:2:3", "1:2:3:4:5", "a:b:c:d", "-1:0:0:0", ":::", "99999999999999999999:0:0:0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		id, err := parseValue(v)
		if v == "" {
			if err != nil || id.ok {
				t.Fatalf("no key: %+v, %v", id, err)
			}
			return
		}
		parts := strings.Split(v, ":")
		valid := len(parts) == 4
		for _, p := range parts {
			if _, e := strconv.ParseInt(p, 10, 64); e != nil {
				valid = false
			}
		}
		if valid != (err == nil) {
			t.Fatalf("%q: error %v, want valid %v", v, err, valid)
		}
		if err != nil {
			return
		}
		var n [3]int64
		for i := range n {
			n[i], _ = strconv.ParseInt(parts[i], 10, 64)
		}
		if !id.ok || id.w != n[0] || id.f != n[1] || id.n != n[2] {
			t.Fatalf("%q reads as %+v", v, id)
		}
	})
}
