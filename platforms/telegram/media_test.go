package telegram_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hermesd/hermesd/media"
	"github.com/hermesd/hermesd/platforms/telegram"
	"github.com/hermesd/hermesd/platforms/telegram/telegramtest"
)

func mediaIngester(t *testing.T, maxBytes int64) *media.Ingester {
	t.Helper()
	st, err := media.NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	lim := media.DefaultLimits()
	lim.MaxBytes = maxBytes
	return media.NewIngester(st, lim, nil)
}

func TestMedia_DocumentsDownloadedAndRead(t *testing.T) {
	srv := telegramtest.NewServer(t)
	ing := mediaIngester(t, 1<<20)
	a := setup(t, srv, func(_ *telegram.Config, d *telegram.Deps) { d.Media = ing })
	box := newInbox()
	run(t, a, box.Inbound)

	srv.SendDocument(42, 42, "notes.md", "text/markdown", []byte("# Notes\nbuy milk"), telegramtest.WithCaption("read this"))
	srv.SendAudio(42, 42, "song.mp3", "audio/mpeg", []byte("ID3fake"), 180)
	got := box.wait(t, 2)
	doc := got[0].Attachments[0]
	if got[0].Text != "read this" || doc.Text != "# Notes\nbuy milk" || doc.Sha256 == "" || doc.Problem != "" {
		t.Fatalf("document message = %+v", got[0])
	}
	if data, err := ing.Store().Get(doc.Sha256); err != nil || !bytes.Equal(data, []byte("# Notes\nbuy milk")) {
		t.Errorf("stored %q (%v)", data, err)
	}
	if au := got[1].Attachments[0]; au.Sha256 != "" || au.Text != "" {
		t.Errorf("audio was downloaded: %+v", au)
	}
	if n := len(srv.CallsTo("getFile")); n != 1 {
		t.Errorf("%d getFile calls, want 1 (the document only)", n)
	}
}

func TestMedia_DownloadFailureIsSaidAndTheMessageGoesOn(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := setup(t, srv, func(_ *telegram.Config, d *telegram.Deps) { d.Media = mediaIngester(t, 1<<20) })
	box := newInbox()
	run(t, a, box.Inbound)

	srv.FailNext("getFile", 10, telegramtest.ServerError())
	srv.SendDocument(42, 42, "notes.txt", "text/plain", []byte("hello"), telegramtest.WithCaption("caption stays"))
	got := box.wait(t, 1)
	att := got[0].Attachments[0]
	if got[0].Text != "caption stays" || !strings.Contains(att.Problem, "could not download it") || att.Sha256 != "" {
		t.Fatalf("message = %+v", got[0])
	}
	if n := len(srv.CallsTo("getFile")); n != 3 {
		t.Errorf("%d getFile attempts, want 3 (bounded retries)", n)
	}
	// The next file works.
	srv.ClearFaults()
	srv.SendDocument(42, 42, "b.txt", "text/plain", []byte("second"))
	if got := box.wait(t, 2); got[1].Attachments[0].Text != "second" {
		t.Errorf("second message = %+v", got[1])
	}
}

func TestMedia_OversizedPhotoIsNotFetched(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := setup(t, srv, func(_ *telegram.Config, d *telegram.Deps) { d.Media = mediaIngester(t, 32) })
	box := newInbox()
	run(t, a, box.Inbound)
	// Both sizes (64 bytes and 500) are over the 32-byte cap.
	srv.SendPhoto(42, 42, bytes.Repeat([]byte{0xFF}, 500), "look")
	got := box.wait(t, 1)
	if p := got[0].Attachments[0].Problem; !strings.Contains(p, "over the 32 bytes limit") {
		t.Fatalf("problem = %q", p)
	}
	if n := len(srv.CallsTo("getFile")); n != 0 {
		t.Errorf("%d getFile calls for an oversized photo", n)
	}
}
