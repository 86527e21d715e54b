// Package schedule reads the schedule of a persisted job (the cronjob tool)
// and computes when it is next due. It is pure: no clock, no I/O. The time a
// schedule is parsed at is an argument, so the scheduler can rebuild the same
// schedule later from a job's stored text and creation time:
//
//	s, err := schedule.Parse(job.Schedule, job.Created, loc)
//	next, ok := s.Next(ranAt)
//
// Accepted forms, tried in this order:
//
//   - "every 5m", "every 1h30m", "@every 2h": repeating, every interval from
//     the parse time; at least MinInterval apart.
//   - "in 10m" or a bare duration "30s", "1h30m", "2d", "10 minutes": once,
//     that long after the parse time.
//   - a five-field cron expression "0 9 * * 1-5" or a macro ("@hourly",
//     "@daily", "@weekly", "@monthly", "@yearly"), optionally prefixed with
//     "CRON_TZ=Europe/Paris " to pick its zone; otherwise in the zone given
//     to Parse.
//   - an RFC 3339 time "2026-05-01T09:00:00+02:00", optionally after "at":
//     once at that time, which must be after the parse time.
package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// MinInterval is the shortest interval a repeating schedule may have, so a
// model cannot schedule a flood of turns into a conversation. Cron
// expressions cannot go below one minute anyway.
const MinInterval = 10 * time.Second

// ErrInvalid is wrapped by every error about a schedule Parse refuses. The
// error text says what is wrong, in words meant for the model or the user.
var ErrInvalid = errors.New("invalid schedule")

// Schedule is when a job runs.
type Schedule interface {
	// Next returns the first time the job is due strictly after after, or
	// false when it will never be due again.
	Next(after time.Time) (time.Time, bool)
	// Once reports whether the job runs a single time (and is deleted after).
	Once() bool
	// String describes the schedule for a user ("once at …", "every 5m",
	// "cron 0 9 * * * (Europe/Paris)").
	String() string
}

// Help is a one-line reminder of the accepted forms, for error messages.
const Help = `use a delay ("10m", "in 2h"), an interval ("every 30m"), a cron expression ("0 9 * * 1-5") or an RFC 3339 time ("2026-05-01T09:00:00+02:00")`

// Parse reads spec as of now. Cron expressions without a CRON_TZ= prefix
// are evaluated in loc (nil means time.Local). A schedule that would never
// run (in the past, 30 February) is an error.
func Parse(spec string, now time.Time, loc *time.Location) (Schedule, error) {
	if loc == nil {
		loc = time.Local
	}
	s, err := parse(strings.TrimSpace(spec), now, loc)
	if err != nil {
		return nil, err
	}
	if _, ok := s.Next(now); !ok {
		return nil, invalid("%q never runs after %s", spec, now.In(loc).Format(time.RFC3339))
	}
	return s, nil
}

func parse(spec string, now time.Time, loc *time.Location) (Schedule, error) {
	if spec == "" {
		return nil, invalid("empty schedule: %s", Help)
	}
	for _, p := range []string{"every ", "@every "} {
		if rest, ok := cutPrefixFold(spec, p); ok {
			return parseEvery(spec, rest, now)
		}
	}
	if rest, ok := cutPrefixFold(spec, "in "); ok {
		return parseDelay(spec, rest, now)
	}
	if rest, ok := cutPrefixFold(spec, "at "); ok {
		return parseAt(spec, rest, now)
	}
	if strings.HasPrefix(spec, "@") || strings.HasPrefix(spec, "CRON_TZ=") || strings.HasPrefix(spec, "TZ=") {
		return parseCron(spec, loc)
	}
	if looksLikeTime(spec) {
		return parseAt(spec, spec, now)
	}
	// Before cron: "1 hour and 30 minutes" has five fields too. No cron
	// expression reads as a duration (a unit is a word after a number).
	if d, ok := parseDuration(spec); ok {
		return delay(spec, d, now)
	}
	if len(strings.Fields(spec)) == 5 {
		return parseCron(spec, loc)
	}
	if n := len(strings.Fields(spec)); n > 1 && n != 5 && allCronChars(spec) {
		return nil, invalid("cron expression %q has %d fields, want 5 (minute hour day-of-month month day-of-week)", spec, n)
	}
	return nil, invalid("cannot read %q: %s", spec, Help)
}

// cutPrefixFold is strings.CutPrefix ignoring ASCII case; the rest is
// trimmed.
func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return "", false
	}
	return strings.TrimSpace(s[len(prefix):]), true
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// looksLikeTime reports whether s starts like a date (2026-…), so a
// malformed timestamp gets a timestamp error instead of a generic one.
func looksLikeTime(s string) bool {
	return len(s) >= 5 && s[4] == '-' && strings.IndexFunc(s[:4], func(r rune) bool { return r < '0' || r > '9' }) < 0
}

func allCronChars(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool {
		return !(r >= '0' && r <= '9' || r == '*' || r == '/' || r == ',' || r == '-' || r == ' ' || r == '\t' || r == '?')
	}) < 0
}

// once runs a single time, at at.
type once struct {
	at   time.Time
	desc string
}

func (o once) Next(after time.Time) (time.Time, bool) {
	if o.at.After(after) {
		return o.at, true
	}
	return time.Time{}, false
}

func (once) Once() bool { return true }

func (o once) String() string { return o.desc }

func delay(spec string, d time.Duration, now time.Time) (Schedule, error) {
	if d <= 0 {
		return nil, invalid("delay %q must be positive", spec)
	}
	at := now.Add(d)
	if !at.After(now) {
		return nil, invalid("delay %q is too long", spec)
	}
	return once{at: at, desc: "once, " + FormatDuration(d) + " after it was set"}, nil
}

func parseDelay(spec, text string, now time.Time) (Schedule, error) {
	d, ok := parseDuration(text)
	if !ok {
		return nil, invalid("cannot read %q as a delay; write it like 30s, 10m, 1h30m or 2d", spec)
	}
	return delay(spec, d, now)
}

func parseAt(spec, text string, now time.Time) (Schedule, error) {
	at, err := time.Parse(time.RFC3339, text)
	if err != nil {
		return nil, invalid("cannot read %q as an RFC 3339 time (like 2026-05-01T09:00:00+02:00): %v", spec, err)
	}
	if !at.After(now) {
		return nil, invalid("%s is in the past (it is now %s)", text, now.In(at.Location()).Format(time.RFC3339))
	}
	return once{at: at, desc: "once at " + at.Format(time.RFC3339)}, nil
}

// every repeats every iv, counted from anchor (the parse time), so the
// cadence does not drift when a run is late.
type every struct {
	anchor time.Time
	iv     time.Duration
}

func parseEvery(spec, text string, now time.Time) (Schedule, error) {
	iv, ok := parseDuration(text)
	if !ok {
		return nil, invalid("cannot read the interval of %q; write it like every 30m or every 2h, or use a cron expression such as 0 9 * * 1 (Mondays at 9)", spec)
	}
	if iv < MinInterval {
		return nil, invalid("interval of %q is shorter than the minimum of %s", spec, FormatDuration(MinInterval))
	}
	return every{anchor: now, iv: iv}, nil
}

func (e every) Next(after time.Time) (time.Time, bool) {
	if after.Before(e.anchor) {
		return e.anchor.Add(e.iv), true
	}
	elapsed := after.Sub(e.anchor) // saturates past ~292 years
	k := elapsed/e.iv + 1
	if k > (1<<63-1)/e.iv {
		return time.Time{}, false
	}
	t := e.anchor.Add(k * e.iv)
	if !t.After(after) {
		return time.Time{}, false
	}
	return t, true
}

func (every) Once() bool { return false }

func (e every) String() string { return "every " + FormatDuration(e.iv) }
