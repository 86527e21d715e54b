package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hermesd/hermesd/config"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/store"
)

const exportUsage = `Usage: hermesd export [-format jsonl|md] [-o FILE] SESSION

Writes the current conversation of SESSION (a session key, as 'hermesd
sessions' lists them, e.g. telegram:dm:12345678 or web:dm:me) from the store:
jsonl is one JSON object per message (role, content, tool calls, time);
md is a readable transcript. It reads the database directly, so it works
whether or not hermesd runs.

Examples:
  hermesd export web:dm:me
  hermesd export -format md -o chat.md telegram:dm:12345678
`

// exportedMessage is one line of -format jsonl.
type exportedMessage struct {
	ID         int64           `json:"id"`
	Session    string          `json:"session"`
	Role       string          `json:"role"`
	Content    string          `json:"content"`
	Name       string          `json:"name,omitempty"`
	ToolCalls  json.RawMessage `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	Created    time.Time       `json:"created"`
}

func export(ctx context.Context, args []string, w io.Writer, env func(string) (string, bool)) error {
	fl := flag.NewFlagSet("export", flag.ContinueOnError)
	fl.SetOutput(w)
	fl.Usage = func() { io.WriteString(fl.Output(), exportUsage) }
	format := fl.String("format", "jsonl", "jsonl or md")
	outFile := fl.String("o", "", "write to FILE instead of standard output")
	if err := fl.Parse(args); err != nil {
		return flagError(err)
	}
	if fl.NArg() != 1 {
		return usageError{"export needs one SESSION\n" + exportUsage}
	}
	if *format != "jsonl" && *format != "md" {
		return usageError{fmt.Sprintf("-format %q: want jsonl or md", *format)}
	}
	key := fl.Arg(0)
	if _, err := messages.ParseKey(key); err != nil {
		return usageError{fmt.Sprintf("%q is not a session key: %v", key, err)}
	}
	cfg, err := config.Load(env)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	db := cfg.Database()
	if !store.IsPostgresURL(db) && !fileExists(db) {
		return fmt.Errorf("no database at %s (is HERMES_HOME right?)", db)
	}
	st, err := store.Open(ctx, db)
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	defer st.Close()
	hist, err := st.History(ctx, key, 0)
	if err != nil {
		return err
	}
	if len(hist) == 0 {
		return fmt.Errorf("session %s has no messages", key)
	}
	out := w
	var f *os.File
	if *outFile != "" {
		if f, err = os.OpenFile(*outFile, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600); err != nil {
			return fmt.Errorf("export: %w", err)
		}
		out = f
	}
	bw := bufio.NewWriter(out)
	if *format == "jsonl" {
		err = exportJSONL(bw, key, hist)
	} else {
		err = exportMarkdown(bw, key, hist)
	}
	if err == nil {
		err = bw.Flush()
	}
	if f != nil {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

func exportJSONL(w io.Writer, key string, hist []store.Message) error {
	enc := json.NewEncoder(w)
	for _, m := range hist {
		if err := enc.Encode(exportedMessage{
			ID: m.ID, Session: key, Role: string(m.Role), Content: m.Content, Name: m.Name,
			ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, Created: m.Created.UTC(),
		}); err != nil {
			return err
		}
	}
	return nil
}

func exportMarkdown(w io.Writer, key string, hist []store.Message) error {
	fmt.Fprintf(w, "# %s\n\nExported %s, %d messages.\n", key, time.Now().UTC().Format(time.RFC3339), len(hist))
	for _, m := range hist {
		who := string(m.Role)
		if m.Name != "" {
			who += " (" + m.Name + ")"
		}
		fmt.Fprintf(w, "\n## %s · %s\n\n", who, m.Created.UTC().Format("2006-01-02 15:04:05Z"))
		if m.Content != "" {
			fmt.Fprintln(w, m.Content)
		}
		if len(m.ToolCalls) > 0 {
			fmt.Fprintf(w, "\n```json\n%s\n```\n", strings.TrimSpace(string(m.ToolCalls)))
		}
	}
	_, err := fmt.Fprintln(w)
	return err
}
