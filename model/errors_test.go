package model_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/hermesd/hermesd/model"
)

func TestUserMessage(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"Nil", nil, ""},
		{"Timeout60s", &model.TimeoutError{After: 60 * time.Second}, "The model did not answer within 60s."},
		{"Timeout90s", &model.TimeoutError{After: 90 * time.Second}, "The model did not answer within 90s."},
		{"Timeout5m", fmt.Errorf("turn: %w", &model.TimeoutError{After: 5 * time.Minute}), "The model did not answer within 5m."},
		{"Timeout150s", &model.TimeoutError{After: 150 * time.Second}, "The model did not answer within 2m30s."},
		{"CallerDeadline", fmt.Errorf("model: %w", context.DeadlineExceeded), "The model did not answer in time."},
		{"Cancelled", fmt.Errorf("model: %w", context.Canceled), "The request to the model was cancelled."},
		{"500", &model.APIError{Status: 500, Message: "The server had an error while processing your request."},
			"The model endpoint answered 500 (The server had an error while processing your request)."},
		{"500NoMessage", &model.APIError{Status: 500}, "The model endpoint answered 500 (Internal Server Error)."},
		{"401", &model.APIError{Status: 401, Message: "Incorrect API key provided"},
			"The model endpoint refused the API key (401). Check OPENAI_API_KEY."},
		{"403", &model.APIError{Status: 403, Message: "Country not supported"},
			"The model endpoint denied access (403: Country not supported)."},
		{"429WithHint", &model.APIError{Status: 429, Message: "Rate limit reached", RetryAfter: 20 * time.Second},
			"The model endpoint is rate limiting requests (429: Rate limit reached). Please try again in 20s."},
		{"DNS", fmt.Errorf("model: %w", &net.DNSError{Err: "no such host", Name: "api.example.invalid"}),
			`Could not find the model endpoint's host "api.example.invalid". Check OPENAI_BASE_URL.`},
		{"Protocol", &model.ProtocolError{Problem: "response has no choices"},
			"The model endpoint sent a reply hermesd could not read (response has no choices)."},
		{"Other", errors.New("something odd."), "The model call failed: something odd."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := model.UserMessage(tc.err); got != tc.want {
				t.Errorf("UserMessage = %q\n         want %q", got, tc.want)
			}
		})
	}
}

func TestTimeoutError_IsDeadlineExceeded(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", &model.TimeoutError{After: time.Second})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Error("a TimeoutError is not a context.DeadlineExceeded")
	}
}
