package model_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/model/modeltest"
)

// wireMessages decodes the raw "messages" of a recorded body, to assert on
// the exact spelling servers receive.
func wireMessages(t *testing.T, body []byte) []map[string]json.RawMessage {
	t.Helper()
	var b struct {
		Messages []map[string]json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("body: %v", err)
	}
	return b.Messages
}

func TestClient_ImagesAsContentParts(t *testing.T) {
	srv := modeltest.NewServer(t, modeltest.WithAPIKey(testKey))
	c := newClient(t, srv.URL(), nil)
	jpeg := []byte{0xff, 0xd8, 0xff, 0xe0, 1, 2, 3, 0, 255}
	png := []byte("\x89PNG\r\n\x1a\nrest")
	req := userRequest("what is this?")
	req.Messages[1].Images = []model.Image{{MIME: "image/jpeg", Data: jpeg}, {MIME: "image/png", Data: png}}
	if _, err := c.Complete(t.Context(), req); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	rec := srv.LastRequest(t)
	msgs := wireMessages(t, rec.Body)
	// The system message keeps the plain string form.
	if !bytes.HasPrefix(msgs[0]["content"], []byte(`"`)) {
		t.Errorf("system content = %s, want a string", msgs[0]["content"])
	}
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	if err := json.Unmarshal(msgs[1]["content"], &parts); err != nil {
		t.Fatalf("user content is not parts: %s: %v", msgs[1]["content"], err)
	}
	if len(parts) != 3 || parts[0].Type != "text" || parts[0].Text != "what is this?" || parts[1].Type != "image_url" || parts[2].Type != "image_url" {
		t.Fatalf("parts = %+v", parts)
	}
	for i, want := range []struct {
		mime string
		data []byte
	}{{"image/jpeg", jpeg}, {"image/png", png}} {
		u := parts[i+1].ImageURL.URL
		prefix := "data:" + want.mime + ";base64,"
		if !strings.HasPrefix(u, prefix) {
			t.Fatalf("image %d url = %.40q, want prefix %q", i, u, prefix)
		}
		got, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(u, prefix))
		if err != nil || !bytes.Equal(got, want.data) {
			t.Errorf("image %d bytes = %v (%v), want %v", i, got, err, want.data)
		}
	}
	// The fake decodes the parts back into hermesd's vocabulary.
	got := rec.Request.Messages[1]
	if got.Content != "what is this?" || len(got.Images) != 2 || !bytes.Equal(got.Images[0].Data, jpeg) || got.Images[1].MIME != "image/png" {
		t.Errorf("decoded = %+v", got)
	}
}

func TestClient_TextOnlyKeepsStringContent(t *testing.T) {
	srv := modeltest.NewServer(t)
	c := newClient(t, srv.URL(), nil)
	if _, err := c.Complete(t.Context(), userRequest("plain")); err != nil {
		t.Fatal(err)
	}
	for i, m := range wireMessages(t, srv.LastRequest(t).Body) {
		if !bytes.HasPrefix(m["content"], []byte(`"`)) {
			t.Errorf("message %d content = %s, want a JSON string", i, m["content"])
		}
	}
}

func TestClient_RefusesEmptyImage(t *testing.T) {
	srv := modeltest.NewServer(t)
	c := newClient(t, srv.URL(), nil)
	req := userRequest("x")
	req.Messages[1].Images = []model.Image{{MIME: "image/png"}}
	if _, err := c.Complete(t.Context(), req); err == nil {
		t.Fatal("an image without bytes was sent")
	}
	if srv.Calls() != 0 {
		t.Errorf("server saw %d calls", srv.Calls())
	}
}

func TestOffline_SaysItGotImages(t *testing.T) {
	resp, err := model.Offline{}.Complete(t.Context(), model.Request{Messages: []model.Message{
		{Role: model.RoleUser, Content: "look", Images: []model.Image{{MIME: "image/jpeg", Data: make([]byte, 10)}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if c := resp.Message.Content; !strings.Contains(c, "received 1 image(s) (image/jpeg, 10 bytes)") || !strings.HasPrefix(c, model.OfflineLabel) {
		t.Errorf("offline answer = %q", c)
	}
}
