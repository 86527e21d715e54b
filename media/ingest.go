package media

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hermesd/hermesd/messages"
)

// Limits bound what hermesd takes in. DefaultLimits documents the defaults.
type Limits struct {
	// MaxBytes is the largest file downloaded at all (Telegram's getFile
	// stops at 20 MB anyway).
	MaxBytes int64
	// ImageMaxSide (pixels, longest side) and ImageMaxBytes bound an image
	// as the model gets it; larger ones are scaled down and re-encoded.
	ImageMaxSide  int
	ImageMaxBytes int
	// DocumentMaxChars caps a document's extracted text; the rest is cut
	// with a note to the user and the model.
	DocumentMaxChars int
	// PDFTimeout bounds one pdftotext run.
	PDFTimeout time.Duration
}

// DefaultLimits returns the defaults of the HERMES_MEDIA_* settings.
func DefaultLimits() Limits {
	return Limits{
		MaxBytes:         20 << 20,
		ImageMaxSide:     2048,
		ImageMaxBytes:    2 << 20,
		DocumentMaxChars: 40000,
		PDFTimeout:       30 * time.Second,
	}
}

// Ingester turns downloaded bytes into a stored, described Attachment. It
// is safe for concurrent use.
type Ingester struct {
	store *Store
	lim   Limits
	log   *slog.Logger
}

// NewIngester returns an Ingester that keeps files in store.
func NewIngester(store *Store, lim Limits, log *slog.Logger) *Ingester {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Ingester{store: store, lim: lim, log: log}
}

// Store is where the ingester keeps files.
func (in *Ingester) Store() *Store { return in.store }

// MaxBytes is the download cap adapters apply before Ingest.
func (in *Ingester) MaxBytes() int64 { return in.lim.MaxBytes }

// Wants reports whether hermesd downloads an attachment: images and
// documents, not voice, audio or video (voice has its own path through
// speech-to-text).
func Wants(kind, name, mimeType string) bool {
	switch kind {
	case "voice", "audio":
		return false
	case "photo":
		return true
	}
	mt := baseType(mimeType)
	return !strings.HasPrefix(mt, "audio/") && !strings.HasPrefix(mt, "video/")
}

// TooLarge marks a as refused for its size, without downloading it.
func (in *Ingester) TooLarge(a *messages.Attachment, size int64) {
	a.Problem = fmt.Sprintf("the file is %s, over the %s limit", sizeText(size), sizeText(in.lim.MaxBytes))
}

// Ingest reads data (the file a described, already downloaded within
// MaxBytes) and fills in a: a photo is checked, scaled and stored; a
// document is stored and its text extracted and capped. What cannot be used
// is said in a.Problem; a is never left half filled. Only ctx's end is an
// error.
func (in *Ingester) Ingest(ctx context.Context, a *messages.Attachment, data []byte) error {
	a.Size = int64(len(data))
	if int64(len(data)) > in.lim.MaxBytes {
		in.TooLarge(a, int64(len(data)))
		return nil
	}
	if isImage(a.Kind, a.Name, a.MimeType) {
		in.image(a, data)
		return nil
	}
	return in.document(ctx, a, data)
}

func (in *Ingester) image(a *messages.Attachment, data []byte) {
	a.Kind = "photo"
	out, mt, w, h, err := PrepareImage(data, in.lim.ImageMaxSide, in.lim.ImageMaxBytes)
	if err != nil {
		in.log.Info("image refused", "name", a.Name, "bytes", len(data), "err", err)
		if errors.Is(err, ErrImageTooLarge) {
			a.Problem = "the image is too large to read (" + err.Error() + ")"
		} else {
			a.Problem = "it is " + ErrNotImage.Error()
		}
		return
	}
	name, err := in.store.Put(out)
	if err != nil {
		in.log.Warn("store image", "err", err)
		a.Problem = "I could not save it"
		return
	}
	a.Sha256, a.MimeType = name, mt
	in.log.Debug("image stored", "sha256", name, "width", w, "height", h, "bytes", len(out), "from_bytes", len(data))
}

func (in *Ingester) document(ctx context.Context, a *messages.Attachment, data []byte) error {
	a.Kind = "document"
	name, err := in.store.Put(data)
	if err != nil {
		in.log.Warn("store document", "err", err)
		a.Problem = "I could not save it"
		return nil
	}
	a.Sha256 = name
	var text string
	switch docKind(a.Name, a.MimeType, data) {
	case kindPDF:
		p, perr := in.store.Path(name)
		if perr != nil {
			return perr
		}
		text, err = extractPDF(ctx, p, in.lim.DocumentMaxChars, in.lim.PDFTimeout)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	case kindDOCX:
		text, err = extractDOCX(data, in.lim.DocumentMaxChars, docxMaxEntrySize)
	case kindText:
		text = string(bytes.TrimPrefix(data, []byte("\uFEFF")))
	case kindBadPDF:
		err = fmt.Errorf("named a PDF without a PDF's header: %w", ErrBadDocument)
	default:
		a.Problem = fmt.Sprintf("I can't read this kind of file (%s); I read text, Markdown, source code, PDF and DOCX",
			orElse(baseType(a.MimeType), path.Ext(a.Name), "unknown type"))
		return nil
	}
	switch {
	case errors.Is(err, ErrNoPDFTool):
		a.Problem = ErrNoPDFTool.Error() + " on this server"
		return nil
	case errors.Is(err, errTooSlow):
		in.log.Warn("document extraction timed out", "name", a.Name, "bytes", len(data), "err", err)
		a.Problem = fmt.Sprintf("%s (over %s)", errTooSlow, in.lim.PDFTimeout)
		return nil
	case err != nil:
		in.log.Info("document refused", "name", a.Name, "bytes", len(data), "err", err)
		a.Problem = ErrBadDocument.Error()
		return nil
	}
	text = strings.ToValidUTF8(strings.TrimSpace(text), "\uFFFD")
	if text == "" {
		a.Problem = "I found no text in it (a scanned document holds only pictures)"
		return nil
	}
	a.Text, a.Truncated = capRunes(text, in.lim.DocumentMaxChars)
	return nil
}

type docKindT int

const (
	kindUnsupported docKindT = iota
	kindText
	kindPDF
	kindBadPDF
	kindDOCX
)

const docxMIME = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"

// docKind decides by content first: a PDF is what starts like one, a DOCX a
// zip named or typed as one, text what is valid UTF-8 without control bytes
// (whatever its name: Makefile, main.go, notes.md).
func docKind(name, mimeType string, data []byte) docKindT {
	ext := strings.ToLower(path.Ext(name))
	mt := baseType(mimeType)
	switch {
	case bytes.HasPrefix(data, []byte("%PDF-")):
		return kindPDF
	case ext == ".pdf" || mt == "application/pdf":
		return kindBadPDF
	case bytes.HasPrefix(data, []byte("PK\x03\x04")) && (ext == ".docx" || mt == docxMIME):
		return kindDOCX
	case ext == ".docx" || mt == docxMIME:
		return kindUnsupported
	case looksText(data):
		return kindText
	}
	return kindUnsupported
}

// looksText reports valid UTF-8 with no control characters but tab, line
// feed, carriage return and form feed.
func looksText(data []byte) bool {
	if !utf8.Valid(data) {
		return false
	}
	for _, c := range data {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' || c == 0x7f {
			return false
		}
	}
	return true
}

// isImage reports whether an attachment claims to be an image; the bytes
// are checked after.
func isImage(kind, name, mimeType string) bool {
	if kind == "photo" || strings.HasPrefix(baseType(mimeType), "image/") {
		return true
	}
	switch strings.ToLower(path.Ext(name)) {
	case ".jpg", ".jpeg", ".png", ".gif", ".webp":
		return true
	}
	return false
}

func baseType(mimeType string) string {
	mt, _, err := mime.ParseMediaType(mimeType)
	if err != nil {
		return strings.ToLower(strings.TrimSpace(mimeType))
	}
	return mt
}

// capRunes cuts s to at most n characters.
func capRunes(s string, n int) (string, bool) {
	if utf8.RuneCountInString(s) <= n {
		return s, false
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j], true
		}
		i++
	}
	return s, false
}

func sizeText(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

func orElse(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
