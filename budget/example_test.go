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

// Stats shows an operator what the budget has counted: here ten requests,
// two retries allowed and one refused.
func ExampleRetryBudget_Stats() {
	b, err := budget.New(budget.WithName("search"), budget.WithMinRetriesPerSec(0))
	if err != nil {
		panic(err)
	}
	for range 10 {
		b.Deposit()
	}
	for range 3 {
		b.TryWithdraw()
	}
	fmt.Printf("%+v\n", b.Stats())
	// Output:
	// {Name:search Balance:0 Deposits:10 Withdrawals:2 Refusals:1}
}
