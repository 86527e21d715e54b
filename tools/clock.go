package tools

import (
	"context"
	"encoding/json"
	"time"
)

// CurrentTime tells the model the time, which it cannot know otherwise.
// now is injectable for tests; nil means time.Now.
func CurrentTime(now func() time.Time) Tool {
	if now == nil {
		now = time.Now
	}
	return Tool{
		Name:        "current_time",
		Description: "Get the current date and time (RFC 3339, with the server's time zone).",
		Parameters:  json.RawMessage(`{"type":"object","properties":{}}`),
		Run: func(context.Context, Env, json.RawMessage) (string, error) {
			return now().Format(time.RFC3339), nil
		},
	}
}
