package config

import (
	"net/url"
	"path/filepath"
	"strconv"
)

// DatabaseFile is the SQLite database's name in HERMES_HOME.
const DatabaseFile = "hermesd.db"

// Database returns what store.Open takes: HERMES_DATABASE_URL when set, else
// the SQLite file in HERMES_HOME.
func (c Config) Database() string {
	if c.DatabaseURL != "" {
		return c.DatabaseURL
	}
	return filepath.Join(c.Home, DatabaseFile)
}

// checkDatabaseURL explains what is wrong with a HERMES_DATABASE_URL ("" if
// nothing): it must be a postgres:// or postgresql:// URL naming a host.
func checkDatabaseURL(s string) string {
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil {
		return "want a postgres:// URL, got an unparsable value"
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return "want a postgres:// or postgresql:// URL, got scheme " + strconv.Quote(u.Scheme)
	}
	if u.Host == "" && u.Query().Get("host") == "" {
		return "want a URL naming the server (postgres://user@host:5432/db)"
	}
	return ""
}
