package media

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"unicode/utf8"
)

// bombZip holds word/document.xml inflating to n zero bytes; with lie set,
// its central directory claims 100 bytes instead (the one size Go's reader
// checks before inflating).
func bombZip(t *testing.T, n int, lie bool) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, _ := zw.Create(docxBody)
	w.Write(make([]byte, n))
	zw.Close()
	data := b.Bytes()
	if lie {
		i := bytes.Index(data, []byte("PK\x01\x02"))
		if i < 0 {
			t.Fatal("no central directory")
		}
		binary.LittleEndian.PutUint32(data[i+24:], 100)
	}
	return data
}

func TestExtractDOCX_InflateCap(t *testing.T) {
	const capBytes = 1 << 20
	for name, data := range map[string][]byte{
		// The header says what it holds: refused before inflating.
		"declared": bombZip(t, 4<<20, false),
		// The header lies: archive/zip stops reading past the declared
		// size (the LimitedReader in extractDOCX is the backstop).
		"lying": bombZip(t, 4<<20, true),
	} {
		text, err := extractDOCX(data, 1000, capBytes)
		if !errors.Is(err, ErrBadDocument) || text != "" {
			t.Errorf("%s: text %q, err %v", name, text, err)
		}
	}
}

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
		text, err := extractDOCX(data, maxChars, 1<<20)
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
