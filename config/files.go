package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Update writes settings into HERMES_HOME: secrets into .env, everything
// else into config.yaml, each file keeping its other lines and comments. An
// empty value removes the key. A key written to one file is removed from the
// other, so that what was set is what the next Load reads (the environment
// still wins over both). Both files are replaced atomically with mode 0600.
func Update(home string, set map[string]string) error {
	for name := range set {
		if !Known(name) || name == "HERMES_HOME" {
			return fmt.Errorf("unknown key %q (see docs/configuration.md)", name)
		}
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("create HERMES_HOME %s: %w", home, err)
	}
	yamlSet, envSet := map[string]*string{}, map[string]*string{}
	for name, v := range set {
		v := v
		if v == "" {
			yamlSet[name], envSet[name] = nil, nil
			continue
		}
		if IsSecret(name) {
			envSet[name], yamlSet[name] = &v, nil
		} else {
			yamlSet[name], envSet[name] = &v, nil
		}
	}
	if err := updateYAML(filepath.Join(home, ConfigFile), yamlSet); err != nil {
		return err
	}
	return updateDotEnv(filepath.Join(home, EnvFile), envSet)
}

// updateYAML sets (or, for nil, removes) keys in a flat config.yaml.
func updateYAML(path string, set map[string]*string) error {
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	var doc yaml.Node
	if len(bytes.TrimSpace(b)) > 0 {
		if err := yaml.Unmarshal(b, &doc); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	if doc.Kind == 0 {
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}}
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		if m.Tag != "!!null" {
			return fmt.Errorf("%s: want a mapping of keys to values", path)
		}
		*m = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", HeadComment: m.HeadComment}
	}
	changed := false
	for _, name := range sortedKeys(set) {
		v := set[name]
		found := false
		for i := 0; i+1 < len(m.Content); i += 2 {
			if !strings.EqualFold(m.Content[i].Value, name) {
				continue
			}
			found, changed = true, true
			if v == nil {
				m.Content = append(m.Content[:i], m.Content[i+2:]...)
			} else {
				m.Content[i+1] = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: *v, LineComment: m.Content[i+1].LineComment}
			}
			break
		}
		if !found && v != nil {
			changed = true
			m.Content = append(m.Content,
				&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: strings.ToLower(name)},
				&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: *v})
		}
	}
	if !changed {
		return nil
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return writeFileAtomic(path, out.Bytes())
}

// updateDotEnv sets (or, for nil, removes) keys in a .env file, keeping its
// other lines.
func updateDotEnv(path string, set map[string]*string) error {
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	var lines []string
	if len(b) > 0 {
		lines = strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	}
	done := map[string]bool{}
	changed := false
	out := lines[:0:0]
	for _, l := range lines {
		name, _, ok, _ := parseDotEnvLine(l)
		v, touch := set[name]
		if !ok || !touch {
			out = append(out, l)
			continue
		}
		changed = true
		if v != nil && !done[name] {
			out = append(out, name+"="+quoteDotEnv(*v))
		}
		done[name] = true
	}
	for _, name := range sortedKeys(set) {
		if v := set[name]; v != nil && !done[name] {
			out = append(out, name+"="+quoteDotEnv(*v))
			changed = true
		}
	}
	if !changed {
		return nil
	}
	text := strings.Join(out, "\n")
	if text != "" {
		text += "\n"
	}
	return writeFileAtomic(path, []byte(text))
}

// writeFileAtomic replaces path with data (mode 0600) through a temporary
// file in the same directory, so a crash leaves the old or the new file.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename this fails harmlessly
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
