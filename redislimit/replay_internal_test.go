package redislimit

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCRC16IsRedisClusters(t *testing.T) {
	assert.Equal(t, uint16(0x31C3), crc16("123456789"), "CRC-16/XMODEM's check value")
	assert.Equal(t, uint16(12182), slotOf("foo"), "CLUSTER KEYSLOT foo")
	assert.Equal(t, slotOf("bar"), slotOf("{bar}:x"), "a hash tag")
	assert.Equal(t, crc16("{}x")%slots, slotOf("{}x"), "an empty tag is no tag")
}

func TestAReplayKeySharesItsKeysSlot(t *testing.T) {
	for _, name := range []string{"quota:acme-api", "prefix{user-7}", "a{b}c{d}", "{}x", "a}b", "}", "x{y", "x{y}}", "{", "pre{tag}:{k}", ""} {
		rk := replayKeyOf(name, "0123456789abcdef")
		assert.Equal(t, slotOf(name), slotOf(rk), "%q: %q", name, rk)
		assert.NotEqual(t, name, rk)
	}
}
