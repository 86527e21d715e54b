package media

import (
	"archive/zip"
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Limits on a DOCX archive, so a zip bomb costs at most this much: the
// central directory may list many entries, and an entry may inflate far
// beyond its compressed size (its declared size is not trusted either).
const (
	docxMaxEntries   = 2000
	docxMaxEntrySize = 32 << 20
)

// docxBody is the one part of a DOCX that holds the document's text.
const docxBody = "word/document.xml"

// ErrBadDocument says a file is damaged or hostile (not a readable DOCX or
// PDF, an archive over its limits).
var ErrBadDocument = errors.New("the document is damaged or not what its name says")

// extractDOCX returns the paragraphs of a DOCX's body as lines of text,
// stopping once it has more than maxChars characters. Nothing is written
// to disk; only word/document.xml is read, by its exact name, and never
// more than maxEntry bytes of it (docxMaxEntrySize in use; tests pass less).
func extractDOCX(data []byte, maxChars int, maxEntry uint64) (string, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return "", fmt.Errorf("docx: %w: %w", ErrBadDocument, err)
	}
	if len(zr.File) > docxMaxEntries {
		return "", fmt.Errorf("docx: %d entries, more than %d: %w", len(zr.File), docxMaxEntries, ErrBadDocument)
	}
	var body *zip.File
	for _, f := range zr.File {
		if f.Name != docxBody {
			continue
		}
		if body != nil {
			// Two parts with one name: which one a reader shows is
			// anyone's guess, so neither is trusted.
			return "", fmt.Errorf("docx: %s twice: %w", docxBody, ErrBadDocument)
		}
		body = f
	}
	if body == nil {
		return "", fmt.Errorf("docx: no %s: %w", docxBody, ErrBadDocument)
	}
	if body.UncompressedSize64 > maxEntry {
		return "", fmt.Errorf("docx: %s declares %d bytes, more than %d: %w", docxBody, body.UncompressedSize64, maxEntry, ErrBadDocument)
	}
	rc, err := body.Open()
	if err != nil {
		return "", fmt.Errorf("docx: %w: %w", ErrBadDocument, err)
	}
	defer rc.Close()
	lr := &io.LimitedReader{R: rc, N: int64(maxEntry) + 1}
	text, err := docxText(lr, maxChars)
	if lr.N <= 0 {
		return "", fmt.Errorf("docx: %s inflates past %d bytes: %w", docxBody, maxEntry, ErrBadDocument)
	}
	if err != nil {
		return "", fmt.Errorf("docx: %w: %w", ErrBadDocument, err)
	}
	return text, nil
}

// docxText walks WordprocessingML: w:t runs are text, w:tab a tab, w:br and
// w:cr line breaks, and each w:p ends a line. Everything else (styles,
// fields' instructions, drawings) is skipped. It keeps at most maxChars+1
// characters, so the caller can tell that the text was cut.
func docxText(r io.Reader, maxChars int) (string, error) {
	const w = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
	dec := xml.NewDecoder(r)
	var b strings.Builder
	chars, inText := 0, false
	add := func(s string) {
		for _, r := range s {
			if chars > maxChars {
				return
			}
			b.WriteRune(r)
			chars++
		}
	}
	for chars <= maxChars {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name.Space != w {
				continue
			}
			switch t.Name.Local {
			case "t":
				inText = true
			case "tab":
				add("\t")
			case "br", "cr":
				add("\n")
			}
		case xml.EndElement:
			if t.Name.Space != w {
				continue
			}
			switch t.Name.Local {
			case "t":
				inText = false
			case "p":
				add("\n")
			}
		case xml.CharData:
			if inText {
				add(string(t))
			}
		}
	}
	return strings.TrimRight(b.String(), "\n"), nil
}
