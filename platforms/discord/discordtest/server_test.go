package discordtest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hermesd/hermesd/platforms/discord/discordtest"
)

func do(t *testing.T, method, url, body string, auth bool) (*http.Response, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth {
		req.Header.Set("Authorization", "Bot "+discordtest.Token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return resp, m
}

func TestServer_REST(t *testing.T) {
	srv := discordtest.NewServer(t)
	api := srv.URL + "/api/v9"

	if resp, _ := do(t, "POST", api+"/channels/1/messages", `{"content":"hi"}`, false); resp.StatusCode != 401 {
		t.Errorf("without token: %d, want 401", resp.StatusCode)
	}
	resp, msg := do(t, "POST", api+"/channels/1/messages", `{"content":"hi","message_reference":{"message_id":"9"}}`, true)
	if resp.StatusCode != 200 || msg["content"] != "hi" || msg["id"] == "" {
		t.Fatalf("post: %d %v", resp.StatusCode, msg)
	}
	id := msg["id"].(string)
	if resp, msg := do(t, "PATCH", api+"/channels/1/messages/"+id, `{"content":"edited"}`, true); resp.StatusCode != 200 || msg["content"] != "edited" {
		t.Errorf("edit: %d %v", resp.StatusCode, msg)
	}
	posts := srv.PostsTo("1")
	if len(posts) != 2 || posts[0].Reference.MessageID != "9" || posts[1].Method != "PATCH" || posts[1].MessageID != id {
		t.Errorf("recorded %+v", posts)
	}

	if resp, msg := do(t, "GET", api+"/channels/404", "", true); resp.StatusCode != 404 || msg["code"] != float64(10003) {
		t.Errorf("unknown channel: %d %v", resp.StatusCode, msg)
	}
	if resp, _ := do(t, "POST", api+"/channels/1/typing", "", true); resp.StatusCode != 204 || srv.Typing("1") != 1 {
		t.Errorf("typing: %d", resp.StatusCode)
	}

	srv.FailPosts("2", 1, discordtest.RateLimited(1500*time.Millisecond))
	resp, msg = do(t, "POST", api+"/channels/2/messages", `{"content":"x"}`, true)
	if resp.StatusCode != 429 || resp.Header.Get("X-RateLimit-Reset-After") != "1.500" || msg["retry_after"] != 1.5 {
		t.Errorf("429: %d %v %v", resp.StatusCode, resp.Header, msg)
	}
	if resp, _ := do(t, "POST", api+"/channels/2/messages", `{"content":"x"}`, true); resp.StatusCode != 200 {
		t.Errorf("after the 429: %d", resp.StatusCode)
	}

	if resp, msg := do(t, "POST", api+"/channels/3/messages", `{"content":"x","flags":8192}`, true); resp.StatusCode != 400 {
		t.Errorf("voice flag without a file: %d %v", resp.StatusCode, msg)
	}

	url := srv.PutCDN("a/b.ogg", []byte("OggS"))
	if resp, _ := http.Get(url); resp.StatusCode != 200 {
		t.Errorf("cdn: %d", resp.StatusCode)
	} else {
		resp.Body.Close()
	}
}
