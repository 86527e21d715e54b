package schedule

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// maxYears bounds how far Next looks for a match. Every valid expression
// matches within 8 years (29 February can be 8 years apart around 2100).
const maxYears = 10

// macros are the @-shorthands cron users know.
var macros = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

var (
	monthNames = []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
	dayNames   = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
)

// field is one cron field: its name, bounds and the names its values may
// go by (the first name is value lo).
type field struct {
	name   string
	lo, hi int
	names  []string
}

var fields = [5]field{
	{name: "minute", lo: 0, hi: 59},
	{name: "hour", lo: 0, hi: 23},
	{name: "day-of-month", lo: 1, hi: 31},
	{name: "month", lo: 1, hi: 12, names: monthNames},
	{name: "day-of-week", lo: 0, hi: 7, names: dayNames}, // 7 is Sunday too
}

// bits is a set of field values, bit v for value v.
type bits uint64

func (b bits) has(v int) bool { return b&(1<<uint(v)) != 0 }

// cron is a parsed five-field expression in a zone.
type cron struct {
	expr                          string // as written, without a zone prefix
	loc                           *time.Location
	minute, hour, dom, month, dow bits
	// domStar and dowStar record a field written as "*" or "?": then a day
	// must match both day fields, otherwise either (classic cron).
	domStar, dowStar bool
}

// parseCron reads a cron expression or macro, with an optional
// CRON_TZ=<zone> (or TZ=<zone>) prefix that overrides loc.
func parseCron(spec string, loc *time.Location) (Schedule, error) {
	expr := spec
	if first := strings.Fields(spec)[0]; strings.HasPrefix(first, "CRON_TZ=") || strings.HasPrefix(first, "TZ=") {
		rest := spec[strings.Index(spec, first)+len(first):]
		_, zone, _ := strings.Cut(first, "=")
		if zone == "" {
			return nil, invalid("%q: the time zone after %s is empty", spec, first)
		}
		l, err := time.LoadLocation(zone)
		if err != nil {
			return nil, invalid("%q: unknown time zone %q", spec, zone)
		}
		loc, expr = l, strings.TrimSpace(rest)
	}
	text := expr
	if strings.HasPrefix(expr, "@") {
		m, ok := macros[strings.ToLower(expr)]
		if !ok {
			return nil, invalid("unknown shorthand %q; known: @hourly, @daily, @weekly, @monthly, @yearly, @every <interval>", expr)
		}
		text = m
	}
	parts := strings.Fields(text)
	if len(parts) != 5 {
		return nil, invalid("cron expression %q has %d fields, want 5 (minute hour day-of-month month day-of-week)", expr, len(parts))
	}
	c := &cron{expr: expr, loc: loc}
	dest := [5]*bits{&c.minute, &c.hour, &c.dom, &c.month, &c.dow}
	for i, p := range parts {
		b, err := fields[i].parse(p)
		if err != nil {
			return nil, invalid("cron expression %q: %s field %q: %v", expr, fields[i].name, p, err)
		}
		*dest[i] = b
	}
	if c.dow.has(7) {
		c.dow = c.dow&^(1<<7) | 1
	}
	c.domStar = parts[2][0] == '*' || parts[2][0] == '?'
	c.dowStar = parts[4][0] == '*' || parts[4][0] == '?'
	return c, nil
}

// parse reads a comma-separated list of values, ranges (a-b) and steps
// (*/s, a-b/s, a/s).
func (f field) parse(text string) (bits, error) {
	var b bits
	for _, item := range strings.Split(text, ",") {
		if item == "" {
			return 0, fmt.Errorf("empty list item")
		}
		rng, stepText, hasStep := strings.Cut(item, "/")
		step := 1
		if hasStep {
			n, err := number(stepText)
			if err != nil || n == 0 {
				return 0, fmt.Errorf("step %q must be a positive number", stepText)
			}
			step = n
		}
		var lo, hi int
		switch {
		case rng == "*" || rng == "?":
			lo, hi = f.lo, f.hi
			if f.name == "day-of-week" {
				hi = 6 // "*" means every day once, not Sunday twice
			}
		case strings.Contains(rng, "-"):
			a, z, _ := strings.Cut(rng, "-")
			var err error
			if lo, err = f.value(a); err != nil {
				return 0, err
			}
			if hi, err = f.value(z); err != nil {
				return 0, err
			}
			if lo > hi {
				return 0, fmt.Errorf("range %s runs backwards", rng)
			}
		default:
			v, err := f.value(rng)
			if err != nil {
				return 0, err
			}
			lo, hi = v, v
			if hasStep {
				hi = f.hi
				if f.name == "day-of-week" {
					hi = 6
				}
			}
		}
		for v := lo; v <= hi; v += step {
			b |= 1 << uint(v)
		}
	}
	return b, nil
}

// value reads one number or name and checks it is within the field.
func (f field) value(s string) (int, error) {
	for i, n := range f.names {
		if strings.EqualFold(s, n) {
			return f.lo + i, nil
		}
	}
	v, err := number(s)
	if err != nil {
		if f.names != nil {
			return 0, fmt.Errorf("%q is neither a number nor a name like %s", s, f.names[0])
		}
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if v < f.lo || v > f.hi {
		return 0, fmt.Errorf("%d is out of range %d-%d", v, f.lo, f.hi)
	}
	return v, nil
}

// number reads a small non-negative decimal number.
func number(s string) (int, error) {
	if s == "" || len(s) > 4 || strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return strconv.Atoi(s)
}

// Next walks wall-clock minutes forward from after's, in the cron's zone,
// field by field. A wall time that does not exist (clocks go forward) runs
// at the same distance past midnight that time.Date gives it, i.e. just
// after the gap; a wall time that happens twice (clocks go back) runs once.
func (c *cron) Next(after time.Time) (time.Time, bool) {
	a := after.In(c.loc)
	y0, m0, d0 := a.Date()
	h0, min0 := a.Hour(), a.Minute()
	for y := y0; y <= y0+maxYears; y++ {
		for m := time.January; m <= time.December; m++ {
			if y == y0 && m < m0 || !c.month.has(int(m)) {
				continue
			}
			for d := 1; d <= daysIn(y, m); d++ {
				if y == y0 && m == m0 && d < d0 || !c.dayMatches(y, m, d) {
					continue
				}
				today := y == y0 && m == m0 && d == d0
				for h := 0; h < 24; h++ {
					if today && h < h0 || !c.hour.has(h) {
						continue
					}
					for mi := 0; mi < 60; mi++ {
						if today && h == h0 && mi <= min0 || !c.minute.has(mi) {
							continue
						}
						if t := time.Date(y, m, d, h, mi, 0, 0, c.loc); t.After(after) {
							return t, true
						}
					}
				}
			}
		}
	}
	return time.Time{}, false
}

func (c *cron) dayMatches(y int, m time.Month, d int) bool {
	dom := c.dom.has(d)
	dow := c.dow.has(int(time.Date(y, m, d, 12, 0, 0, 0, time.UTC).Weekday()))
	if c.domStar || c.dowStar {
		return dom && dow
	}
	return dom || dow
}

func daysIn(y int, m time.Month) int { return time.Date(y, m+1, 0, 12, 0, 0, 0, time.UTC).Day() }

func (*cron) Once() bool { return false }

func (c *cron) String() string { return fmt.Sprintf("cron %s (%s)", c.expr, c.loc) }
