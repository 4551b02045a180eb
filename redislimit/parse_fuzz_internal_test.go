package redislimit

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// FuzzParseValue feeds parseValue what a key could hold (the limiter
// reads the value every call returns): it never panics, accepts exactly
// 32 bytes of four float64s that are integers in [0, 2^53), and what it
// accepts holds the numbers it was given and packs back to itself.
func FuzzParseValue(f *testing.F) {
	f.Add("")
	f.Add(packValue(1, 0, 1, 1))
	f.Add(packValue(1796083200000000, 2, 17, 1796083200000001))
	f.Add(packValue(maxExact-1, 0, 0, 0))
	f.Add("1:0:1:1")
	f.Add("1796083200000000:2:17:1796083200000001")
	f.Add(packValue(1, 2, 3, 4)[:31])
	f.Add(packValue(1, 2, 3, 4) + "x")
	nan := make([]byte, 32)
	binary.LittleEndian.PutUint64(nan, math.Float64bits(math.NaN()))
	f.Add(string(nan))
	f.Fuzz(func(t *testing.T, v string) {
		id, err := parseValue(v)
		if v == "" {
			if err != nil || id.ok {
				t.Fatalf("no key: %+v, %v", id, err)
			}
			return
		}
		valid := len(v) == valueLen
		var n [4]int64
		for i := 0; valid && i < 4; i++ {
			x := math.Float64frombits(binary.LittleEndian.Uint64([]byte(v[8*i:])))
			if !(x >= 0 && x < maxExact && x == math.Trunc(x)) {
				valid = false
			}
			n[i] = int64(x)
		}
		if valid != (err == nil) {
			t.Fatalf("%q: error %v, want valid %v", v, err, valid)
		}
		if err != nil {
			return
		}
		if !id.ok || id.w != n[0] || id.f != n[1] || id.n != n[2] {
			t.Fatalf("%q reads as %+v", v, id)
		}
		// -0.0 is an integer in range that packs back as +0.0.
		if p := packValue(n[0], n[1], n[2], n[3]); p != v && !hasNegativeZero(v) {
			t.Fatalf("%q packs back as %q", v, p)
		}
		if id.key() != packValue(n[0], n[1], n[2], 0)[:24] {
			t.Fatalf("%q: key %q", v, id.key())
		}
	})
}

func hasNegativeZero(v string) bool {
	for i := 0; i < 4; i++ {
		if binary.LittleEndian.Uint64([]byte(v[8*i:])) == 1<<63 {
			return true
		}
	}
	return false
}

// FuzzReadReply feeds the reader of the GCRA scripts' packed replies
// whatever a reply could be: it never panics, and accepts exactly the
// lengths a reply for its requests has (with or without the key's value),
// made of integers in range.
func FuzzReadReply(f *testing.F) {
	f.Add(packFloats(1796083200000000, 0, 1796083200000000)+packValue(1796083200000001, 0, 1, 1796083200000001), uint8(1))
	f.Add(packFloats(1796083200000000, 1, -5, 0, 1796083200000000), uint8(3))
	f.Add(packFloats(1796083200000000, 0, -7), uint8(1))
	f.Add("", uint8(0))
	f.Add(strings.Repeat("\x00", 47), uint8(2))
	f.Fuzz(func(t *testing.T, v string, n8 uint8) {
		n := int(n8 % 16)
		c := redis.NewCmd(context.Background())
		c.SetVal(v)
		a := read(c, n)
		if rest := len(v) - 16 - 8*n; a.err == nil && rest != 0 && rest != valueLen {
			t.Fatalf("%q for %d requests: accepted %d bytes", v, n, len(v))
		}
		if a.err == nil && len(a.codes) != n {
			t.Fatalf("%q: %d codes for %d requests", v, len(a.codes), n)
		}
	})
	c := redis.NewCmd(context.Background())
	c.SetVal(int64(3))
	if a := read(c, 1); a.err == nil {
		f.Fatal("an integer reply read as a packed one")
	}
}

// A reply the limiter cannot read comes from a Redis that answered: it
// fails the call, outcome unknown (the script ran), but does not take
// Redis for down, as a refused dial or a timeout does.
func TestAReplyThatCannotBeReadDoesNotTakeRedisForDown(t *testing.T) {
	c := redis.NewCmd(context.Background())
	c.SetVal(packFloats(1796083200000000, 0, 1796083200000000) + "short")
	a := read(c, 1)
	if !errors.Is(a.err, errMalformed) || outOfReach(a.err) || !outcomeUnknown(a.err) {
		t.Fatalf("malformed reply: %v, out of reach %v, unknown %v", a.err, outOfReach(a.err), outcomeUnknown(a.err))
	}
	if _, err := parseValue(strings.Repeat("x", valueLen)); !errors.Is(err, errMalformed) || outOfReach(err) {
		t.Fatalf("malformed value: %v", err)
	}
	if !outOfReach(&TimeoutError{After: time.Second}) || !outOfReach(&net.OpError{Op: "dial", Err: errors.New("refused")}) {
		t.Fatal("a timeout and a refused dial say Redis is out of reach")
	}
	if outOfReach(fmt.Errorf("wrapped: %w", errorReply("ERR sluice: k does not hold a sluice TAT"))) {
		t.Fatal("an error reply is Redis answering")
	}
}

// errorReply is a redis.Error, as go-redis returns for an error reply.
type errorReply string

func (e errorReply) Error() string { return string(e) }
func (errorReply) RedisError()     {}
