package bench_test

import (
	"strings"
	"testing"
	"time"

	"github.com/dunglas/httpsfv"

	"github.com/sluicehq/sluice/httplimit"
)

// The RateLimit fields httplimit writes, read by an independent RFC 8941
// codec (github.com/dunglas/httpsfv), and the fields that codec writes,
// read by httplimit: every member, lists of several, the largest integers,
// odd names.

var oddNames = []string{"default", "", `a"b\c`, "per-ip", "名前", "tab\there", strings.Repeat("x", 300)}

var quotas = []int64{0, 1, 100, httplimit.MaxInteger, httplimit.MaxInteger + 1, 1 << 62}

func TestHttplimitFieldsReadByHttpsfv(t *testing.T) {
	var members []string
	var want []httplimit.Policy
	for i, name := range oddNames {
		p := httplimit.Policy{Name: name, Quota: quotas[i%len(quotas)], Unit: []string{"", "content-bytes"}[i%2], Window: time.Duration(i+1) * time.Minute}
		members = append(members, httplimit.FormatPolicy(p))
		want = append(want, p)
	}
	list, err := httpsfv.UnmarshalList([]string{strings.Join(members, ", ")})
	if err != nil {
		t.Fatalf("httpsfv refuses %q: %v", members, err)
	}
	if len(list) != len(want) {
		t.Fatalf("%d members, want %d", len(list), len(want))
	}
	for i, m := range list {
		it := m.(httpsfv.Item)
		name, _ := it.Value.(string)
		q, _ := it.Params.Get("q")
		w, _ := it.Params.Get("w")
		if want[i].Unit != "" {
			if qu, _ := it.Params.Get("qu"); qu != want[i].Unit {
				t.Errorf("member %d: qu %v", i, qu)
			}
		}
		if name != sanitize(want[i].Name) || q != min(want[i].Quota, httplimit.MaxInteger) || w != int64(want[i].Window/time.Second) {
			t.Errorf("member %d: %q q=%v w=%v, want %+v", i, name, q, w, want[i])
		}
	}
	for _, r := range quotas {
		s := httplimit.FormatServiceLimit(httplimit.ServiceLimit{Name: "n", Remaining: r, Reset: 90 * time.Second})
		l, err := httpsfv.UnmarshalList([]string{s})
		if err != nil {
			t.Fatalf("httpsfv refuses %q: %v", s, err)
		}
		got, _ := l[0].(httpsfv.Item).Params.Get("r")
		if got != min(r, httplimit.MaxInteger) {
			t.Errorf("%q: r=%v", s, got)
		}
	}
}

func TestHttpsfvFieldsReadByHttplimit(t *testing.T) {
	var list httpsfv.List
	for i, name := range oddNames[:4] { // sf-strings are printable ASCII
		params := httpsfv.NewParams()
		params.Add("q", quotas[i%4])
		params.Add("qu", "requests")
		params.Add("w", int64(60))
		params.Add("acme-note", httpsfv.Token("x"))
		list = append(list, httpsfv.Item{Value: name, Params: params})
	}
	s, err := httpsfv.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	got, err := httplimit.ParsePolicies(s)
	if err != nil {
		t.Fatalf("httplimit refuses %q: %v", s, err)
	}
	for i, p := range got {
		if p.Name != oddNames[i] || p.Quota != quotas[i%4] || p.Window != time.Minute || p.Unit != "requests" {
			t.Errorf("member %d: %+v", i, p)
		}
	}
}

// sanitize is what httplimit writes of a name: bytes outside printable
// ASCII as '?'.
func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = '?'
		}
	}
	return string(b)
}
