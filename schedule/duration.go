package schedule

import (
	"strconv"
	"strings"
	"time"
)

// units maps the unit words a person or a model writes to their length.
var units = map[string]time.Duration{
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hrs": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
	"w": 7 * 24 * time.Hour, "week": 7 * 24 * time.Hour, "weeks": 7 * 24 * time.Hour,
}

// parseDuration reads a Go duration ("1h30m", "90s", "1.5h") or a sequence
// of whole numbers with units, days and weeks included ("2d", "1 hour 30
// minutes", "1d12h"). It refuses anything else, and overflow.
func parseDuration(s string) (time.Duration, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return 0, false
	}
	compact := strings.Join(strings.Fields(s), "")
	if d, err := time.ParseDuration(compact); err == nil {
		return d, true
	}
	s = strings.ReplaceAll(s, ",", " ")
	s = strings.ReplaceAll(s, " and ", " ")
	var total time.Duration
	for rest := strings.TrimSpace(s); rest != ""; rest = strings.TrimSpace(rest) {
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 || i > 9 {
			return 0, false
		}
		n, _ := strconv.Atoi(rest[:i])
		rest = strings.TrimLeft(rest[i:], " ")
		j := 0
		for j < len(rest) && rest[j] >= 'a' && rest[j] <= 'z' {
			j++
		}
		unit, ok := units[rest[:j]]
		if !ok {
			return 0, false
		}
		rest = rest[j:]
		if time.Duration(n) > (1<<63-1-total)/unit {
			return 0, false
		}
		total += time.Duration(n) * unit
	}
	return total, true
}

// FormatDuration writes d compactly with days ("2d", "1h30m", "45s"), the
// way users write delays, instead of time.Duration's "1h30m0s".
func FormatDuration(d time.Duration) string {
	if d <= 0 || d%time.Second != 0 {
		return d.String()
	}
	var b strings.Builder
	for _, u := range []struct {
		n      time.Duration
		suffix string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}} {
		if d >= u.n {
			b.WriteString(strconv.FormatInt(int64(d/u.n), 10))
			b.WriteString(u.suffix)
			d %= u.n
		}
	}
	return b.String()
}
