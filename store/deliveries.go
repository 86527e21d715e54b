package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// RecordDelivery records that the reply numbered seq in session key was
// sent as the platform messages platformIDs, so the outbox sends each reply
// once even across a restart. Recording the same seq again overwrites it.
func (s *Store) RecordDelivery(ctx context.Context, key string, seq uint64, platformIDs []string) error {
	if _, err := parseKey(key); err != nil {
		return fmt.Errorf("record delivery: %w", err)
	}
	if platformIDs == nil {
		platformIDs = []string{}
	}
	ids, err := jsonText(platformIDs)
	if err != nil {
		return fmt.Errorf("record delivery %d of %s: %w", seq, key, err)
	}
	now := ms(s.now())
	err = s.write(ctx, 1, func(x *wtx) error {
		_, err := x.exec(`INSERT INTO deliveries(session_key, seq, platform_ids, sent) VALUES (?, ?, ?, ?)
			ON CONFLICT(session_key, seq) DO UPDATE SET platform_ids = excluded.platform_ids, sent = excluded.sent`,
			key, int64(seq), ids, now)
		return err
	})
	if err != nil {
		return fmt.Errorf("record delivery %d of %s: %w", seq, key, err)
	}
	return nil
}

// Delivery returns the platform message ids recorded for reply seq of
// session key; ok is false if it was never recorded (not sent yet).
func (s *Store) Delivery(ctx context.Context, key string, seq uint64) (platformIDs []string, ok bool, err error) {
	var ids string
	err = s.queryRow(ctx, `SELECT platform_ids FROM deliveries WHERE session_key = ? AND seq = ?`, []any{&ids}, key, int64(seq))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("delivery %d of %s: %w", seq, key, err)
	}
	if err := json.Unmarshal([]byte(ids), &platformIDs); err != nil {
		return nil, false, fmt.Errorf("delivery %d of %s: decode ids: %w", seq, key, err)
	}
	return platformIDs, true, nil
}

// LastDeliverySeq returns the highest reply seq recorded for session key
// (0 if none), so a session resumes its outbox numbering after a restart.
func (s *Store) LastDeliverySeq(ctx context.Context, key string) (uint64, error) {
	var seq int64
	if err := s.queryRow(ctx, `SELECT COALESCE(MAX(seq), 0) FROM deliveries WHERE session_key = ?`, []any{&seq}, key); err != nil {
		return 0, fmt.Errorf("last delivery of %s: %w", key, err)
	}
	return uint64(seq), nil
}
