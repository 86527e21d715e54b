package actors

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/hermesd/hermesd/media"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/model"
)

// seeingModel records the last user message of each request and echoes it.
type seeingModel struct {
	mu   sync.Mutex
	seen []model.Message
}

func (m *seeingModel) Complete(_ context.Context, req model.Request) (model.Response, error) {
	var last model.Message
	for _, msg := range req.Messages {
		if msg.Role == model.RoleUser {
			last = msg
		}
	}
	m.mu.Lock()
	m.seen = append(m.seen, last)
	m.mu.Unlock()
	return model.Response{Message: model.Message{Role: "assistant", Content: "answer"}}, nil
}

func (m *seeingModel) last(t *testing.T) model.Message {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.seen) == 0 {
		t.Fatal("the model was not called")
	}
	return m.seen[len(m.seen)-1]
}

func startMedia(t *testing.T, vision bool) (*harness, *seeingModel, *media.Store) {
	t.Helper()
	st, err := media.NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m := &seeingModel{}
	cfg := testConfig()
	cfg.Vision = vision
	h := startWith(t, m, cfg, func(d *Deps) { d.Media = st })
	return h, m, st
}

func (h *harness) sendAttached(t *testing.T, s messages.Session, id, text string, atts ...*messages.Attachment) string {
	t.Helper()
	if err := h.rt.Receive(context.Background(), &messages.UserMessage{SessionKey: s.Key(), MessageId: id, Text: text, Attachments: atts}); err != nil {
		t.Fatal(err)
	}
	var reply string
	for _, g := range h.rec.waitFor(t, "reply to "+id, lastFor(id)) {
		if g.d.AnswersMessage(id) && g.d.GetLast() {
			reply = g.d.GetText()
		}
	}
	return reply
}

func TestPhoto_VisionModelGetsTheBytes(t *testing.T) {
	h, m, st := startMedia(t, true)
	img := []byte("\xff\xd8\xff pretend jpeg")
	sum, err := st.Put(img)
	if err != nil {
		t.Fatal(err)
	}
	s := webSession("vision")
	reply := h.sendAttached(t, s, "p1", "what is this?", &messages.Attachment{Kind: "photo", Name: "photo.jpg", MimeType: "image/jpeg", Size: 17, Sha256: sum})
	got := m.last(t)
	if len(got.Images) != 1 || !bytes.Equal(got.Images[0].Data, img) || got.Images[0].MIME != "image/jpeg" {
		t.Fatalf("model got images %+v", got.Images)
	}
	if !strings.HasPrefix(got.Content, "what is this?") || reply != "answer" {
		t.Errorf("content %q, reply %q", got.Content, reply)
	}
}

func TestPhoto_NoVisionToldOncePerSession(t *testing.T) {
	h, m, st := startMedia(t, false)
	sum, _ := st.Put([]byte("img"))
	photo := func() *messages.Attachment {
		return &messages.Attachment{Kind: "photo", Name: "photo.jpg", MimeType: "image/jpeg", Size: 3, Sha256: sum}
	}
	s := webSession("blind")
	first := h.sendAttached(t, s, "p1", "look", photo())
	if !strings.HasPrefix(first, noticeNoVision) || !strings.HasSuffix(first, "answer") {
		t.Fatalf("first reply = %q", first)
	}
	got := m.last(t)
	if len(got.Images) != 0 || !strings.Contains(got.Content, "this model cannot see images") {
		t.Errorf("model got %+v", got)
	}
	if second := h.sendAttached(t, s, "p2", "and this", photo()); second != "answer" {
		t.Errorf("second reply = %q, want no notice again", second)
	}
	// Another session is told on its own.
	if other := h.sendAttached(t, webSession("blind2"), "p3", "", photo()); !strings.HasPrefix(other, noticeNoVision) {
		t.Errorf("other session's reply = %q", other)
	}
}

func TestPhoto_MissingFileIsDescribed(t *testing.T) {
	h, m, _ := startMedia(t, true)
	h.sendAttached(t, webSession("gone"), "p1", "hi", &messages.Attachment{Kind: "photo", Name: "photo.jpg", MimeType: "image/jpeg", Sha256: strings.Repeat("ab", 32)})
	if got := m.last(t); len(got.Images) != 0 || !strings.Contains(got.Content, "could not be loaded") {
		t.Errorf("model got %+v", got)
	}
}

func TestDocument_TextReachesTheModel(t *testing.T) {
	h, m, _ := startMedia(t, false)
	s := webSession("docs")
	reply := h.sendAttached(t, s, "d1", "summarise", &messages.Attachment{Kind: "document", Name: "notes.md", MimeType: "text/markdown", Size: 20, Sha256: strings.Repeat("0", 64),
		Text: "# Plan\nship on Friday"})
	got := m.last(t).Content
	if !strings.Contains(got, "summarise\n[document: notes.md]\n# Plan\nship on Friday\n[end of document: notes.md]") {
		t.Errorf("model got %q", got)
	}
	if reply != "answer" {
		t.Errorf("reply = %q", reply)
	}
	reply = h.sendAttached(t, s, "d2", "", &messages.Attachment{Kind: "document", Name: "big.txt", Text: "abcdef", Truncated: true})
	if !strings.HasPrefix(reply, `✂️ “big.txt” is long: I read only its first 6 characters.`) {
		t.Errorf("truncated reply = %q", reply)
	}
	if got := m.last(t).Content; !strings.Contains(got, "only its first 6 characters are shown") {
		t.Errorf("model got %q", got)
	}
}

func TestAttachmentProblem_ToldAndSessionKeepsWorking(t *testing.T) {
	h, m, _ := startMedia(t, true)
	s := webSession("problems")
	reply := h.sendAttached(t, s, "x1", "", &messages.Attachment{Kind: "document", Name: "huge.pdf", Size: 30 << 20, Problem: "the file is 30.0 MB, over the 20.0 MB limit"})
	if !strings.HasPrefix(reply, `⚠️ I could not read “huge.pdf”: the file is 30.0 MB, over the 20.0 MB limit.`) {
		t.Errorf("reply = %q", reply)
	}
	if got := m.last(t).Content; !strings.Contains(got, "not read: the file is 30.0 MB") {
		t.Errorf("model got %q", got)
	}
	if reply := h.sendAttached(t, s, "x2", "still there?"); reply != "answer" {
		t.Errorf("next reply = %q", reply)
	}
}
