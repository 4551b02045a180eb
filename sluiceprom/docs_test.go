package sluiceprom_test

import (
	"os"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/sluiceprom"
)

// docRows returns the Prometheus columns of docs/observability.md's table
// of metrics, as "name type", sorted.
func docRows(t *testing.T) []string {
	doc, err := os.ReadFile("../docs/observability.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for line := range strings.Lines(string(doc)) {
		cells := strings.Split(line, "|")
		if !strings.HasPrefix(line, "| `sluice.") || !strings.Contains(cells[2], "Observable") && trim(cells[5]) != "histogram" {
			continue // not a row of the table of metrics
		}
		rows = append(rows, trim(cells[4])+" "+trim(cells[5]))
	}
	slices.Sort(rows)
	return rows
}

func trim(cell string) string { return strings.Trim(strings.TrimSpace(cell), "`") }

// The table in docs/observability.md is what a Collector sends: every
// Prometheus name with its type, and no other.
func TestTheDocumentedTableIsWhatTheCollectorSends(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := everySource(t)
		lim, err := sluiceprom.NewCollector(sluiceprom.Limiter("lim", func() permits.Stats { return permits.Stats{} }),
			sluiceprom.Transport("api", func() httplimit.TransportStats { return httplimit.TransportStats{} }))
		must(t, err)
		reg := prometheus.NewPedanticRegistry()
		must(t, reg.Register(c))
		must(t, reg.Register(lim))
		families, err := reg.Gather()
		must(t, err)
		var sent []string
		for _, f := range families {
			sent = append(sent, f.GetName()+" "+strings.ToLower(f.GetType().String()))
		}
		slices.Sort(sent)
		if doc := docRows(t); !slices.Equal(sent, doc) {
			t.Errorf("the Collector sends:\n\t%s\ndocs/observability.md says:\n\t%s",
				strings.Join(sent, "\n\t"), strings.Join(doc, "\n\t"))
		}
	})
}
