package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Job is a persisted scheduled prompt (the cronjob tool). It belongs to the
// session that created it: when it fires, that session runs it, and no other
// session can change or remove it.
type Job struct {
	// ID is chosen by the caller and unique across all sessions.
	ID         string
	SessionKey string
	// Schedule is the user's schedule text (cron expression, "in 20m", …);
	// the scheduler interprets it and computes NextRun.
	Schedule string
	Prompt   string
	// NextRun is when the job is next due; zero means never.
	NextRun time.Time
	// LastRun is when it last fired; zero if never.
	LastRun time.Time
	// Once marks a one-shot job: MarkJobRun deletes it.
	Once bool
	// Created defaults to the store's clock; PutJob keeps the first value.
	Created time.Time
	// Disabled jobs are kept but never due. The zero Job is enabled.
	Disabled bool
}

const jobColumns = `id, session_key, schedule, prompt, next_run, last_run, once, created, enabled`

func scanJob(sc interface{ Scan(...any) error }) (Job, error) {
	var j Job
	var next, last sql.NullInt64
	var created int64
	var enabled bool
	err := sc.Scan(&j.ID, &j.SessionKey, &j.Schedule, &j.Prompt, &next, &last, &j.Once, &created, &enabled)
	j.NextRun, j.LastRun, j.Created, j.Disabled = fromNullMS(next), fromNullMS(last), fromMS(created), !enabled
	return j, err
}

// PutJob creates job j or updates the job with its ID. A job cannot move to
// another session: updating a job id that belongs to a different session is
// ErrNotFound.
func (s *Store) PutJob(ctx context.Context, j Job) error {
	if _, err := parseKey(j.SessionKey); err != nil {
		return fmt.Errorf("put job %q: %w", j.ID, err)
	}
	if strings.TrimSpace(j.ID) == "" || strings.TrimSpace(j.Prompt) == "" {
		return fmt.Errorf("put job %q: %w: id and prompt are required", j.ID, ErrInvalid)
	}
	if j.Created.IsZero() {
		j.Created = s.now()
	}
	err := s.write(ctx, 1, fenced(ctx, j.SessionKey, func(x *wtx) error {
		n, err := x.changed(`INSERT INTO jobs(`+jobColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT(id) DO UPDATE SET schedule = excluded.schedule, prompt = excluded.prompt,
				next_run = excluded.next_run, last_run = excluded.last_run, once = excluded.once,
				enabled = excluded.enabled
			WHERE jobs.session_key = excluded.session_key`,
			j.ID, j.SessionKey, j.Schedule, j.Prompt, nullMS(j.NextRun), nullMS(j.LastRun), j.Once, ms(j.Created), !j.Disabled)
		if err == nil && n == 0 {
			err = fmt.Errorf("%w: job id is taken by another session", ErrNotFound)
		}
		return err
	}))
	if err != nil {
		return fmt.Errorf("put job %q of %s: %w", j.ID, j.SessionKey, err)
	}
	return nil
}

// RemoveJob deletes the job id of session key (ErrNotFound if that session
// has no such job).
func (s *Store) RemoveJob(ctx context.Context, key, id string) error {
	err := s.write(ctx, 1, fenced(ctx, key, func(x *wtx) error {
		n, err := x.changed(`DELETE FROM jobs WHERE id = ? AND session_key = ?`, id, key)
		if err == nil && n == 0 {
			err = ErrNotFound
		}
		return err
	}))
	if err != nil {
		return fmt.Errorf("remove job %q of %s: %w", id, key, err)
	}
	return nil
}

// JobsForSession returns the session's jobs, soonest first, then those
// never due.
func (s *Store) JobsForSession(ctx context.Context, key string) ([]Job, error) {
	return s.jobs(ctx, "jobs of "+key, `SELECT `+jobColumns+` FROM jobs WHERE session_key = ?
		ORDER BY next_run IS NULL, next_run, id`, key)
}

// DueJobs returns the enabled jobs due at now, earliest first. The
// scheduler claims each with MarkJobRun before firing it.
func (s *Store) DueJobs(ctx context.Context, now time.Time) ([]Job, error) {
	return s.jobs(ctx, "due jobs", `SELECT `+jobColumns+` FROM jobs
		WHERE enabled AND next_run IS NOT NULL AND next_run <= ? ORDER BY next_run, id`, ms(now))
}

func (s *Store) jobs(ctx context.Context, what, q string, args ...any) ([]Job, error) {
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	var out []Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// MarkJobRun records that job id fired at ranAt and claims that occurrence:
// it succeeds only if the job is enabled and due at ranAt, and it moves the
// job past ranAt in the same transaction. A one-shot job is deleted; a
// recurring job gets next as its next run, or is disabled when next is nil.
// A second claim of the same occurrence (another scheduler, or a replay
// after a restart) gets ErrJobNotDue or ErrNotFound, so the scheduler fires
// a job only after MarkJobRun returned nil and each occurrence fires at most
// once.
func (s *Store) MarkJobRun(ctx context.Context, id string, ranAt time.Time, next *time.Time) error {
	if next != nil && !next.After(ranAt) {
		return fmt.Errorf("mark job %q run: %w: next run %v is not after %v", id, ErrInvalid, *next, ranAt)
	}
	err := s.write(ctx, 1, func(x *wtx) error {
		var once, enabled bool
		var due sql.NullInt64
		err := x.queryRow(`SELECT once, enabled, next_run FROM jobs WHERE id = ?`+x.w.dialect.forUpdate, []any{&once, &enabled, &due}, id)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if !enabled || !due.Valid || due.Int64 > ms(ranAt) {
			return ErrJobNotDue
		}
		switch {
		case once:
			_, err = x.exec(`DELETE FROM jobs WHERE id = ?`, id)
		case next == nil:
			_, err = x.exec(`UPDATE jobs SET last_run = ?, next_run = NULL, enabled = FALSE WHERE id = ?`, ms(ranAt), id)
		default:
			_, err = x.exec(`UPDATE jobs SET last_run = ?, next_run = ? WHERE id = ?`, ms(ranAt), ms(*next), id)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("mark job %q run: %w", id, err)
	}
	return nil
}

// ClaimDueJobs claims every job due at now in one transaction, the way
// MarkJobRun claims one: a one-shot job is deleted, a recurring job moves to
// next(job) (or is disabled when next returns nil). It returns the claimed
// jobs, each of which the caller must fire exactly once; a job claimed by
// another scheduler meanwhile is not among them. next runs on the store's
// writer goroutine: it must be quick and must not touch the store.
func (s *Store) ClaimDueJobs(ctx context.Context, now time.Time, next func(Job) *time.Time) ([]Job, error) {
	var claimed []Job
	err := s.write(ctx, 1, func(x *wtx) error {
		claimed = claimed[:0]
		// On PostgreSQL another member's scheduler may be claiming too: rows
		// it locked are skipped (they are its claims), never claimed twice.
		rows, err := x.query(`SELECT `+jobColumns+` FROM jobs
			WHERE enabled AND next_run IS NOT NULL AND next_run <= ? ORDER BY next_run, id`+x.w.dialect.skipLocked, ms(now))
		if err != nil {
			return err
		}
		var due []Job
		for rows.Next() {
			j, err := scanJob(rows)
			if err != nil {
				rows.Close()
				return err
			}
			due = append(due, j)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
		for _, j := range due {
			var n *time.Time
			if !j.Once {
				if n = next(j); n != nil && !n.After(now) {
					n = nil // a schedule that does not move forward runs no more
				}
			}
			switch {
			case j.Once:
				_, err = x.exec(`DELETE FROM jobs WHERE id = ?`, j.ID)
			case n == nil:
				_, err = x.exec(`UPDATE jobs SET last_run = ?, next_run = NULL, enabled = FALSE WHERE id = ?`, ms(now), j.ID)
			default:
				_, err = x.exec(`UPDATE jobs SET last_run = ?, next_run = ? WHERE id = ?`, ms(now), ms(*n), j.ID)
			}
			if err != nil {
				return fmt.Errorf("claim job %q: %w", j.ID, err)
			}
			claimed = append(claimed, j)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim due jobs: %w", err)
	}
	return claimed, nil
}
