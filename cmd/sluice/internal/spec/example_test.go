package spec_test

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/internal/spec"
)

func ExampleParse() {
	for _, s := range []string{"gcra:100/s,burst=10", "token:50,1/s", "fixed:100/1m", "sliding:100"} {
		l, err := spec.Parse(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%-22s at most %d in any minute\n", l, l.Bound(time.Minute))
	}
	// Output:
	// gcra:100/s,burst=10    at most 6009 in any minute
	// token:1/s,capacity=50  at most 109 in any minute
	// fixed:100/m            at most 200 in any minute
	// invalid limit "sliding:100": sliding takes a rate only (COUNT/PERIOD such as 100/1m), not "100"
}
