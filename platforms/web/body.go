package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
)

// IsJSON reports whether a Content-Type header is application/json
// (parameters such as charset allowed).
func IsJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// DecodeJSON decodes exactly one JSON value from r into v: trailing data
// after it, even a second value, is an error, so what hermesd acts on is the
// whole body and not a prefix a proxy or logger may read differently.
func DecodeJSON(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	if err := dec.Decode(v); err != nil {
		return err
	}
	var extra json.RawMessage
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
		return nil
	case err != nil:
		return fmt.Errorf("after the JSON value: %w", err)
	default:
		return errors.New("more than one JSON value in the body")
	}
}
