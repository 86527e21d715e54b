package messages_test

import (
	"testing"

	"github.com/hermesd/hermesd/messages"
)

func TestHistoryText_KeepsDocumentsForLaterTurns(t *testing.T) {
	for _, c := range []struct {
		name string
		m    *messages.UserMessage
		want string
	}{
		{"text only", &messages.UserMessage{Text: "hello"}, "hello"},
		{"voice adds nothing", &messages.UserMessage{Text: "spoken words", FromVoice: true,
			Attachments: []*messages.Attachment{{Kind: "voice", MimeType: "audio/ogg", Size: 900}}}, "spoken words"},
		{"document text kept", &messages.UserMessage{Text: "summarise this",
			Attachments: []*messages.Attachment{{Kind: "document", Name: "plan.pdf", Text: "Step one: boil water."}}},
			"summarise this\n[document: plan.pdf]\nStep one: boil water.\n[end of document: plan.pdf]"},
		{"photo alone", &messages.UserMessage{Attachments: []*messages.Attachment{{Kind: "photo", Name: "cat.jpg"}}},
			`[the user sent a photo "cat.jpg"]`},
		{"unreadable document", &messages.UserMessage{Text: "x",
			Attachments: []*messages.Attachment{{Kind: "document", Name: "a.bin", MimeType: "application/octet-stream", Problem: "unsupported"}}},
			"x\n[the user sent a file \"a.bin\", application/octet-stream]"},
	} {
		if got := messages.HistoryText(c.m); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
	if got := messages.HistoryText(nil); got != "" {
		t.Errorf("nil message: %q", got)
	}
}
