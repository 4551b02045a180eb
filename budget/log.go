package budget

import (
	"context"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice/internal/window"
)

// The log lines of a RetryBudget (WithLogger). The messages and the
// attribute keys are stable: docs/observability.md lists them.
const (
	msgExhausted = "sluice: retry budget exhausted"
	msgRecovered = "sluice: retry budget recovered"

	keyName        = "sluice.budget.name"
	keyBalance     = "balance"
	keyDeposits    = "deposits"
	keyWithdrawals = "withdrawals"
)

// WithLogger writes a line to logger when the budget's state changes,
// never for a deposit or a withdrawal: "sluice: retry budget exhausted",
// at Warn, for the first TryWithdraw refused after one allowed (or the
// first of all), and "sluice: retry budget recovered", at Info, for the
// first allowed after a refusal. Each line carries the budget's name
// (WithName), the balance before the call and the deposits and
// withdrawals still counting. A budget has no timer: its recovery is told
// by the next retry it allows. The line is written by the TryWithdraw that
// changed the state, after the budget's lock is released. nil, the
// default, writes nothing and costs nothing.
func WithLogger(logger *slog.Logger) Option {
	return optionFunc(func(c *config) { c.logger = logger })
}

// changed tells whether a TryWithdraw that allowed (ok) changes the state
// the log told of, and records it. It requires b.mu held.
func (b *RetryBudget) changed(ok bool) bool {
	if b.logger == nil || ok == !b.exhausted {
		return false
	}
	b.exhausted = !ok
	return true
}

// logChange writes the line of a TryWithdraw that changed the state, with
// the balance and the totals it decided by.
func (b *RetryBudget) logChange(at time.Time, ok bool, balance int64, t window.Counts) {
	level, msg := slog.LevelWarn, msgExhausted
	if ok {
		level, msg = slog.LevelInfo, msgRecovered
	}
	ctx := context.Background()
	if !b.logger.Enabled(ctx, level) {
		return
	}
	r := slog.NewRecord(at, level, msg, 0)
	r.AddAttrs(slog.String(keyName, b.name), slog.Int64(keyBalance, balance),
		slog.Int64(keyDeposits, t[deposits]), slog.Int64(keyWithdrawals, t[withdrawals]))
	_ = b.logger.Handler().Handle(ctx, r) // a handler's error has nowhere to go
}
