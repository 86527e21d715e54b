package model

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/hermesd/hermesd/model/internal/wire"
)

// The offline assistant reads tool results it did not define: the tools
// package chooses their shape. These helpers accept the plausible ones (JSON
// objects with an "error", lists of strings or of objects with a "content",
// wrappers such as {"memories": […]}, plain text) and always return
// something readable.

// toolFailure reports whether a tool result is an error result, and its
// message: a JSON object with a non-empty "error", or text starting with
// "error:".
func toolFailure(result string) (string, bool) {
	s := strings.TrimSpace(result)
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(s), &obj) == nil {
		raw, ok := obj["error"]
		if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("false")) {
			return "", false
		}
		return wire.ErrorText(raw)
	}
	for _, p := range []string{"error:", "tool error:", "panic:"} {
		if rest, ok := cutPrefixFold(s, p); ok {
			return strings.TrimSpace(rest), true
		}
	}
	return "", false
}

// resultText is the readable part of a tool result.
func resultText(result string) string {
	s := strings.TrimSpace(result)
	var v any
	if json.Unmarshal([]byte(s), &v) == nil {
		switch x := v.(type) {
		case string:
			s = x
		case map[string]any:
			s = firstString(x, "result", "summary", "output", "answer", "content", "text", "message")
			if s == "" {
				b, _ := json.Marshal(x)
				s = string(b)
			}
		}
	}
	if s == "" {
		return "(no result)"
	}
	return truncate(s, 1500)
}

// resultItems splits a list-like tool result into items.
func resultItems(result string) []string {
	s := strings.TrimSpace(result)
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return lines(s)
	}
	return itemsOf(v)
}

func itemsOf(v any) []string {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		return lines(x)
	case []any:
		var items []string
		for _, e := range x {
			if t := itemText(e); t != "" {
				items = append(items, t)
			}
		}
		return items
	case map[string]any:
		for _, k := range []string{"memories", "entries", "items", "results", "matches", "messages"} {
			if list, ok := x[k]; ok {
				return itemsOf(list)
			}
		}
		for _, k := range []string{"content", "text", "result"} {
			if s, ok := x[k].(string); ok {
				return lines(s)
			}
		}
		if t := itemText(x); t != "" {
			return []string{t}
		}
	}
	return nil
}

func itemText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return strings.TrimSpace(x)
	case map[string]any:
		if s := firstString(x, "content", "text", "fact", "snippet", "message", "summary", "title"); s != "" {
			return s
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func firstString(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := m[k].(string); ok && strings.TrimSpace(s) != "" {
			return strings.TrimSpace(s)
		}
	}
	return ""
}

// lines splits text into non-empty lines without list markers.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		for _, marker := range []string{"- ", "* ", "• "} {
			l = strings.TrimPrefix(l, marker)
		}
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}
