package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hermesd/hermesd/messages"
	"google.golang.org/protobuf/proto"
)

// A document's extracted text and a photo's stored name travel in the
// inbox row, so a message accepted before a crash reaches the model after
// the restart with what was read from it; the image bytes never do.
func TestInbox_AttachmentReferencesSurviveARestart(t *testing.T) {
	ctx := context.Background()
	path := dbPath(t)
	s := mustOpen(t, path)
	const key = "discord:dm:55"
	in := &messages.UserMessage{SessionKey: key, MessageId: "1", Text: "read these", Attachments: []*messages.Attachment{
		{Kind: "document", Name: "notes.docx", Size: 900, Sha256: strings.Repeat("a", 64), Text: "Minutes\nship it", Truncated: true},
		{Kind: "photo", Name: "cat.png", MimeType: "image/png", Size: 4000, Sha256: strings.Repeat("b", 64)},
		{Kind: "document", Name: "x.exe", Problem: "I can't read this kind of file"},
	}}
	if _, err := s.Accept(ctx, key, in); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, path)
	p, err := s.Pending(ctx, key)
	if err != nil || len(p) != 1 {
		t.Fatalf("pending = %v, %v", p, err)
	}
	got := p[0].Message
	got.InboxSeq = 0
	if !proto.Equal(got, in) {
		t.Fatalf("after restart:\n got %v\nwant %v", got, in)
	}
}
