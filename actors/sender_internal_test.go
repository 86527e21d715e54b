package actors

import (
	"testing"

	"github.com/hermesd/hermesd/messages"
)

// Issue 11: in a merged turn in a shared thread the sender was taken from
// the last input, so user A's fact could be saved under user B. A turn
// whose inputs came from several people has no one sender.
func TestSenderOf_MergedInputs(t *testing.T) {
	msg := func(sender string) *messages.UserMessage { return &messages.UserMessage{SenderId: sender} }
	cases := []struct {
		name string
		in   []*messages.UserMessage
		want string
	}{
		{"none", nil, ""},
		{"one", []*messages.UserMessage{msg("a")}, "a"},
		{"same sender merged", []*messages.UserMessage{msg("a"), msg("a")}, "a"},
		{"two senders merged", []*messages.UserMessage{msg("a"), msg("b")}, ""},
		{"a scheduled input and a user", []*messages.UserMessage{msg(""), msg("b")}, ""},
	}
	for _, c := range cases {
		if got := senderOf(c.in); got != c.want {
			t.Errorf("%s: senderOf = %q, want %q", c.name, got, c.want)
		}
	}
}
