package main

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hermesd/hermesd/config"
	"github.com/hermesd/hermesd/store"
)

const backupUsage = `Usage: hermesd backup [-with-secrets] FILE

Writes HERMES_HOME's database (a consistent copy taken with VACUUM INTO, safe
while hermesd runs), its skills/ and config.yaml to FILE, a .tar.gz.
HERMES_HOME/.env (tokens, keys) is left out unless -with-secrets is given.

Examples:
  hermesd backup ~/hermesd-$(date +%F).tar.gz
`

const restoreUsage = `Usage: hermesd restore [-force] FILE

Restores a backup into HERMES_HOME: the database and skills/, plus
config.yaml and .env where HERMES_HOME has none. hermesd must not be running
on HERMES_HTTP_ADDR. An existing database or skills/ is refused unless -force
is given; then it is kept beside the restored one as *.before-restore-<time>.

Examples:
  HERMES_HOME=/srv/hermesd hermesd restore hermesd-2026-12-01.tar.gz
`

// manifest is MANIFEST.json in a backup: what made it and when.
type manifest struct {
	Format  int       `json:"format"`
	Version string    `json:"hermesd"`
	Schema  int       `json:"schema"`
	Created time.Time `json:"created"`
	Files   []string  `json:"files"`
}

const (
	backupFormat = 1
	manifestName = "MANIFEST.json"
	dbName       = "hermesd.db"
	skillsDir    = "skills"
)

func backup(ctx context.Context, args []string, w io.Writer, env func(string) (string, bool)) error {
	fl := flag.NewFlagSet("backup", flag.ContinueOnError)
	fl.SetOutput(w)
	fl.Usage = func() { io.WriteString(fl.Output(), backupUsage) }
	secrets := fl.Bool("with-secrets", false, "include HERMES_HOME/.env")
	if err := fl.Parse(args); err != nil {
		return flagError(err)
	}
	if fl.NArg() != 1 {
		return usageError{"backup needs one FILE\n" + backupUsage}
	}
	dest := fl.Arg(0)
	if fileExists(dest) {
		return fmt.Errorf("backup: %s already exists; choose a new file name", dest)
	}
	home, err := config.Home(env)
	if err != nil {
		return err
	}
	// With the state in PostgreSQL there is no database file to copy.
	if cfg, err := config.Load(env); err == nil && cfg.DatabaseURL != "" {
		return fmt.Errorf("backup: HERMES_DATABASE_URL is set: %w", store.ErrBackupPostgres)
	}
	tmp, err := os.MkdirTemp("", "hermesd-backup-")
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer os.RemoveAll(tmp)
	snapshot := filepath.Join(tmp, dbName)
	if err := store.Backup(ctx, filepath.Join(home, dbName), snapshot); err != nil {
		return err
	}

	files := []struct{ name, path string }{{dbName, snapshot}}
	for _, f := range []string{config.ConfigFile, config.EnvFile} {
		if f == config.EnvFile && !*secrets {
			continue
		}
		if p := filepath.Join(home, f); fileExists(p) {
			files = append(files, struct{ name, path string }{f, p})
		}
	}
	skillsRoot := filepath.Join(home, skillsDir)
	err = filepath.WalkDir(skillsRoot, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == skillsRoot {
			return fs.SkipDir
		}
		if err != nil || !d.Type().IsRegular() {
			return err // directories are implied by their files; links are skipped
		}
		rel, err := filepath.Rel(home, p)
		if err != nil {
			return err
		}
		files = append(files, struct{ name, path string }{filepath.ToSlash(rel), p})
		return nil
	})
	if err != nil {
		return fmt.Errorf("backup: read skills: %w", err)
	}

	m := manifest{Format: backupFormat, Version: versionString(), Schema: store.SchemaVersion(), Created: time.Now().UTC()}
	for _, f := range files {
		m.Files = append(m.Files, f.name)
	}
	part := dest + ".partial"
	out, err := os.OpenFile(part, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer os.Remove(part) // after the rename this fails harmlessly
	if err := writeArchive(out, m, files); err != nil {
		out.Close()
		return fmt.Errorf("backup: write %s: %w", dest, err)
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return fmt.Errorf("backup: %w", err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if err := os.Rename(part, dest); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	fmt.Fprintf(w, "backed up %s (%d files: database, %s) to %s\n", home, len(files), strings.Join(m.Files[1:], ", "), dest)
	if !*secrets {
		fmt.Fprintln(w, "(.env with tokens and keys left out; -with-secrets includes it)")
	}
	return nil
}

func writeArchive(out io.Writer, m manifest, files []struct{ name, path string }) error {
	gz := gzip.NewWriter(out)
	tw := tar.NewWriter(gz)
	mb, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: manifestName, Mode: 0o600, Size: int64(len(mb)), ModTime: m.Created}); err != nil {
		return err
	}
	if _, err := tw.Write(mb); err != nil {
		return err
	}
	for _, f := range files {
		if err := addFile(tw, f.name, f.path); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func addFile(tw *tar.Writer, name, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: fi.Size(), ModTime: fi.ModTime()}); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}

func restore(ctx context.Context, args []string, w io.Writer, env func(string) (string, bool)) error {
	fl := flag.NewFlagSet("restore", flag.ContinueOnError)
	fl.SetOutput(w)
	fl.Usage = func() { fmt.Fprint(fl.Output(), restoreUsage) }
	force := fl.Bool("force", false, "replace an existing database and skills (kept as *.before-restore-<time>)")
	if err := fl.Parse(args); err != nil {
		return flagError(err)
	}
	if fl.NArg() != 1 {
		return usageError{"restore needs one FILE\n" + restoreUsage}
	}
	cfg, err := config.Load(env)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	// With the state in PostgreSQL the restored file would never be read.
	if cfg.DatabaseURL != "" {
		return fmt.Errorf("restore: HERMES_DATABASE_URL is set: %w", store.ErrBackupPostgres)
	}
	if daemonAnswers(ctx, cfg.HTTPAddr) {
		return fmt.Errorf("restore: hermesd is running on %s; stop it first (restoring under a running daemon would lose writes)", cfg.HTTPAddr)
	}
	home := cfg.Home
	if !*force {
		for _, p := range []string{dbName, skillsDir} {
			if fileExists(filepath.Join(home, p)) {
				return fmt.Errorf("restore: %s already exists; -force replaces it (keeping the old one beside it)", filepath.Join(home, p))
			}
		}
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	tmp, err := os.MkdirTemp(home, ".restore-")
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	defer os.RemoveAll(tmp)
	m, err := extract(fl.Arg(0), tmp)
	if err != nil {
		return fmt.Errorf("restore %s: %w", fl.Arg(0), err)
	}
	// Open it once: proves it is a database, and migrates an older schema.
	st, err := store.Open(ctx, filepath.Join(tmp, dbName))
	if err != nil {
		return fmt.Errorf("restore: the backup's database does not open: %w", err)
	}
	if err := st.Close(); err != nil {
		return fmt.Errorf("restore: %w", err)
	}

	stamp := time.Now().UTC().Format("20060102T150405Z")
	moved := []string{}
	for _, p := range []string{dbName, dbName + "-wal", dbName + "-shm", skillsDir} {
		old := filepath.Join(home, p)
		if fileExists(old) {
			if err := os.Rename(old, old+".before-restore-"+stamp); err != nil {
				return fmt.Errorf("restore: keep the old %s: %w", p, err)
			}
			moved = append(moved, p)
		}
	}
	for _, p := range []string{dbName, dbName + "-wal", dbName + "-shm", skillsDir} {
		if src := filepath.Join(tmp, p); fileExists(src) {
			if err := os.Rename(src, filepath.Join(home, p)); err != nil {
				return fmt.Errorf("restore: %w", err)
			}
		}
	}
	for _, f := range []string{config.ConfigFile, config.EnvFile} {
		src, dst := filepath.Join(tmp, f), filepath.Join(home, f)
		if !fileExists(src) {
			continue
		}
		if fileExists(dst) {
			fmt.Fprintf(w, "kept the existing %s (the backup's is not restored over it)\n", dst)
			continue
		}
		if err := os.Rename(src, dst); err != nil {
			return fmt.Errorf("restore: %w", err)
		}
	}
	fmt.Fprintf(w, "restored a backup from %s (hermesd %s, schema v%d) into %s\n", m.Created.Format(time.RFC3339), m.Version, m.Schema, home)
	if len(moved) > 0 {
		fmt.Fprintf(w, "the previous %s kept as *.before-restore-%s\n", strings.Join(moved, ", "), stamp)
	}
	return nil
}

// extract unpacks a backup into dir, refusing anything but regular files
// with local names (no "..", no absolute paths, no links), and returns its
// manifest.
func extract(file, dir string) (manifest, error) {
	var m manifest
	f, err := os.Open(file)
	if err != nil {
		return m, err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return m, fmt.Errorf("not a hermesd backup (gzip): %w", err)
	}
	tr := tar.NewReader(gz)
	seen := map[string]bool{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return m, fmt.Errorf("not a hermesd backup (tar): %w", err)
		}
		if h.Typeflag != tar.TypeReg || !filepath.IsLocal(h.Name) || strings.Contains(h.Name, `\`) {
			return m, fmt.Errorf("refusing entry %q: only plain files with relative names belong in a backup", h.Name)
		}
		name := filepath.Clean(h.Name)
		if name == manifestName {
			if err := json.NewDecoder(io.LimitReader(tr, 1<<20)).Decode(&m); err != nil {
				return m, fmt.Errorf("bad %s: %w", manifestName, err)
			}
			seen[name] = true
			continue
		}
		top := strings.SplitN(filepath.ToSlash(name), "/", 2)[0]
		if name != dbName && name != config.ConfigFile && name != config.EnvFile && top != skillsDir {
			return m, fmt.Errorf("refusing entry %q: not part of a hermesd backup", h.Name)
		}
		dst := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return m, err
		}
		out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return m, err
		}
		_, err = io.Copy(out, tr)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return m, err
		}
		seen[name] = true
	}
	if !seen[manifestName] || !seen[dbName] {
		return m, errors.New("not a hermesd backup: no MANIFEST.json or no hermesd.db")
	}
	if m.Format != backupFormat {
		return m, fmt.Errorf("backup format %d, this hermesd reads %d", m.Format, backupFormat)
	}
	return m, nil
}

// daemonAnswers reports whether a hermesd answers /healthz on addr.
func daemonAnswers(ctx context.Context, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	base, err := daemonURL(addr)
	if err != nil {
		return false
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
	if err != nil {
		return false
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	res.Body.Close()
	return true
}

func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
