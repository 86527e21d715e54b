package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/hermesd/hermesd/access"
	"github.com/hermesd/hermesd/config"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/store"
)

const pairingUsage = `usage:
  hermesd pairing list <platform>             pending codes and approved users
  hermesd pairing approve <platform> <code>   let the user who got <code> talk to the bot
  hermesd pairing revoke <platform> <user id> take that back
platform: telegram or discord`

// pairing manages who may talk to the bot on Telegram and Discord. It opens
// the daemon's database directly (SQLite allows the running daemon and this
// command at once), so it works whether or not hermesd runs.
func pairing(ctx context.Context, args []string, w io.Writer, env func(string) (string, bool)) error {
	if len(args) < 2 {
		return usageError{pairingUsage}
	}
	verb, p := args[0], messages.Platform(args[1])
	if p != messages.Telegram && p != messages.Discord {
		return usageError{fmt.Sprintf("unknown platform %q\n%s", p, pairingUsage)}
	}
	// Check the command line before touching the database, so a typo
	// cannot create HERMES_HOME/hermesd.db.
	switch {
	case verb == "list" && len(args) == 2, (verb == "approve" || verb == "revoke") && len(args) == 3:
	default:
		return usageError{pairingUsage}
	}
	cfg, err := config.Load(env)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	st, err := store.Open(ctx, cfg.Database())
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	defer st.Close()
	g := access.New(st, map[messages.Platform][]string{messages.Telegram: cfg.TelegramAllowed, messages.Discord: cfg.DiscordAllowed})
	g.Log = slog.New(slog.DiscardHandler) // failures are returned and printed once, by main
	switch verb {
	case "approve":
		if len(args) != 3 {
			return usageError{pairingUsage}
		}
		user, err := g.Approve(ctx, p, args[2])
		if err != nil {
			return fmt.Errorf("approve %s code %s: %w", p, args[2], err)
		}
		fmt.Fprintf(w, "approved %s user %s\n", p, user)
	case "revoke":
		if len(args) != 3 {
			return usageError{pairingUsage}
		}
		if err := g.Revoke(ctx, p, args[2]); err != nil {
			return fmt.Errorf("revoke %s user %s: %w", p, args[2], err)
		}
		fmt.Fprintf(w, "revoked %s user %s\n", p, args[2])
	case "list":
		pending, err := g.Pending(ctx, p)
		if err != nil {
			return err
		}
		approved, err := g.Approved(ctx, p)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "STATE\tUSER\tNAME\tSINCE")
		for _, r := range pending {
			fmt.Fprintf(tw, "pending\t%s\t%s\t%s\n", r.UserID, r.UserName, r.Created.Format(time.RFC3339))
		}
		for _, u := range approved {
			fmt.Fprintf(tw, "approved\t%s\t%s\t%s\n", u.UserID, u.UserName, u.Approved.Format(time.RFC3339))
		}
		return tw.Flush()
	default:
		return usageError{pairingUsage}
	}
	return nil
}
