package config

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
)

// readDotEnv reads a .env file of KEY=value lines: blank lines and # comments
// are skipped, "export " is allowed, values may be 'single-quoted' (taken
// literally) or "double-quoted" (with \n, \", \\ escapes); an unquoted value
// ends at " #". A missing file gives nothing. An unknown key is an error,
// like in config.yaml: a typo must not pass silently.
func readDotEnv(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	vals, err := parseDotEnv(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return vals, nil
}

func parseDotEnv(b []byte) (map[string]string, error) {
	out := make(map[string]string)
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		name, val, ok, err := parseDotEnvLine(sc.Text())
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if !ok {
			continue
		}
		if !Known(name) || name == "HERMES_HOME" {
			return nil, fmt.Errorf("line %d: unknown key %q (see docs/configuration.md)", n, name)
		}
		out[name] = val
	}
	return out, sc.Err()
}

// parseDotEnvLine returns ok=false for blank and comment lines.
func parseDotEnvLine(line string) (name, val string, ok bool, err error) {
	line = strings.TrimSpace(line)
	if line == "" || strings.HasPrefix(line, "#") {
		return "", "", false, nil
	}
	line = strings.TrimPrefix(line, "export ")
	name, val, found := strings.Cut(line, "=")
	name = strings.TrimSpace(name)
	if !found || name == "" {
		return "", "", false, errors.New("want KEY=value")
	}
	val = strings.TrimSpace(val)
	switch {
	case strings.HasPrefix(val, "'"):
		end := strings.IndexByte(val[1:], '\'')
		if end < 0 {
			return "", "", false, fmt.Errorf("%s: unterminated single quote", name)
		}
		return name, val[1 : 1+end], true, nil
	case strings.HasPrefix(val, `"`):
		var sb strings.Builder
		for i := 1; i < len(val); i++ {
			c := val[i]
			switch {
			case c == '"':
				return name, sb.String(), true, nil
			case c == '\\' && i+1 < len(val):
				i++
				switch val[i] {
				case 'n':
					sb.WriteByte('\n')
				case 't':
					sb.WriteByte('\t')
				default:
					sb.WriteByte(val[i])
				}
			default:
				sb.WriteByte(c)
			}
		}
		return "", "", false, fmt.Errorf("%s: unterminated double quote", name)
	}
	if i := strings.Index(val, " #"); i >= 0 {
		val = strings.TrimSpace(val[:i])
	}
	return name, val, true, nil
}

// quoteDotEnv writes v so that parseDotEnvLine reads it back unchanged.
func quoteDotEnv(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\n\"'\\#=$`") {
		return v
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`)
	return `"` + r.Replace(v) + `"`
}
