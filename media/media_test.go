package media_test

import (
	"archive/zip"
	"bytes"
	"context"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermesd/hermesd/media"
	"github.com/hermesd/hermesd/messages"
)

func newIngester(t *testing.T, mod func(*media.Limits)) *media.Ingester {
	t.Helper()
	st, err := media.NewStore(filepath.Join(t.TempDir(), "media"))
	if err != nil {
		t.Fatal(err)
	}
	lim := media.DefaultLimits()
	if mod != nil {
		mod(&lim)
	}
	return media.NewIngester(st, lim, nil)
}

// pngOf draws a w×h picture with a red left half.
func pngOf(t testing.TB, w, h int) []byte {
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

// DocxOf builds a DOCX whose body has these paragraphs, plus extra entries.
func docxOf(t testing.TB, paras []string, extra map[string][]byte) []byte {
	t.Helper()
	var body strings.Builder
	body.WriteString(`<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>`)
	for _, p := range paras {
		body.WriteString(`<w:p><w:r><w:t xml:space="preserve">`)
		xmlEscape(&body, p)
		body.WriteString(`</w:t></w:r></w:p>`)
	}
	body.WriteString(`</w:body></w:document>`)
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	files := map[string][]byte{"[Content_Types].xml": []byte(`<Types/>`), "word/document.xml": []byte(body.String())}
	for k, v := range extra {
		files[k] = v
	}
	for name, data := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func xmlEscape(b *strings.Builder, s string) {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	b.WriteString(r.Replace(s))
}

func TestIngest_SmallImageStoredAsIs(t *testing.T) {
	in := newIngester(t, nil)
	data := pngOf(t, 40, 30)
	a := &messages.Attachment{Kind: "photo", Name: "p.png", MimeType: "image/png"}
	if err := in.Ingest(t.Context(), a, data); err != nil {
		t.Fatal(err)
	}
	if a.Problem != "" || a.Sha256 == "" || a.MimeType != "image/png" {
		t.Fatalf("attachment = %+v", a)
	}
	got, err := in.Store().Get(a.Sha256)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("stored bytes differ (%v)", err)
	}
}

func TestIngest_LargeImageScaledToJPEG(t *testing.T) {
	in := newIngester(t, func(l *media.Limits) { l.ImageMaxSide = 256 })
	a := &messages.Attachment{Kind: "document", Name: "scan.png", MimeType: "image/png"}
	if err := in.Ingest(t.Context(), a, pngOf(t, 1000, 500)); err != nil {
		t.Fatal(err)
	}
	if a.Problem != "" || a.Kind != "photo" || a.MimeType != "image/jpeg" {
		t.Fatalf("attachment = %+v", a)
	}
	got, _ := in.Store().Get(a.Sha256)
	img, err := jpeg.Decode(bytes.NewReader(got))
	if err != nil {
		t.Fatalf("stored image is not a JPEG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 256 || b.Dy() != 128 {
		t.Errorf("scaled to %v, want 256×128", b)
	}
	// The picture survived the scaling: left red, right blue.
	if r, _, bl, _ := img.At(10, 64).RGBA(); r>>8 < 200 || bl>>8 > 60 {
		t.Errorf("left pixel = %v", img.At(10, 64))
	}
	if r, _, bl, _ := img.At(245, 64).RGBA(); r>>8 > 60 || bl>>8 < 200 {
		t.Errorf("right pixel = %v", img.At(245, 64))
	}
}

func TestIngest_ImageOverBytesShrinks(t *testing.T) {
	// Noise does not compress: only a smaller picture fits the byte cap.
	img := image.NewGray(image.Rect(0, 0, 800, 800))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 7919 % 251)
	}
	var b bytes.Buffer
	png.Encode(&b, img)
	in := newIngester(t, func(l *media.Limits) { l.ImageMaxBytes = 60 << 10 })
	a := &messages.Attachment{Kind: "photo", Name: "noise.png"}
	if err := in.Ingest(t.Context(), a, b.Bytes()); err != nil {
		t.Fatal(err)
	}
	got, _ := in.Store().Get(a.Sha256)
	if a.Problem != "" || len(got) > 60<<10 || len(got) == 0 {
		t.Fatalf("problem %q, stored %d bytes", a.Problem, len(got))
	}
}

func TestIngest_NonImagePretendingToBeOne(t *testing.T) {
	in := newIngester(t, nil)
	for name, data := range map[string][]byte{
		"script":    []byte("#!/bin/sh\nrm -rf /\n"),
		"truncated": pngOf(t, 50, 50)[:60],
		"empty":     nil,
	} {
		a := &messages.Attachment{Kind: "photo", Name: "cat.jpg", MimeType: "image/jpeg"}
		if err := in.Ingest(t.Context(), a, data); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(a.Problem, "not a readable image") || a.Sha256 != "" {
			t.Errorf("%s: attachment = %+v", name, a)
		}
	}
}

func TestIngest_PixelBombRefusedBeforeDecoding(t *testing.T) {
	// A PNG header claiming 100000×100000 pixels; decoding it would ask for
	// 40 GB.
	data := pngOf(t, 1, 1)
	copy(data[16:24], []byte{0, 1, 0x86, 0xa0, 0, 1, 0x86, 0xa0})
	in := newIngester(t, nil)
	a := &messages.Attachment{Kind: "photo", Name: "bomb.png"}
	if err := in.Ingest(t.Context(), a, data); err != nil {
		t.Fatal(err)
	}
	if a.Problem == "" || a.Sha256 != "" {
		t.Fatalf("attachment = %+v", a)
	}
}

func TestIngest_TextDocuments(t *testing.T) {
	in := newIngester(t, nil)
	for _, tc := range []struct{ name, mime, body string }{
		{"notes.md", "text/markdown", "# Title\n\n- item"},
		{"main.go", "", "package main\n\nfunc main() {}\n"},
		{"Makefile", "application/octet-stream", "all:\n\tgo build\n"},
		{"bom.txt", "text/plain", "\uFEFFhello"},
	} {
		a := &messages.Attachment{Kind: "document", Name: tc.name, MimeType: tc.mime}
		if err := in.Ingest(t.Context(), a, []byte(tc.body)); err != nil {
			t.Fatal(err)
		}
		want := strings.TrimSpace(strings.TrimPrefix(tc.body, "\uFEFF"))
		if a.Problem != "" || a.Text != want || a.Sha256 == "" {
			t.Errorf("%s: attachment = %+v", tc.name, a)
		}
	}
}

func TestIngest_TextCapped(t *testing.T) {
	in := newIngester(t, func(l *media.Limits) { l.DocumentMaxChars = 10 })
	a := &messages.Attachment{Kind: "document", Name: "long.txt"}
	if err := in.Ingest(t.Context(), a, []byte("ééééééééééééééé and more")); err != nil {
		t.Fatal(err)
	}
	if a.Text != "éééééééééé" || !a.Truncated {
		t.Errorf("text %q truncated %v", a.Text, a.Truncated)
	}
}

func TestIngest_Unsupported(t *testing.T) {
	in := newIngester(t, nil)
	for _, tc := range []struct {
		name, mime string
		data       []byte
		want       string
	}{
		{"app.exe", "application/x-msdownload", []byte("MZ\x90\x00\x03\x00\x00\x00"), "can't read this kind of file (application/x-msdownload)"},
		{"latin1.txt", "text/plain", []byte("caf\xe9"), "can't read this kind of file"},
		{"fake.pdf", "application/pdf", []byte("not a pdf"), "damaged"},
		{"fake.docx", docxMIMEForTest, []byte("hello"), "can't read this kind of file"},
	} {
		a := &messages.Attachment{Kind: "document", Name: tc.name, MimeType: tc.mime}
		if err := in.Ingest(t.Context(), a, tc.data); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(a.Problem, tc.want) || a.Text != "" {
			t.Errorf("%s: attachment = %+v, want problem %q", tc.name, a, tc.want)
		}
	}
}

const docxMIMEForTest = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"

func TestIngest_TooLarge(t *testing.T) {
	in := newIngester(t, func(l *media.Limits) { l.MaxBytes = 100 })
	a := &messages.Attachment{Kind: "document", Name: "big.txt"}
	if err := in.Ingest(t.Context(), a, bytes.Repeat([]byte("a"), 101)); err != nil {
		t.Fatal(err)
	}
	if a.Problem != "the file is 101 bytes, over the 100 bytes limit" || a.Sha256 != "" {
		t.Errorf("attachment = %+v", a)
	}
}

func TestIngest_PDF(t *testing.T) {
	if _, err := media.PDFToolPath(); err != nil {
		t.Skip("pdftotext is not installed (scripts/deps.sh test installs poppler-utils)")
	}
	data, err := os.ReadFile("testdata/report.pdf")
	if err != nil {
		t.Fatal(err)
	}
	in := newIngester(t, nil)
	a := &messages.Attachment{Kind: "document", Name: "report.pdf", MimeType: "application/pdf"}
	if err := in.Ingest(t.Context(), a, data); err != nil {
		t.Fatal(err)
	}
	if a.Problem != "" || a.Text != "Quarterly report: revenue up 7 percent\nSecond line of the PDF" {
		t.Errorf("attachment = %+v", a)
	}
	// A cancelled context stops extraction and is reported as such.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	b := &messages.Attachment{Kind: "document", Name: "report2.pdf"}
	if err := in.Ingest(ctx, b, append(data, '\n')); err == nil {
		t.Errorf("cancelled ingest = %+v, want an error", b)
	}
}

func TestIngest_PDFWithoutTool(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	data, err := os.ReadFile("testdata/report.pdf")
	if err != nil {
		t.Fatal(err)
	}
	in := newIngester(t, func(l *media.Limits) { l.PDFTimeout = time.Second })
	a := &messages.Attachment{Kind: "document", Name: "report.pdf"}
	if err := in.Ingest(t.Context(), a, data); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(a.Problem, "pdftotext") {
		t.Errorf("attachment = %+v", a)
	}
}

func TestIngest_PDFToolThatHangs(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pdftotext"), []byte("#!/bin/sh\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	t.Setenv("PATH", dir+":"+filepath.Dir(sleep))
	in := newIngester(t, func(l *media.Limits) { l.PDFTimeout = 200 * time.Millisecond })
	a := &messages.Attachment{Kind: "document", Name: "slow.pdf"}
	start := time.Now()
	if err := in.Ingest(t.Context(), a, []byte("%PDF-1.4 whatever")); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("a hanging pdftotext held the message for %s", took)
	}
	if a.Problem != "reading it took too long (over 200ms)" || a.Text != "" {
		t.Errorf("attachment = %+v", a)
	}
}

func TestIngest_DOCX(t *testing.T) {
	in := newIngester(t, func(l *media.Limits) { l.DocumentMaxChars = 40 })
	data := docxOf(t, []string{"Meeting notes", "Budget: 12 < 13 & rising"}, nil)
	a := &messages.Attachment{Kind: "document", Name: "notes.docx", MimeType: docxMIMEForTest}
	if err := in.Ingest(t.Context(), a, data); err != nil {
		t.Fatal(err)
	}
	if a.Problem != "" || a.Text != "Meeting notes\nBudget: 12 < 13 & rising" || a.Truncated {
		t.Errorf("attachment = %+v", a)
	}
	b := &messages.Attachment{Kind: "document", Name: "long.docx"}
	if err := in.Ingest(t.Context(), b, docxOf(t, []string{strings.Repeat("x", 100)}, nil)); err != nil {
		t.Fatal(err)
	}
	if len(b.Text) != 40 || !b.Truncated {
		t.Errorf("long docx: %d chars, truncated %v", len(b.Text), b.Truncated)
	}
}

// TestIngest_HostileDOCX: archives with too many entries, garbage, or
// entries that only look like the body (zip bombs: fuzz_test.go).
func TestIngest_HostileDOCX(t *testing.T) {
	in := newIngester(t, nil)
	many := func() []byte {
		var b bytes.Buffer
		zw := zip.NewWriter(&b)
		for i := range 3000 {
			zw.Create("x/" + strconv.Itoa(i))
		}
		w, _ := zw.Create("word/document.xml")
		w.Write([]byte("<x/>"))
		zw.Close()
		return b.Bytes()
	}()
	// Path tricks: the text sits in entries that only look like the body.
	tricks := docxOf(t, nil, map[string][]byte{
		"../word/document.xml":  []byte("<w:document>escaped</w:document>"),
		"/etc/passwd":           []byte("root"),
		"word\\document.xml":    []byte("backslash"),
		"word/../word/evil.xml": []byte("evil"),
	})
	for name, data := range map[string][]byte{"many entries": many, "not a zip": []byte("PK\x03\x04garbage"),
		"empty": nil} {
		a := &messages.Attachment{Kind: "document", Name: "x.docx"}
		if err := in.Ingest(t.Context(), a, data); err != nil {
			t.Fatal(err)
		}
		if a.Problem == "" || a.Text != "" {
			t.Errorf("%s: attachment = %+v", name, a)
		}
	}
	a := &messages.Attachment{Kind: "document", Name: "tricks.docx"}
	if err := in.Ingest(t.Context(), a, tricks); err != nil {
		t.Fatal(err)
	}
	// Only the real body is read, and it is empty.
	if a.Text != "" || !strings.Contains(a.Problem, "no text") {
		t.Errorf("tricks: attachment = %+v", a)
	}
}

func TestStore_NamesAreChecked(t *testing.T) {
	st, err := media.NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	name, err := st.Put([]byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := st.Put([]byte("x")); again != name {
		t.Errorf("same bytes, names %s and %s", name, again)
	}
	for _, bad := range []string{"", "../" + name[3:], strings.ToUpper(name), name + "0"} {
		if _, err := st.Get(bad); err == nil {
			t.Errorf("Get(%q) succeeded", bad)
		}
	}
	if _, err := st.Get(strings.Repeat("0", 64)); err == nil {
		t.Error("Get of a missing file succeeded")
	}
}
