package access_test

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// assertNotInDatabase checks that text appears nowhere in the database files
// (main file and WAL): pairing codes are stored only as salted hashes.
func assertNotInDatabase(t *testing.T, path, text string) {
	t.Helper()
	for _, f := range []string{path, path + "-wal"} {
		b, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(text)) {
			t.Fatalf("%s holds the code %q in plain text", f, text)
		}
	}
}
