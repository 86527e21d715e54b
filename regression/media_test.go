package regression

import (
	"archive/zip"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hermesd/hermesd/media"
	"github.com/hermesd/hermesd/platforms/discord/discordtest"
	"github.com/hermesd/hermesd/platforms/telegram/telegramtest"
)

// testPNG is a w×h picture, red on the left and blue on the right.
func testPNG(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := color.NRGBA{0, 0, 255, 255}
			if x < w/2 {
				c = color.NRGBA{255, 0, 0, 255}
			}
			img.SetNRGBA(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// testDOCX is a Word document whose body holds these paragraphs.
func testDOCX(t *testing.T, paras ...string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	f, _ := zw.Create("word/document.xml")
	f.Write([]byte(`<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>`))
	for _, p := range paras {
		f.Write([]byte(`<w:p><w:r><w:t>` + p + `</w:t></w:r></w:p>`))
	}
	f.Write([]byte(`</w:body></w:document>`))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// sentImage is one image_url part as the model endpoint received it.
type sentImage struct {
	mime string
	data []byte
}

// imagesSentWith decodes, from the raw request bodies the fake model got,
// the image parts of the user message that contains tok.
func (w *world) imagesSentWith(t *testing.T, tok string) []sentImage {
	t.Helper()
	for _, r := range w.model.Requests() {
		var body struct {
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatal(err)
		}
		for _, m := range body.Messages {
			if m.Role != "user" || !bytes.Contains(m.Content, []byte(tok)) || m.Content[0] != '[' {
				continue
			}
			var parts []struct {
				Type     string `json:"type"`
				ImageURL struct {
					URL string `json:"url"`
				} `json:"image_url"`
			}
			if err := json.Unmarshal(m.Content, &parts); err != nil {
				t.Fatal(err)
			}
			var out []sentImage
			for _, p := range parts {
				if p.Type != "image_url" {
					continue
				}
				meta, payload, _ := strings.Cut(strings.TrimPrefix(p.ImageURL.URL, "data:"), ",")
				data, err := base64.StdEncoding.DecodeString(payload)
				if err != nil || !strings.HasSuffix(meta, ";base64") {
					t.Fatalf("image part is not a base64 data URL: %.60q (%v)", p.ImageURL.URL, err)
				}
				out = append(out, sentImage{strings.TrimSuffix(meta, ";base64"), data})
			}
			return out
		}
	}
	return nil
}

// userContentWith is the text of the user message that contains tok, as
// the model got it.
func (w *world) userContentWith(tok string) string {
	for _, r := range w.model.Requests() {
		for _, m := range r.Request.Messages {
			if m.Role == "user" && strings.Contains(m.Content, tok) {
				return m.Content
			}
		}
	}
	return ""
}

func TestMedia_PhotosReachAVisionModelAsImageParts(t *testing.T) {
	w := newWorld(t, worldOptions{env: map[string]string{"HERMES_MODEL_VISION": "on", "HERMES_IMAGE_MAX_SIDE": "256"}})
	chat := "telegram:4401"

	// A small photo arrives byte for byte.
	small := testPNG(t, 120, 90)
	tok := token("telegram", "4401", 1)
	w.tg.SendPhoto(4401, 4401, small, "what is this? "+tok)
	w.await(t, "answer to the photo", 30*time.Second, func(o []out) bool { return hasText(in(o, chat), "ack "+tok) })
	imgs := w.imagesSentWith(t, tok)
	if len(imgs) != 1 || imgs[0].mime != "image/png" || !bytes.Equal(imgs[0].data, small) {
		t.Fatalf("model got %d images (%+v), want the photo's %d bytes", len(imgs), imgs, len(small))
	}
	if n := len(in(w.outputs(), chat)); n != 1 {
		t.Errorf("%d messages to the chat, want only the answer (no notice)", n)
	}

	// A large one is scaled down to the configured side, as JPEG.
	tok2 := token("telegram", "4401", 2)
	w.tg.SendPhoto(4401, 4401, testPNG(t, 1024, 512), tok2)
	w.await(t, "answer to the large photo", 30*time.Second, func(o []out) bool { return hasText(in(o, chat), "ack "+tok2) })
	imgs = w.imagesSentWith(t, tok2)
	if len(imgs) != 1 || imgs[0].mime != "image/jpeg" {
		t.Fatalf("model got %+v, want one JPEG", imgs)
	}
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(imgs[0].data))
	if err != nil || cfg.Width != 256 || cfg.Height != 128 {
		t.Fatalf("scaled image %dx%d (%v), want 256x128", cfg.Width, cfg.Height, err)
	}

	// Discord: an image attachment, downloaded from the fake CDN.
	dtok := token("discord", "4402", 1)
	pic := testPNG(t, 64, 64)
	if _, err := w.dc.Inject(discordtest.Message{ChannelID: "4402", AuthorID: "44", Content: "look " + dtok,
		Attachments: []discordtest.Attachment{{Filename: "cat.png", ContentType: "image/png", Data: pic}}}); err != nil {
		t.Fatal(err)
	}
	w.await(t, "answer to the Discord image", 30*time.Second, func(o []out) bool { return hasText(in(o, "discord:4402"), "ack "+dtok) })
	if imgs := w.imagesSentWith(t, dtok); len(imgs) != 1 || !bytes.Equal(imgs[0].data, pic) {
		t.Fatalf("model got %+v from Discord", imgs)
	}

	// Web chat: a file uploaded with POST /api/chat.
	wtok := token("web", "u44", 1)
	replies := w.webUpload(t, "u44", "and this "+wtok, http.StatusOK, upload{"dot.png", "image/png", pic})
	if len(replies) == 0 || !strings.Contains(replies[len(replies)-1].Text, "ack "+wtok) {
		t.Fatalf("web replies %+v", replies)
	}
	if imgs := w.imagesSentWith(t, wtok); len(imgs) != 1 || !bytes.Equal(imgs[0].data, pic) {
		t.Fatalf("model got %+v from the web chat", imgs)
	}
}

func TestMedia_ModelWithoutVisionIsToldOnce(t *testing.T) {
	w := newWorld(t, worldOptions{})
	chat := "telegram:4411"
	tok1, tok2 := token("telegram", "4411", 1), token("telegram", "4411", 2)
	w.tg.SendPhoto(4411, 4411, testPNG(t, 40, 40), tok1)
	w.await(t, "first answer", 30*time.Second, func(o []out) bool { return hasText(in(o, chat), "ack "+tok1) })
	w.tg.SendPhoto(4411, 4411, testPNG(t, 41, 41), tok2)
	outs := w.await(t, "second answer", 30*time.Second, func(o []out) bool { return hasText(in(o, chat), "ack "+tok2) })
	notices := 0
	for _, o := range in(outs, chat) {
		if strings.Contains(o.text, "cannot see images") {
			notices++
			if !strings.Contains(o.text, tok1) {
				t.Errorf("the notice came with %q, want the first answer", o.text)
			}
		}
	}
	if notices != 1 {
		t.Fatalf("told %d times that the model cannot see images, want once:\n%s", notices, dump(outs))
	}
	if imgs := w.imagesSentWith(t, tok1); len(imgs) != 0 {
		t.Errorf("a model without vision got %d images", len(imgs))
	}
	if c := w.userContentWith(tok1); !strings.Contains(c, "this model cannot see images") {
		t.Errorf("model read %q", c)
	}
}

func TestMedia_DocumentsAreReadIntoTheMessage(t *testing.T) {
	w := newWorld(t, worldOptions{})
	// DOCX through Discord.
	dtok := token("discord", "4421", 1)
	if _, err := w.dc.Inject(discordtest.Message{ChannelID: "4421", AuthorID: "44", Content: "summarise " + dtok,
		Attachments: []discordtest.Attachment{{Filename: "minutes.docx", ContentType: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
			Data: testDOCX(t, "Minutes of the board", "Decision: ship version 2")}}}); err != nil {
		t.Fatal(err)
	}
	w.await(t, "answer to the DOCX", 30*time.Second, func(o []out) bool { return hasText(in(o, "discord:4421"), "ack "+dtok) })
	if c := w.userContentWith(dtok); !strings.Contains(c, "[document: minutes.docx]\nMinutes of the board\nDecision: ship version 2\n[end of document: minutes.docx]") {
		t.Fatalf("model read %q", c)
	}

	// Markdown through the web chat.
	wtok := token("web", "u45", 1)
	w.webUpload(t, "u45", wtok, http.StatusOK, upload{"todo.md", "text/markdown", []byte("# TODO\n- write tests")})
	if c := w.userContentWith(wtok); !strings.Contains(c, "[document: todo.md]\n# TODO\n- write tests") {
		t.Fatalf("model read %q", c)
	}

	// PDF through Telegram.
	if _, err := media.PDFToolPath(); err != nil {
		t.Skip("pdftotext is not installed (scripts/deps.sh test installs poppler-utils)")
	}
	pdf, err := os.ReadFile("testdata/report.pdf")
	if err != nil {
		t.Fatal(err)
	}
	tok := token("telegram", "4422", 1)
	w.tg.SendDocument(4422, 4422, "report.pdf", "application/pdf", pdf, telegramtest.WithCaption(tok))
	w.await(t, "answer to the PDF", 30*time.Second, func(o []out) bool { return hasText(in(o, "telegram:4422"), "ack "+tok) })
	if c := w.userContentWith(tok); !strings.Contains(c, "[document: report.pdf]\nQuarterly report: revenue up 7 percent\nSecond line of the PDF") {
		t.Fatalf("model read %q", c)
	}
}

func TestMedia_OversizedAndHostileFilesAreRefusedClearly(t *testing.T) {
	w := newWorld(t, worldOptions{env: map[string]string{"HERMES_MEDIA_MAX_BYTES": "65536", "HERMES_DOCUMENT_MAX_CHARS": "50"}})
	chat := "telegram:4431"
	tok := func(n int) string { return token("telegram", "4431", n) }

	// Too large: refused before download, the user is told, the turn goes on.
	w.tg.SendDocument(4431, 4431, "big.txt", "text/plain", bytes.Repeat([]byte("a"), 100000), telegramtest.WithCaption(tok(1)))
	outs := w.await(t, "answer to the big file", 30*time.Second, func(o []out) bool { return hasText(in(o, chat), "ack "+tok(1)) })
	if !hasText(in(outs, chat), `I could not read “big.txt”: the file is 97.7 KB, over the 64.0 KB limit.`) {
		t.Fatalf("user not told:\n%s", dump(in(outs, chat)))
	}
	if n := len(w.tg.CallsTo("getFile")); n != 0 {
		t.Errorf("an oversized file was fetched (%d getFile calls)", n)
	}

	// Long text: cut, and both sides are told.
	w.tg.SendDocument(4431, 4431, "long.txt", "text/plain", bytes.Repeat([]byte("b"), 200), telegramtest.WithCaption(tok(2)))
	outs = w.await(t, "answer to the long file", 30*time.Second, func(o []out) bool { return hasText(in(o, chat), "ack "+tok(2)) })
	if !hasText(in(outs, chat), `“long.txt” is long: I read only its first 50 characters.`) {
		t.Fatalf("user not told of the cut:\n%s", dump(in(outs, chat)))
	}
	if c := w.userContentWith(tok(2)); !strings.Contains(c, strings.Repeat("b", 50)+"\n[end of document: long.txt]\n[the document is longer") || strings.Contains(c, strings.Repeat("b", 51)) {
		t.Errorf("model read %q", c)
	}

	// A photo that is not an image.
	w.tg.SendPhoto(4431, 4431, []byte("<script>alert(1)</script> not a jpeg at all"), tok(3))
	outs = w.await(t, "answer to the fake photo", 30*time.Second, func(o []out) bool { return hasText(in(o, chat), "ack "+tok(3)) })
	if !hasText(in(outs, chat), "not a readable image") {
		t.Fatalf("user not told:\n%s", dump(in(outs, chat)))
	}

	// A DOCX zip bomb through Discord: its body claims a terabyte (the
	// inflate cap itself is tested in media/).
	var bomb bytes.Buffer
	zw := zip.NewWriter(&bomb)
	f, _ := zw.Create("word/document.xml")
	f.Write(make([]byte, 1<<10))
	zw.Close()
	raw := bomb.Bytes()
	cd := bytes.Index(raw, []byte("PK\x01\x02"))
	binary.LittleEndian.PutUint32(raw[cd+24:], 0xFFFFFFF0)
	dtok := token("discord", "4432", 1)
	if _, err := w.dc.Inject(discordtest.Message{ChannelID: "4432", AuthorID: "44", Content: dtok,
		Attachments: []discordtest.Attachment{{Filename: "bomb.docx", Data: raw}}}); err != nil {
		t.Fatal(err)
	}
	outs = w.await(t, "answer to the bomb", 30*time.Second, func(o []out) bool { return hasText(in(o, "discord:4432"), "ack "+dtok) })
	if !hasText(in(outs, "discord:4432"), `I could not read “bomb.docx”: the document is damaged`) {
		t.Fatalf("user not told:\n%s", dump(in(outs, "discord:4432")))
	}

	// An unsupported type says so.
	wtok := token("web", "u46", 1)
	replies := w.webUpload(t, "u46", wtok, http.StatusOK, upload{"tool.exe", "application/x-msdownload", []byte("MZ\x90\x00\x03\x00binary")})
	if len(replies) == 0 || !strings.Contains(replies[len(replies)-1].Text, "I can't read this kind of file (application/x-msdownload)") {
		t.Fatalf("web replies %+v", replies)
	}

	// The sessions keep working.
	w.tg.SendText(4431, 4431, "still there "+tok(4))
	w.await(t, "answer after the refusals", 30*time.Second, func(o []out) bool { return hasText(in(o, chat), "ack "+tok(4)) })
	if bad := misrouted(w.outputs()); len(bad) > 0 {
		t.Fatal(bad)
	}
}

// upload is one file of a POST /api/chat.
type upload struct {
	Name     string `json:"name"`
	MimeType string `json:"mime_type"`
	Data     []byte `json:"data"`
}

// webUpload posts text and files to the web chat and returns the replies.
func (w *world) webUpload(t *testing.T, chat, text string, status int, files ...upload) []webReply {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"chat": chat, "text": text, "files": files})
	res, err := http.Post(w.http.URL+"/api/chat", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var a struct {
		Replies []webReply `json:"replies"`
	}
	_ = json.NewDecoder(res.Body).Decode(&a)
	if res.StatusCode != status {
		t.Fatalf("POST /api/chat with files: status %d, want %d", res.StatusCode, status)
	}
	return a.Replies
}
