package main

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var machineArgs = []string{"simulate", "-limit", "gcra:10/s,burst=5", "-limit", "gcra:1/h", "-limit", "gcra:2/s,burst=2,per=key",
	"-traffic", "poisson:12/s,cost=1-2,keys=3",
	"-duration", "10s", "-upstream", "10/s", "-max-wait", "100ms", "-retry", "max=2,jitter=equal"}

// TestJSONSchema pins -format json: its keys, nested, in order, are
// exactly those docs/simulator.md documents; a field renamed or removed
// fails here, and the schema's version must change with it.
func TestJSONSchema(t *testing.T) {
	code, out, errs := sluice(append(machineArgs, "-format", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	golden(t, "simulate-json", out)
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	want := []string{"schema", "traffic", "traffic.patterns", "traffic.arrivals", "traffic.units", "traffic.duration_ns",
		"traffic.origin", "traffic.seed", "traffic.keys", "traffic.dropped", "max_wait_ns", "upstream", "window_ns",
		"limits", "limits.limit", "limits.offered", "limits.offered.requests", "limits.offered.units", "limits.admitted",
		"limits.admitted.requests", "limits.admitted.units", "limits.refused", "limits.refused.requests", "limits.refused.units",
		"limits.stranded", "limits.stranded.requests", "limits.stranded.units", "limits.too_large", "limits.waited",
		"limits.p50_wait_ns", "limits.p99_wait_ns", "limits.max_wait_ns", "limits.max_in_window", "limits.max_in_window_at_ns",
		"limits.exceeded", "limits.first_exceeded_ns", "limits.last_grant_ns", "limits.keys", "limits.top_refused",
		"limits.top_refused.key", "limits.top_refused.refused", "retry", "limits.retries", "limits.amplification",
		"limits.peak_retries", "limits.peak_retries_at_ns", "notes"}
	var got []string
	keys("", doc, &got)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("JSON keys\n got %v\nwant %v", got, want)
	}
	if doc["schema"] != "sluice.simulate/v1" {
		t.Errorf("schema %v", doc["schema"])
	}
	text, err := os.ReadFile(filepath.Join("..", "..", "docs", "simulator.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range want {
		name := k[strings.LastIndexByte(k, '.')+1:]
		if !strings.Contains(string(text), "`"+name+"`") {
			t.Errorf("docs/simulator.md does not document %q", k)
		}
	}
}

func keys(prefix string, v any, out *[]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			name := prefix + k
			if !slices.Contains(*out, name) {
				*out = append(*out, name)
			}
			keys(name+".", x, out)
		}
	case []any:
		for _, x := range v {
			keys(prefix, x, out)
		}
	}
}

// TestCSVFormat: -format csv is a header and a row per limit, each row as
// wide as the header, numbers as whole integers.
func TestCSVFormat(t *testing.T) {
	code, out, errs := sluice(append(machineArgs, "-format", "csv")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) != 4 || rows[0][0] != "limit" || rows[1][0] != "gcra:10/s,burst=5" {
		t.Fatalf("csv %q, %v", out, err)
	}
	for _, r := range rows[1:] {
		if len(r) != len(rows[0]) {
			t.Errorf("row %v is not as wide as the header", r)
		}
	}
}

// TestSeriesFile: -series writes a row per bin, one column per limit, the
// offered units summing to the traffic's.
func TestSeriesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "series.csv")
	if code, _, errs := sluice(append(machineArgs, "-series", path)...); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rows[0], []string{"start_s", "offered_units", "gcra:10/s,burst=5", "gcra:1/h,burst=1", "gcra:2/s,burst=2,per=key"}) || len(rows) < 1000 || len(rows) > 2001 {
		t.Errorf("header %v, %d rows; want a column per limit and 1,000-2,000 bins", rows[0], len(rows)-1)
	}
	if code, _, _ := sluice(append(machineArgs, "-format", "yaml")...); code != 2 {
		t.Errorf("-format yaml: exit %d, want 2", code)
	}
}

var fitArgs = []string{"fit", "-traffic", "csv:testdata/traffic.csv", "-upstream", "30/s", "-p99", "1.5s", "-max-wait", "3s",
	"-algorithms", "gcra,fixed", "-duration", "2m"}

// TestFitJSONSchema pins fit -format json: a search where one algorithm
// fits and one does not, and one where none does (exit 1, the closest
// named), hold every field; their keys are exactly those docs/simulator.md
// documents.
func TestFitJSONSchema(t *testing.T) {
	var got []string
	for _, tc := range []struct {
		name string
		code int
		args []string
	}{
		{"fit-json", 0, fitArgs},
		{"fit-none-json", 1, []string{"fit", "-traffic", "steady:20/s", "-duration", "20s", "-upstream", "10/s", "-p99", "10ms", "-algorithms", "gcra"}},
	} {
		code, out, errs := sluice(append(tc.args, "-format", "json")...)
		if code != tc.code || errs != "" {
			t.Fatalf("%s: exit %d, stderr %q", tc.name, code, errs)
		}
		golden(t, tc.name, out)
		var doc map[string]any
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		if doc["schema"] != "sluice.fit/v1" {
			t.Errorf("schema %v", doc["schema"])
		}
		keys("", doc, &got)
	}
	want := []string{"schema", "traffic", "max_wait_ns", "retry", "upstream", "headroom_percent", "judged", "p99_goal_ns",
		"algorithms", "algorithms.algorithm", "algorithms.best", "algorithms.any_traffic", "algorithms.tried", "algorithms.exceeded",
		"algorithms.missed", "algorithms.closest", "best", "closest"}
	for _, k := range []string{"patterns", "arrivals", "units", "duration_ns", "origin", "seed", "keys", "dropped"} {
		want = append(want, "traffic."+k)
	}
	for _, k := range []string{"limit", "why", "p99_over_ns", "exceeded_at_ns"} {
		want = append(want, "closest."+k, "algorithms.closest."+k)
	}
	// A pick is a simulation's row, as -format json prints one.
	var row map[string]any
	_, sim, _ := sluice(append(machineArgs, "-format", "json")...)
	if err := json.Unmarshal([]byte(sim), &row); err != nil {
		t.Fatal(err)
	}
	var limits []string
	keys("", row["limits"], &limits)
	for _, k := range limits {
		if !strings.HasPrefix(k, "top_refused.") { // fit searches limits over all keys
			want = append(want, "algorithms.best."+k)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("JSON keys\n got %v\nwant %v", got, want)
	}
	text, err := os.ReadFile(filepath.Join("..", "..", "docs", "simulator.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range want {
		if name := k[strings.LastIndexByte(k, '.')+1:]; !strings.Contains(string(text), "`"+name+"`") {
			t.Errorf("docs/simulator.md does not document %q", k)
		}
	}
}

// TestFitCSVFormat: fit -format csv is a header and a row per algorithm,
// each as wide as the header, the pick's columns empty when there is none.
func TestFitCSVFormat(t *testing.T) {
	code, out, errs := sluice(append(fitArgs, "-format", "csv")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) != 3 || rows[0][0] != "algorithm" || rows[1][1] != "gcra:1377/m,burst=6" || rows[2][0] != "fixed" || rows[2][1] != "" {
		t.Fatalf("csv %q, %v", out, err)
	}
	for _, r := range rows[1:] {
		if len(r) != len(rows[0]) {
			t.Errorf("row %v is not as wide as the header", r)
		}
	}
}

// TestFitStreamsBeyondMemory: traffic too large to hold is read afresh
// for every candidate, with the same outcome as from memory.
func TestFitStreamsBeyondMemory(t *testing.T) {
	_, inMemory, _ := sluice(fitArgs...)
	defer func(n int) { fitInMemory = n }(fitInMemory)
	fitInMemory = 100
	code, streamed, errs := sluice(fitArgs...)
	if code != 0 || streamed != inMemory {
		t.Errorf("exit %d %s; streamed:\n%s\nfrom memory:\n%s", code, errs, streamed, inMemory)
	}
}

// TestPerKeyFromJSONLines: a JSON line's key field feeds a per-key limit:
// each client gets its own one a second, and the one that sends most is
// named first among the refused.
func TestPerKeyFromJSONLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "traffic.jsonl")
	var lines []string
	for i := range 10 {
		lines = append(lines, `{"ts":"2025-03-01T12:00:00.`+strconv.Itoa(i)+`Z","client":"a"}`)
	}
	lines = append(lines, `{"ts":"2025-03-01T12:00:00.5Z","client":"b"}`, `{"ts":"2025-03-01T12:00:00.6Z","client":"b"}`, `{"ts":"2025-03-01T12:00:00.7Z","client":"c"}`)
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := sluice("simulate", "-limit", "sliding:1/s,per=key", "-limit", "sliding:3/s", "-traffic", "jsonl:"+path+",time=ts,key=client",
		"-max-wait", "0", "-format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc struct {
		Limits []struct {
			Admitted   struct{ Requests int64 }
			Keys       int
			TopRefused []struct {
				Key     string
				Refused int64
			} `json:"top_refused"`
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	perKey, shared := doc.Limits[0], doc.Limits[1]
	if perKey.Keys != 3 || perKey.Admitted.Requests != 3 || len(perKey.TopRefused) != 2 ||
		perKey.TopRefused[0].Key != "a" || perKey.TopRefused[0].Refused != 9 || perKey.TopRefused[1].Key != "b" {
		t.Errorf("per key: %+v; want 3 keys, one admitted each, a refused 9 then b 1", perKey)
	}
	if shared.Keys != 0 || shared.Admitted.Requests != 3 || len(shared.TopRefused) != 0 {
		t.Errorf("shared: %+v; want one limit over all keys admitting 3", shared)
	}
}
