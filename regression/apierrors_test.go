package regression

import (
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/hermesd/hermesd/platforms/discord/discordtest"
	"github.com/hermesd/hermesd/platforms/telegram/telegramtest"
)

// TestPlatformFailuresAreCountedAndRecovered: a 429 and a 500 from each
// platform are retried until the reply gets through, and /metrics counts
// them per platform (labels carry no chat id).
func TestPlatformFailuresAreCountedAndRecovered(t *testing.T) {
	w := newWorld(t, worldOptions{})
	w.tg.FailNext("sendMessage", 1, telegramtest.TooManyRequests(1))
	w.tg.FailNext("sendMessage", 1, telegramtest.ServerError())
	w.dc.FailPosts("910", 1, discordtest.RateLimited(100*time.Millisecond))
	w.dc.FailPosts("910", 1, discordtest.ServerError())
	tt, dt := token("telegram", "91", 1), token("discord", "910", 2)
	w.tg.SendText(91, 91, "plain "+tt)
	w.dc.DM("910", "92", "plain "+dt)
	w.await(t, "both replies despite the failures", 30*time.Second, func(o []out) bool {
		return hasText(in(o, "telegram:91"), "ack "+tt) && hasText(in(o, "discord:910"), "ack "+dt)
	})
	res, err := http.Get(w.http.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, p := range []string{"telegram", "discord"} {
		for _, series := range []string{
			`hermesd_platform_rate_limited_total\{[^}]*platform="` + p + `"[^}]*\} (\d+)`,
			`hermesd_platform_api_errors_total\{[^}]*platform="` + p + `"[^}]*status="5xx"[^}]*\} (\d+)`,
		} {
			m := regexp.MustCompile(series).FindSubmatch(body)
			if m == nil {
				t.Fatalf("no %s in /metrics", series)
			}
			if n, _ := strconv.Atoi(string(m[1])); n < 1 {
				t.Fatalf("%s = %d, want ≥ 1", series, n)
			}
		}
	}
	if regexp.MustCompile(`chat="|"91"|"910"`).Match(body) {
		t.Fatal("a metric label carries a chat id")
	}
}
