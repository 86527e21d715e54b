package stt

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestTranscribe_UploadsOggAndReturnsText(t *testing.T) {
	var gotName, gotModel, gotAuth string
	var gotBytes []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/audio/transcriptions" {
			http.NotFound(w, r)
			return
		}
		gotAuth = r.Header.Get("Authorization")
		f, h, err := r.FormFile("file")
		if err != nil {
			t.Error(err)
			return
		}
		gotName = h.Filename
		gotBytes, _ = io.ReadAll(f)
		gotModel = r.FormValue("model")
		_, _ = io.WriteString(w, `{"text": " hello from a voice note "}`)
	}))
	defer srv.Close()
	c := &Client{BaseURL: srv.URL + "/v1", APIKey: "k", Model: "whisper-large"}
	text, err := c.Transcribe(context.Background(), []byte("OggS-audio"), "voice/file_7.oga")
	if err != nil {
		t.Fatal(err)
	}
	if text != "hello from a voice note" || gotName != "file_7.ogg" || string(gotBytes) != "OggS-audio" || gotModel != "whisper-large" || gotAuth != "Bearer k" {
		t.Fatalf("text %q name %q bytes %q model %q auth %q", text, gotName, gotBytes, gotModel, gotAuth)
	}
}

func TestTranscribe_ErrorsAreClear(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error": {"message": "Incorrect API key provided"}}`)
	}))
	defer srv.Close()
	_, err := (&Client{BaseURL: srv.URL}).Transcribe(context.Background(), []byte("x"), "a.ogg")
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "Incorrect API key") {
		t.Fatalf("err = %v", err)
	}
	if _, err := (&Client{BaseURL: srv.URL}).Transcribe(context.Background(), nil, "a.ogg"); err == nil {
		t.Fatal("empty audio accepted")
	}
}
