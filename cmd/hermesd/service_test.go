package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestService_InstallAndUninstall(t *testing.T) {
	xdg := filepath.Join(t.TempDir(), "config dir") // a space, as in real homes
	home, env := testEnv(t, map[string]string{"XDG_CONFIG_HOME": xdg, "USER": "ada"})
	out, _, err := runCmd(t, env, "service", "install")
	if err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	unit := filepath.Join(xdg, "systemd", "user", "hermesd.service")
	b, err := os.ReadFile(unit)
	if err != nil {
		t.Fatalf("no unit written: %v", err)
	}
	self, _ := os.Executable()
	self, _ = filepath.EvalSymlinks(self)
	text := string(b)
	for _, want := range []string{
		"ExecStart=" + systemdQuote(self) + " run\n",
		"Environment=HERMES_HOME=" + home + "\n",
		"ExecReload=/bin/kill -HUP $MAINPID",
		"Restart=on-failure",
		"WantedBy=default.target",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("unit lacks %q:\n%s", want, text)
		}
	}
	for _, want := range []string{"systemctl --user enable --now hermesd", "loginctl enable-linger ada", unit} {
		if !strings.Contains(out, want) {
			t.Errorf("install output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(text, "TOKEN") || strings.Contains(text, "KEY") {
		t.Errorf("the unit carries a secret's name:\n%s", text)
	}

	out, _, err = runCmd(t, env, "service", "uninstall")
	if err != nil || !strings.Contains(out, "systemctl --user disable --now hermesd") {
		t.Fatalf("uninstall: %v\n%s", err, out)
	}
	if _, err := os.Stat(unit); !os.IsNotExist(err) {
		t.Fatalf("unit still there after uninstall: %v", err)
	}
	if _, _, err := runCmd(t, env, "service", "uninstall"); err == nil || !strings.Contains(err.Error(), "nothing to uninstall") {
		t.Errorf("second uninstall: %v", err)
	}
	if _, _, err := runCmd(t, env, "service", "install", "-binary", filepath.Join(home, "missing")); err == nil {
		t.Error("install accepted a binary that does not exist")
	}
}

func TestSystemdQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/usr/local/bin/hermesd": "/usr/local/bin/hermesd",
		"/home/a b/bin/hermesd":  `"/home/a b/bin/hermesd"`,
		`/odd"dir/hermesd`:       `"/odd\"dir/hermesd"`,
		"HERMES_HOME=/data/100%": "HERMES_HOME=/data/100%%",
		`HERMES_HOME=/a\b c`:     `"HERMES_HOME=/a\\b c"`,
	} {
		if got := systemdQuote(in); got != want {
			t.Errorf("systemdQuote(%q) = %q, want %q", in, got, want)
		}
	}
}
