package media

import (
	"archive/zip"
	"bytes"
	"testing"
	"unicode/utf8"
)

// FuzzExtractDOCX feeds arbitrary archives to the DOCX extractor: it must
// never panic, never return more than the cap plus the one character that
// shows it was cut, and never hang.
func FuzzExtractDOCX(f *testing.F) {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, _ := zw.Create(docxBody)
	w.Write([]byte(`<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>hi</w:t><w:tab/><w:t>there</w:t><w:br/></w:r></w:p></w:body></w:document>`))
	zw.Close()
	f.Add(b.Bytes())
	f.Add([]byte("PK\x03\x04"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		const maxChars = 64
		text, err := extractDOCX(data, maxChars)
		if err != nil {
			if text != "" {
				t.Fatalf("error %v with text %q", err, text)
			}
			return
		}
		if !utf8.ValidString(text) && utf8.Valid(data) {
			// encoding/xml only yields valid UTF-8 from valid input.
			t.Fatalf("invalid UTF-8 out of valid input: %q", text)
		}
		if n := utf8.RuneCountInString(text); n > maxChars+1 {
			t.Fatalf("%d characters", n)
		}
	})
}
