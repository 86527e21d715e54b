// Package media keeps the files users send (images, documents) and turns
// them into what a model can read: images checked, scaled down and
// re-encoded; documents (text, Markdown, source, PDF, DOCX) extracted to
// capped text. Adapters download a file with a size cap and hand its bytes
// to an Ingester at accept time; the result is a messages.Attachment that
// names the stored bytes by their SHA-256 and carries any extracted text, so
// the inbox row never holds the bytes and a restart still has everything.
package media

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Store keeps files content-addressed in one directory
// (HERMES_HOME/media/<sha256>): the same bytes sent twice are stored once,
// and a name can only ever mean those bytes.
type Store struct {
	dir string
}

// NewStore opens (creating if needed) the store in dir.
func NewStore(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("media store: %w", err)
	}
	return &Store{dir: dir}, nil
}

// ErrNotFound is returned by Get for a name the store does not hold.
var ErrNotFound = errors.New("media: no such file")

// Put stores data and returns its name, the hex SHA-256 of the bytes. It
// writes a temporary file and renames it, so a reader never sees half a
// file, and it does nothing when the file is already there.
func (s *Store) Put(data []byte) (string, error) {
	sum := sha256.Sum256(data)
	name := hex.EncodeToString(sum[:])
	dst := filepath.Join(s.dir, name)
	if _, err := os.Stat(dst); err == nil {
		return name, nil
	}
	f, err := os.CreateTemp(s.dir, ".put-*")
	if err != nil {
		return "", fmt.Errorf("media store: %w", err)
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("media store: write %s: %w", name, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("media store: %w", err)
	}
	return name, nil
}

// Path returns where the file named name is kept, after checking that name
// is a SHA-256 in hex (so no name reaches outside the directory).
func (s *Store) Path(name string) (string, error) {
	if !validName(name) {
		return "", fmt.Errorf("media store: %q is not a file name of this store: %w", name, ErrNotFound)
	}
	return filepath.Join(s.dir, name), nil
}

// Get reads the file named name.
func (s *Store) Get(name string) ([]byte, error) {
	p, err := s.Path(name)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("media store: %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("media store: %w", err)
	}
	return data, nil
}

func validName(name string) bool {
	if len(name) != 2*sha256.Size {
		return false
	}
	for _, c := range name {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
