package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// UsageRow is what one session spent on one model on one day.
type UsageRow struct {
	// Day is the UTC date, YYYY-MM-DD.
	Day   string
	Model string
	// Calls counts model calls; TokensIn and TokensOut their prompt and
	// completion tokens.
	Calls               int64
	TokensIn, TokensOut int64
}

// usageDay is the UTC date usage is booked under.
func usageDay(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// AddUsage books one model call's tokens for the session, under today's UTC
// date and the model's catalog name.
func (s *Store) AddUsage(ctx context.Context, key, model string, tokensIn, tokensOut int) error {
	if _, err := parseKey(key); err != nil {
		return fmt.Errorf("add usage: %w", err)
	}
	if tokensIn < 0 || tokensOut < 0 {
		return fmt.Errorf("add usage: %w: negative tokens", ErrInvalid)
	}
	if err := s.write(ctx, 1, s.usageOp(key, model, tokensIn, tokensOut)); err != nil {
		return fmt.Errorf("add usage of %s: %w", key, err)
	}
	return nil
}

// AddUsageAsync books as AddUsage does, without waiting: the write is queued
// before it returns (so it commits before any write queued after it, such as
// the settlement of the turn that spent the tokens), and done gets its
// outcome once.
func (s *Store) AddUsageAsync(key, model string, tokensIn, tokensOut int, done func(error)) {
	if tokensIn < 0 || tokensOut < 0 {
		go done(fmt.Errorf("add usage of %s: %w: negative tokens", key, ErrInvalid))
		return
	}
	s.queue(key, "add usage of", s.usageOp(key, model, tokensIn, tokensOut), done)
}

// usageOp adds one call's tokens to the session's row of today and model.
func (s *Store) usageOp(key, model string, tokensIn, tokensOut int) opFunc {
	day := usageDay(s.now())
	return func(x *wtx) error {
		_, err := x.exec(`INSERT INTO usage(session_key, day, model, calls, tokens_in, tokens_out) VALUES (?, ?, ?, 1, ?, ?)
			ON CONFLICT(session_key, day, model) DO UPDATE SET calls = usage.calls + 1,
			tokens_in = usage.tokens_in + excluded.tokens_in, tokens_out = usage.tokens_out + excluded.tokens_out`,
			key, day, model, tokensIn, tokensOut)
		return err
	}
}

// Usage returns everything the session spent, per day and model, oldest
// day first.
func (s *Store) Usage(ctx context.Context, key string) ([]UsageRow, error) {
	if _, err := parseKey(key); err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	rows, err := s.query(ctx, `SELECT day, model, calls, tokens_in, tokens_out FROM usage
		WHERE session_key = ? ORDER BY day, model`, key)
	if err != nil {
		return nil, fmt.Errorf("usage of %s: %w", key, err)
	}
	defer rows.Close()
	var out []UsageRow
	for rows.Next() {
		var r UsageRow
		if err := rows.Scan(&r.Day, &r.Model, &r.Calls, &r.TokensIn, &r.TokensOut); err != nil {
			return nil, fmt.Errorf("usage of %s: %w", key, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("usage of %s: %w", key, err)
	}
	return out, nil
}

// Today is the UTC date Usage rows of today carry, by the store's clock.
func (s *Store) Today() string { return usageDay(s.now()) }

// SessionModel returns the model the session chose with /model, "" for the
// default.
func (s *Store) SessionModel(ctx context.Context, key string) (string, error) {
	if _, err := parseKey(key); err != nil {
		return "", fmt.Errorf("session model: %w", err)
	}
	var name string
	err := s.queryRow(ctx, qSessionModel, []any{&name}, key)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("session model of %s: %w", key, err)
	}
	return name, nil
}

// SetSessionModel stores the session's /model choice; "" is the default.
func (s *Store) SetSessionModel(ctx context.Context, key, model string) error {
	return s.setSetting(ctx, key, "model", model)
}
