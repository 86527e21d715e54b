package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermesd/hermesd/config"
)

func TestDoctorMedia_FindsPdftotextOnPath(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", dir)
	var b strings.Builder
	doctorMedia(&b, config.Media{})
	if out := b.String(); !strings.Contains(out, "• pdftotext is missing") || !strings.Contains(out, "HERMES_MODEL_VISION=off") {
		t.Errorf("without pdftotext:\n%s", out)
	}
	tool := filepath.Join(dir, "pdftotext")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	doctorMedia(&b, config.Media{Vision: true})
	if out := b.String(); !strings.Contains(out, "✓ pdftotext (poppler-utils) at "+tool) || !strings.Contains(out, "HERMES_MODEL_VISION=on") {
		t.Errorf("with pdftotext:\n%s", out)
	}
}
