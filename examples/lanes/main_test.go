package main

import (
	"bytes"
	"flag"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The program's table, in virtual time: exact.
func TestRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg, err := parseFlags(nil, io.Discard)
		require.NoError(t, err)
		var out bytes.Buffer
		require.NoError(t, run(cfg, &out))
		assert.Equal(t, `one API key at 200 requests/s: a batch of 600 queued at once, an interactive request every 50ms for 3s

                    batch                           interactive                   
                       share   p99 wait    done at     share   p99 wait    done at
one FIFO              100.0%     2.965s     2.995s      0.0%     2.948s     3.295s
lanes 1:1              90.2%     3.265s     3.295s      9.8%        8ms      3.01s
interactive first      90.2%     3.265s     3.295s      9.8%        3ms     3.005s

share: of the grants in the first 3s, while both ask; done at: the tenant's last grant
`, out.String())
	})
}

// What the table is there to show, at other rates too: with one FIFO the
// interactive tenant waits for the batch; in a lane of its own it waits for
// a grant or two, and the key is used in full either way.
func TestKeyFacts(t *testing.T) {
	for _, cfg := range []config{
		{rate: 200, batch: 600, every: 50 * time.Millisecond, span: 3 * time.Second},
		{rate: 100, batch: 500, every: 20 * time.Millisecond, span: 2 * time.Second},
	} {
		synctest.Test(t, func(t *testing.T) {
			slot := time.Second / time.Duration(cfg.rate)
			var done []time.Duration
			for k, m := range modes {
				batch, interactive, err := share(cfg, m)
				require.NoError(t, err)
				done = append(done, max(batch.last, interactive.last))
				if k == 0 {
					assert.Greater(t, interactive.p99(), cfg.span/2, "%s: behind the batch", m.name)
					continue
				}
				assert.LessOrEqual(t, interactive.p99(), 2*slot, "%s: a grant or two", m.name)
				assert.Equal(t, int(cfg.span/cfg.every), len(interactive.waits))
			}
			assert.Equal(t, done[0], done[1], "the key is used in full with lanes")
			assert.Equal(t, done[0], done[2])
		})
	}
}

func TestFlags(t *testing.T) {
	_, err := parseFlags([]string{"-h"}, io.Discard)
	assert.ErrorIs(t, err, flag.ErrHelp)
	for _, bad := range [][]string{{"-rate", "0"}, {"-batch", "-1"}, {"-every", "0s"}, {"-every", "2s", "-for", "1s"}} {
		_, err := parseFlags(bad, io.Discard)
		assert.Error(t, err, "%v", bad)
	}
}
