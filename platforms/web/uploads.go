package web

import (
	"context"
	"fmt"

	"github.com/hermesd/hermesd/messages"
)

// maxUploads bounds the files of one POST /api/chat.
const maxUploads = 10

// upload is one file sent with POST /api/chat: its bytes as base64 in
// "data" (JSON only: no HTML form can post JSON cross-site).
type upload struct {
	Name     string `json:"name"`
	MimeType string `json:"mime_type"`
	Data     []byte `json:"data"`
}

// bodyLimit is the largest POST /api/chat body: the text-only limit, plus,
// with a media ingester, the base64 of one file at the media cap (all the
// files of a message share it).
func (a *Adapter) bodyLimit() int64 {
	if a.files == nil {
		return MaxBodyBytes
	}
	return MaxBodyBytes + (a.files.MaxBytes()+2)/3*4
}

// attachUploads turns the uploaded files into attachments of um, stored and
// read by the media ingester. A file that cannot be used is said in its
// attachment's Problem. Only ctx's end is an error.
func (a *Adapter) attachUploads(ctx context.Context, ups []upload, um *messages.UserMessage) error {
	for i, up := range ups {
		name := up.Name
		if name == "" {
			name = fmt.Sprintf("file-%d", i+1)
		}
		att := &messages.Attachment{Kind: "document", Name: name, MimeType: up.MimeType}
		if err := a.files.Ingest(ctx, att, up.Data); err != nil {
			return err
		}
		um.Attachments = append(um.Attachments, att)
	}
	return nil
}
