package budget_test

import (
	"fmt"

	"github.com/sluicehq/sluice/budget"
)

// A budget with no reserve allows one retry for every five requests.
func ExampleRetryBudget() {
	b, err := budget.New(budget.WithMinRetriesPerSec(0), budget.WithPercentCanRetry(0.2))
	if err != nil {
		panic(err)
	}
	for range 10 { // ten requests
		b.Deposit()
	}
	fmt.Println("balance:", b.Balance())
	fmt.Println(b.TryWithdraw(), b.TryWithdraw(), b.TryWithdraw())
	// Output:
	// balance: 2
	// true true false
}

// The defaults: a reserve of 10 retries per second over a 10s ttl, plus 20%
// of the requests.
func ExampleNew() {
	b, err := budget.New()
	if err != nil {
		panic(err)
	}
	fmt.Println(b.Balance())
	for range 100 {
		b.Deposit()
	}
	fmt.Println(b.Balance())
	// Output:
	// 100
	// 120
}
