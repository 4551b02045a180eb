package ownermodel

import (
	"os"
	"strconv"
	"testing"

	"github.com/sluicehq/sluice/internal/testutil"
)

// Run plays scripts of cfg, seed after seed, until they have made target
// decisions (calls to the subject), checks each log, and logs the count
// in the form .ci/volume collects. It fails t for every log that breaks a
// rule (the first five are told, with their seeds; the whole log with
// SLUICE_DUMP=1), after playing on to the target, so that a full-volume
// run reports its count and every defect it met; and when the scripts did
// not exercise what the checks are about. SLUICE_SEED=n plays seed n
// alone.
func Run(t *testing.T, cfg Config, target int64, newSubject NewSubject) Counts {
	t.Helper()
	var total Counts
	var decisions int64
	seeds, failed := 0, 0
	first := uint64(1)
	if s, err := strconv.ParseUint(os.Getenv("SLUICE_SEED"), 10, 64); err == nil {
		first, target = s, 1 // one seed, to look at a failure
	}
	for seed := first; decisions < target; seed++ {
		log := Play(t, cfg, seed, newSubject)
		n, err := log.Check()
		if err != nil || os.Getenv("SLUICE_DUMP") == "all" {
			dump := ""
			if os.Getenv("SLUICE_DUMP") != "" {
				dump = "\n" + log.dump()
			}
			if err != nil {
				if failed++; failed <= 5 {
					t.Errorf("seed %d: %v%s", seed, err, dump)
				}
			} else {
				t.Logf("seed %d: passed%s", seed, dump) // SLUICE_DUMP=all
			}
		}
		total = total.add(n)
		decisions += log.Decision
		seeds++
	}
	testutil.ReportDecisions(t, decisions)
	t.Logf("%d seeds, %d failed: %+v", seeds, failed, total)
	if seeds > 1 {
		total.require(t, cfg, seeds)
	}
	return total
}

func (n Counts) add(m Counts) Counts {
	return Counts{n.Grants + m.Grants, n.Waited + m.Waited, n.AtOnce + m.AtOnce, n.Canceled + m.Canceled,
		n.Refunds + m.Refunds, n.RetryAfters + m.RetryAfters, n.ShareUnits + m.ShareUnits}
}

// require fails t if the scripts left a check with nothing to check.
func (n Counts) require(t *testing.T, cfg Config, seeds int) {
	t.Helper()
	floors := []struct {
		name   string
		got    int64
		enough int64
	}{
		{"grants after waiting", int64(n.Waited), int64(seeds) * 5},
		{"refusals at once", int64(n.AtOnce), 1},
		{"cancellations", int64(n.Canceled), 1},
	}
	if !cfg.RealTime {
		floors = append(floors, struct {
			name        string
			got, enough int64
		}{"RetryAfters checked", int64(n.RetryAfters), 1})
	}
	if cfg.Shared && len(cfg.Weights) > 1 && !cfg.RealTime {
		floors = append(floors, struct {
			name        string
			got, enough int64
		}{"units under the shares check", n.ShareUnits, int64(seeds)})
	}
	for _, f := range floors {
		if f.got < f.enough {
			t.Errorf("the scripts did not exercise %s enough: %d over %d seeds", f.name, f.got, seeds)
		}
	}
}
