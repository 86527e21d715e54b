package audio_test

import (
	"go/build"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/hermesd/hermesd/"

// imports returns every hermesd package pkg depends on, directly or not
// (production code only: tests may import what they like).
func imports(t *testing.T, pkg string) map[string]bool {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var walk func(string)
	walk = func(p string) {
		bp, err := build.Default.ImportDir(filepath.Join(root, strings.TrimPrefix(p, module)), 0)
		if err != nil {
			t.Fatalf("read %s: %v", p, err)
		}
		for _, imp := range bp.Imports {
			if strings.HasPrefix(imp, module) && !seen[imp] {
				seen[imp] = true
				walk(imp)
			}
		}
	}
	walk(pkg)
	return seen
}

// TestDependencies_RunOneWay pins the layering: audio is codec code that
// knows no hermesd package but the vocabulary; tts builds on audio and
// messages and never on a platform; the platform adapters use audio (to
// sniff and time voice notes) and never tts.
func TestDependencies_RunOneWay(t *testing.T) {
	for imp := range imports(t, module+"audio") {
		if imp != module+"messages" {
			t.Errorf("audio imports %s", imp)
		}
	}
	ttsImports := imports(t, module+"tts")
	if !ttsImports[module+"audio"] {
		t.Fatal("positive control: tts does not import audio, so the walk is broken")
	}
	for imp := range ttsImports {
		if strings.HasPrefix(imp, module+"platforms") {
			t.Errorf("tts imports %s", imp)
		}
	}
	for _, p := range []string{"platforms/telegram", "platforms/discord", "platforms/web"} {
		if imports(t, module+p)[module+"tts"] {
			t.Errorf("%s imports tts", p)
		}
	}
}
