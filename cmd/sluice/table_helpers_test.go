package main

import (
	"strings"
	"testing"
)

// row returns the fields of the table row that starts with name, split on
// runs of two spaces or more (cells hold single spaces: "exceeded 3× from
// 1m"), or fails the test.
func row(t *testing.T, out, name string) []string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, name+" ") {
			var cells []string
			for _, c := range strings.Split(line, "  ") {
				if c = strings.TrimSpace(c); c != "" {
					cells = append(cells, c)
				}
			}
			return cells
		}
	}
	t.Fatalf("no row %q in:\n%s", name, out)
	return nil
}

// column returns the cell of the row under the header cell named col.
func column(t *testing.T, out, name, col string) string {
	t.Helper()
	header := row(t, out, strings.Fields(headerLine(t, out))[0])
	for i, h := range header {
		if h == col {
			r := row(t, out, name)
			if i < len(r) {
				return r[i]
			}
		}
	}
	t.Fatalf("no column %q for %q in:\n%s", col, name, out)
	return ""
}

func headerLine(t *testing.T, out string) string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "limit ") || strings.HasPrefix(line, "algorithm ") {
			return line
		}
	}
	t.Fatalf("no header in:\n%s", out)
	return ""
}
