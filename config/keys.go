package config

// File names inside HERMES_HOME.
const (
	// ConfigFile holds settings that are not secret (written by `hermesd
	// setup` and `hermesd config set`).
	ConfigFile = "config.yaml"
	// EnvFile holds KEY=value lines, secrets above all; it is written with
	// mode 0600. The real environment wins over it.
	EnvFile = ".env"
)

// Source says where a setting's value came from.
type Source string

// Sources, weakest first.
const (
	FromDefault     Source = "default"
	FromYAML        Source = ConfigFile
	FromEnvFile     Source = EnvFile
	FromEnvironment Source = "environment"
)

// Setting is one key's effective raw value.
type Setting struct {
	Name   string
	Value  string
	Source Source
	Secret bool
}

// Key describes one setting of the contract.
type Key struct {
	// Name is the environment variable, also the config.yaml key.
	Name string
	// Default is the value when nothing sets it ("" for none).
	Default string
	// Secret keys are never printed or logged, and `hermesd setup` and
	// `hermesd config set` write them to .env, not config.yaml.
	Secret bool
}

// Keys lists every setting, in the order of docs/configuration.md.
func Keys() []Key {
	out := make([]Key, len(keys))
	for i, k := range keys {
		out[i] = Key{Name: k.name, Default: k.def, Secret: k.secret}
	}
	return out
}

// Known reports whether name is a setting.
func Known(name string) bool {
	for _, k := range keys {
		if k.name == name {
			return true
		}
	}
	return false
}

// IsSecret reports whether name is a secret setting.
func IsSecret(name string) bool {
	for _, k := range keys {
		if k.name == name {
			return k.secret
		}
	}
	return false
}

// LoadWith is Load as it will be once set is written with Update: set
// replaces what the files say (an empty value removes the key), and the
// environment still wins. `hermesd config set` and `hermesd setup` check a
// change with it before writing anything.
func LoadWith(lookup func(string) (string, bool), set map[string]string) (Config, error) {
	settings, err := Resolve(lookup)
	if err != nil {
		return Config{}, err
	}
	def := make(map[string]string, len(keys))
	for _, k := range keys {
		def[k.name] = k.def
	}
	vals := make(map[string]string, len(settings))
	for _, s := range settings {
		vals[s.Name] = s.Value
		if v, ok := set[s.Name]; ok && s.Source != FromEnvironment {
			if v == "" {
				v = def[s.Name]
			}
			vals[s.Name] = v
		}
	}
	return parse(vals)
}
