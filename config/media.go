package config

import (
	"strconv"
	"strings"
)

// Media are the settings of images and documents users send.
type Media struct {
	// Vision gives the model photos as image content parts; off, it gets a
	// description and the user is told once per session.
	Vision bool
	// MaxBytes is the largest file downloaded from a chat.
	MaxBytes int64
	// ImageMaxSide and ImageMaxBytes bound an image as the model gets it;
	// larger ones are scaled down and re-encoded as JPEG.
	ImageMaxSide  int
	ImageMaxBytes int
	// DocumentMaxChars caps the text extracted from one document.
	DocumentMaxChars int
}

// mediaKeys are the settings of Media, as in keys.
var mediaKeys = []struct {
	name, def string
	secret    bool
}{
	{"HERMES_MODEL_VISION", "off", false},
	{"HERMES_MEDIA_MAX_BYTES", "20971520", false},
	{"HERMES_IMAGE_MAX_SIDE", "2048", false},
	{"HERMES_IMAGE_MAX_BYTES", "2097152", false},
	{"HERMES_DOCUMENT_MAX_CHARS", "40000", false},
}

func parseMedia(v map[string]string, bad func(key, format string, args ...any)) Media {
	var m Media
	switch s := strings.ToLower(strings.TrimSpace(v["HERMES_MODEL_VISION"])); s {
	case "on", "true", "yes", "1":
		m.Vision = true
	case "off", "false", "no", "0":
	default:
		bad("HERMES_MODEL_VISION", "want on or off, got %q", v["HERMES_MODEL_VISION"])
	}
	positive := func(key string) int64 {
		n, err := strconv.ParseInt(strings.TrimSpace(v[key]), 10, 64)
		if err != nil || n <= 0 {
			bad(key, "want a positive integer, got %q", v[key])
		}
		return n
	}
	m.MaxBytes = positive("HERMES_MEDIA_MAX_BYTES")
	m.ImageMaxSide = int(positive("HERMES_IMAGE_MAX_SIDE"))
	m.ImageMaxBytes = int(positive("HERMES_IMAGE_MAX_BYTES"))
	m.DocumentMaxChars = int(positive("HERMES_DOCUMENT_MAX_CHARS"))
	if m.ImageMaxSide > 0 && m.ImageMaxSide < 64 {
		bad("HERMES_IMAGE_MAX_SIDE", "want at least 64 pixels, got %d", m.ImageMaxSide)
	}
	return m
}
