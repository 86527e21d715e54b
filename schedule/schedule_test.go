package schedule_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hermesd/hermesd/schedule"
)

// now is a Monday, 10:20:30 UTC.
var now = time.Date(2026, 3, 2, 10, 20, 30, 0, time.UTC)

func mustParse(t *testing.T, spec string, loc *time.Location) schedule.Schedule {
	t.Helper()
	s, err := schedule.Parse(spec, now, loc)
	if err != nil {
		t.Fatalf("Parse(%q): %v", spec, err)
	}
	return s
}

func TestParse_Once(t *testing.T) {
	cases := []struct {
		spec string
		want time.Time
	}{
		{"10s", now.Add(10 * time.Second)},
		{"30m", now.Add(30 * time.Minute)},
		{"1h30m", now.Add(90 * time.Minute)},
		{"in 10m", now.Add(10 * time.Minute)},
		{"IN 2 hours", now.Add(2 * time.Hour)},
		{"2d", now.Add(48 * time.Hour)},
		{"1 hour 30 minutes", now.Add(90 * time.Minute)},
		{"10 minutes", now.Add(10 * time.Minute)},
		{"1 hour and 30 minutes", now.Add(90 * time.Minute)}, // five fields, yet no cron expression
		{"2026-03-02T12:00:00Z", time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)},
		{"at 2026-03-02T13:00:00+02:00", time.Date(2026, 3, 2, 11, 0, 0, 0, time.UTC)},
	}
	for _, c := range cases {
		s := mustParse(t, c.spec, time.UTC)
		if !s.Once() {
			t.Errorf("Parse(%q).Once() = false, want true", c.spec)
		}
		got, ok := s.Next(now)
		if !ok || !got.Equal(c.want) {
			t.Errorf("Parse(%q).Next(now) = %v, %v; want %v", c.spec, got, ok, c.want)
		}
		if _, ok := s.Next(got); ok {
			t.Errorf("Parse(%q) runs again after its one run", c.spec)
		}
	}
}

func TestParse_Every(t *testing.T) {
	s := mustParse(t, "every 5m", time.UTC)
	if s.Once() {
		t.Fatal("every 5m is a one-shot")
	}
	next := now
	for i := 1; i <= 3; i++ {
		var ok bool
		if next, ok = s.Next(next); !ok || !next.Equal(now.Add(time.Duration(i)*5*time.Minute)) {
			t.Fatalf("run %d at %v, %v; want %v", i, next, ok, now.Add(time.Duration(i)*5*time.Minute))
		}
	}
	// A late run keeps the cadence: after 10:31 comes 10:35:30, not 10:36.
	late := now.Add(11 * time.Minute)
	if got, _ := s.Next(late); !got.Equal(now.Add(15 * time.Minute)) {
		t.Errorf("Next after a late run = %v, want %v", got, now.Add(15*time.Minute))
	}
	if got := s.String(); got != "every 5m" {
		t.Errorf("String() = %q", got)
	}
	if got, _ := mustParse(t, "@every 1h", time.UTC).Next(now); !got.Equal(now.Add(time.Hour)) {
		t.Errorf("@every 1h: next = %v", got)
	}
}

func TestParse_Cron(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	utc := func(mo time.Month, d, h, mi int) time.Time { return time.Date(2026, mo, d, h, mi, 0, 0, time.UTC) }
	cases := []struct {
		spec string
		loc  *time.Location
		want []time.Time // the next runs after now, in order
	}{
		{"0 9 * * *", time.UTC, []time.Time{utc(3, 3, 9, 0), utc(3, 4, 9, 0)}},
		{"*/15 * * * *", time.UTC, []time.Time{utc(3, 2, 10, 30), utc(3, 2, 10, 45), utc(3, 2, 11, 0)}},
		{"20 10 * * *", time.UTC, []time.Time{utc(3, 3, 10, 20)}}, // 10:20 today is already past (10:20:30)
		{"0 9 * * 1-5", time.UTC, []time.Time{utc(3, 3, 9, 0), utc(3, 4, 9, 0), utc(3, 5, 9, 0), utc(3, 6, 9, 0), utc(3, 9, 9, 0)}},
		{"0 9 * * MON,fri", time.UTC, []time.Time{utc(3, 6, 9, 0), utc(3, 9, 9, 0)}},
		{"0 0 1 jan-mar *", time.UTC, []time.Time{utc(1, 1, 0, 0).AddDate(1, 0, 0)}},
		{"0 12 1 * *", time.UTC, []time.Time{utc(4, 1, 12, 0), utc(5, 1, 12, 0)}},
		{"30 8 13 * 5", time.UTC, []time.Time{utc(3, 6, 8, 30), utc(3, 13, 8, 30)}}, // 13th OR Friday
		{"0 0 * * 7", time.UTC, []time.Time{utc(3, 8, 0, 0)}},                       // 7 is Sunday
		{"0 10-12/2 * * *", time.UTC, []time.Time{utc(3, 2, 12, 0), utc(3, 3, 10, 0)}},
		{"@daily", time.UTC, []time.Time{utc(3, 3, 0, 0)}},
		{"@hourly", time.UTC, []time.Time{utc(3, 2, 11, 0)}},
		{"0 9 * * *", paris, []time.Time{utc(3, 3, 8, 0)}}, // 09:00 in Paris (UTC+1)
		{"CRON_TZ=Europe/Paris 0 9 * * *", time.UTC, []time.Time{utc(3, 3, 8, 0)}},
		{"0 0 29 2 *", time.UTC, []time.Time{time.Date(2028, 2, 29, 0, 0, 0, 0, time.UTC)}},
	}
	for _, c := range cases {
		s := mustParse(t, c.spec, c.loc)
		if s.Once() {
			t.Errorf("%q is a one-shot", c.spec)
		}
		at := now
		for i, want := range c.want {
			got, ok := s.Next(at)
			if !ok || !got.Equal(want) {
				t.Errorf("%q run %d = %v, %v; want %v", c.spec, i+1, got.UTC(), ok, want)
				break
			}
			at = got
		}
	}
}

func TestCron_DaylightSaving(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	// Clocks go forward at 02:00 on 2026-03-29: 02:30 does not exist that
	// day; the job still runs once that day, right after the gap.
	s := mustParse(t, "30 2 * * *", paris)
	got, _ := s.Next(time.Date(2026, 3, 29, 0, 0, 0, 0, paris))
	if got.Day() != 29 || got.Hour() != 3 {
		t.Errorf("spring forward: next = %v, want 2026-03-29 03:xx", got)
	}
	// Clocks go back at 03:00 on 2026-10-25: 02:30 happens twice but the
	// job runs once that day.
	first, _ := s.Next(time.Date(2026, 10, 25, 0, 0, 0, 0, paris))
	second, _ := s.Next(first)
	if first.Day() != 25 || second.Day() != 26 {
		t.Errorf("fall back: runs at %v then %v, want once on the 25th then the 26th", first, second)
	}
}

func TestParse_Errors(t *testing.T) {
	cases := []struct{ spec, want string }{
		{"", "empty schedule"},
		{"soon", "cannot read"},
		{"every 5s", "shorter than the minimum of 10s"},
		{"every 0s", "shorter than the minimum"},
		{"every day", "cannot read the interval"},
		{"0s", "must be positive"},
		{"-5m", "must be positive"},
		{"in a while", "cannot read \"in a while\" as a delay"},
		{"2020-01-01T00:00:00Z", "is in the past"},
		{"2026-03-02T10:20:30Z", "is in the past"}, // now is not the future either
		{"2026-13-01T00:00:00Z", "RFC 3339"},
		{"2026-03-02 12:00", "RFC 3339"},
		{"61 * * * *", "minute field \"61\": 61 is out of range 0-59"},
		{"0 24 * * *", "hour field \"24\": 24 is out of range 0-23"},
		{"0 0 0 * *", "day-of-month field \"0\": 0 is out of range 1-31"},
		{"0 0 * 13 *", "month field"},
		{"0 0 * * 8", "day-of-week field"},
		{"0 0 * * mon-sun", "runs backwards"}, // sun is 0
		{"*/0 * * * *", "step \"0\" must be a positive number"},
		{"0 9 * * funday", "neither a number nor a name"},
		{"1,,2 * * * *", "empty list item"},
		{"0 9 * *", "has 4 fields, want 5"},
		{"0 0 9 * * *", "has 6 fields, want 5"},
		{"0 0 30 2 *", "never runs"},
		{"@fortnightly", "unknown shorthand"},
		{"CRON_TZ=Mars/Olympus 0 9 * * *", "unknown time zone"},
		{"999999999999h", "cannot read"},
	}
	for _, c := range cases {
		s, err := schedule.Parse(c.spec, now, time.UTC)
		if err == nil {
			t.Errorf("Parse(%q) = %v, want an error containing %q", c.spec, s, c.want)
			continue
		}
		if !errors.Is(err, schedule.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) error = %q, want ErrInvalid containing %q", c.spec, err, c.want)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	cases := map[time.Duration]string{
		10 * time.Second:                 "10s",
		90 * time.Minute:                 "1h30m",
		48*time.Hour + time.Second:       "2d1s",
		1500 * time.Millisecond:          "1.5s",
		7*24*time.Hour + 2*time.Hour + 0: "7d2h",
	}
	for d, want := range cases {
		if got := schedule.FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func FuzzCron(f *testing.F) {
	for _, seed := range []string{
		"0 9 * * *", "*/15 * * * *", "0 9 * * 1-5", "5,10-20/3 */2 1-31/7 jan-dec/2 sun-sat",
		"0 0 29 2 *", "0 0 31 * 5", "@weekly", "CRON_TZ=America/New_York 30 2 * * *", "TZ=Europe/Paris 0 3 * * 0",
		"59 23 31 12 7", "0/7 0/5 ? * ?", "1-1/1 * * * *",
	} {
		f.Add(seed, int64(0))
	}
	f.Fuzz(func(t *testing.T, spec string, offset int64) {
		after := now.Add(time.Duration(offset % int64(50*365*24*time.Hour)))
		s, err := schedule.Parse(spec, after, time.UTC)
		if err != nil {
			return
		}
		at := after
		for range 5 {
			next, ok := s.Next(at)
			if !ok {
				return
			}
			if !next.After(at) {
				t.Fatalf("Parse(%q).Next(%v) = %v, not after", spec, at, next)
			}
			at = next
		}
	})
}
