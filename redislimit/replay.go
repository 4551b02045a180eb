package redislimit

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// A script call that gives back (a GCRA's give-back or Refund, a
// Window's settlements and give-backs) is idempotent: go-redis sends a command
// again when its connection drops before the reply (MaxRetries, 3 by
// default), and a give-back that the first run applied would be refused
// by the second (the key's value changed), so that the limiter would deal
// out again the room Redis had already given away. Such a call carries an
// id; the script keeps its reply, with the id, in a replay key of this
// engine's for a short while, and a run that finds its own id there
// answers the kept reply instead of deciding again.
//
// Only calls that give back need it. A call that only acquires and runs
// twice admits its requests twice, and the limiter uses the second run's
// answer: the first run's admissions are consumed and never granted, so
// the bound holds (fewer admissions, never more), and the common call
// pays nothing for it.

// replayTTL is how long a kept reply lives: go-redis's retries end at the
// call's deadline (call), and a retry sent by then reaches Redis within
// its WriteTimeout (3 s by default).
func (e *engine) replayTTL() int64 {
	return (e.cfg.callTimeout + 10*time.Second).Milliseconds()
}

// newReplayID names an engine's replay keys: random, so that engines on
// the same key, in this process or others, never share them.
func newReplayID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// nextCallID returns the id of a call that gives back, unique among this
// engine's. The holder of the state only.
func (e *engine) nextCallID() string {
	e.callID++
	return strconv.FormatUint(e.callID, 10)
}

// replayKey is the key that keeps the replies of ks's calls that give
// back, in the same Cluster slot as ks's own key (a script's keys must
// share one), made once per key state.
func (e *engine) replayKey(ks *keyState) string {
	if ks.replay == "" {
		ks.replay = replayKeyOf(ks.name, e.replayID)
	}
	return ks.replay
}

// replayKeyOf is name's replay key for the engine id: name itself with a
// suffix when name has a hash tag (the first {...} stays the first), else
// name as the hash tag, which Redis then hashes as it hashes name; a name
// with a '}' but no hash tag (or none at all) gets a tag of digits found
// to hash to its slot.
func replayKeyOf(name, id string) string {
	suffix := ":sluice-replay:" + id
	switch {
	case hashTag(name) != "":
		return name + suffix
	case name != "" && !strings.Contains(name, "}"):
		return "{" + name + "}" + suffix
	}
	want := slotOf(name)
	for i := 0; ; i++ {
		if tag := strconv.Itoa(i); crc16(tag)%slots == want {
			return "{" + tag + "}" + name + suffix
		}
	}
}

// slots is the number of Cluster hash slots.
const slots = 16384

// hashTag returns the part of key that Redis Cluster hashes when there is
// one: between the first '{' and the first '}' after it, if not empty.
func hashTag(key string) string {
	i := strings.IndexByte(key, '{')
	if i < 0 {
		return ""
	}
	j := strings.IndexByte(key[i+1:], '}')
	if j <= 0 {
		return ""
	}
	return key[i+1 : i+1+j]
}

// slotOf is key's Cluster hash slot.
func slotOf(key string) uint16 {
	if tag := hashTag(key); tag != "" {
		key = tag
	}
	return crc16(key) % slots
}

// crc16 is CRC-16/XMODEM, the checksum Redis Cluster hashes keys with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
