package actors

import (
	"context"
	"fmt"
	"strings"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/model"
)

// Catalog is the model catalog as sessions see it (/model, /usage prices).
// *model.Router implements it.
type Catalog interface {
	// Models lists the configured models in order.
	Models() []model.ModelInfo
	// Info returns the model called name.
	Info(name string) (model.ModelInfo, bool)
	// Default names the model of a chat that chose none.
	Default() string
}

// UsageEntry is what a session spent on one model on one UTC day.
type UsageEntry struct {
	// Day is the UTC date, YYYY-MM-DD.
	Day                        string
	Model                      string
	Calls, TokensIn, TokensOut int64
}

// UsageBook books and reads the tokens sessions spend. The store
// implements it (daemon/persist.go).
type UsageBook interface {
	// AddUsage books one model call of s on the model named model without
	// waiting: the booking is queued before it returns, and done gets its
	// outcome.
	AddUsage(s messages.Session, model string, u model.Usage, done func(error))
	// Usage returns what s spent, per day and model, and today's date.
	Usage(ctx context.Context, s messages.Session) (entries []UsageEntry, today string, err error)
}

// ModelSaver is implemented by a Persistence that keeps a chat's /model
// choice; without it the choice lasts until the session passivates.
type ModelSaver interface {
	SaveModel(ctx context.Context, s messages.Session, model string) error
}

// commandReply carries the answer of a command that had to read or write
// the store first, back to the session that sends it.
type commandReply struct {
	m    *messages.UserMessage
	text string
	// err is the store's answer to the write the command made, if any: a
	// fenced one stops the session instead of replying.
	err error
}

// modelName is the catalog name a turn's answer is booked under: the one
// that answered, else the chat's choice, else what the runtime calls its
// model (a single Completer that names none).
func (rt *Runtime) modelName(answered, chosen string) string {
	switch {
	case answered != "":
		return answered
	case chosen != "":
		return chosen
	case rt.catalog != nil:
		return rt.catalog.Default()
	}
	return rt.cfg.ModelName
}

// bookUsage records one model call's tokens. The caller's answer never
// waits for the store, yet the booking is queued before the turn's
// settlement, so a /usage sent after the reply sees it; usage spent by a
// turn that is being cancelled is still spent.
func (rt *Runtime) bookUsage(s messages.Session, name string, u model.Usage) {
	if rt.usage == nil || u == (model.Usage{}) {
		return
	}
	rt.usage.AddUsage(s, name, u, func(err error) {
		if err != nil {
			rt.log.Warn("book model usage", "session", s.Key(), "model", name, "err", err)
		}
	})
}

// fallbackNotice is the line added to a reply a fallback model wrote.
func fallbackNotice(name string) string {
	return fmt.Sprintf("\n\n↪ answered by %s (fallback)", name)
}

// modelCommand answers /model: the list with the chat's current model
// marked, or a switch to the model named.
func (a *session) modelCommand(c actor.Context, m *messages.UserMessage, arg string) {
	cat := a.rt.catalog
	if cat == nil {
		a.reply(c, m, fmt.Sprintf("Model: %s. Only one model is configured (see models: in config.yaml).", a.rt.cfg.ModelName))
		return
	}
	current := a.currentModel()
	if arg == "" {
		var b strings.Builder
		b.WriteString("Models (/model <name> to switch):\n")
		for _, info := range cat.Models() {
			mark := "  "
			if info.Name == current {
				mark = "▶ "
			}
			b.WriteString(mark + info.Name)
			var notes []string
			if info.ContextTokens > 0 {
				notes = append(notes, fmt.Sprintf("%dk context", info.ContextTokens/1000))
			}
			if info.Vision {
				notes = append(notes, "vision")
			}
			if info.PriceIn > 0 || info.PriceOut > 0 {
				notes = append(notes, fmt.Sprintf("%g/%g per 1M tokens", info.PriceIn, info.PriceOut))
			}
			if info.Name == cat.Default() {
				notes = append(notes, "default")
			}
			if len(notes) > 0 {
				b.WriteString(" — " + strings.Join(notes, ", "))
			}
			b.WriteByte('\n')
		}
		a.reply(c, m, strings.TrimRight(b.String(), "\n"))
		return
	}
	info, ok := cat.Info(arg)
	if !ok {
		names := make([]string, 0, len(cat.Models()))
		for _, i := range cat.Models() {
			names = append(names, i.Name)
		}
		a.reply(c, m, fmt.Sprintf("Unknown model %q. Choose one of: %s.", arg, strings.Join(names, ", ")))
		return
	}
	a.model = info.Name
	if info.Name == cat.Default() {
		a.model = "" // follows the default, should the operator change it
	}
	saver, ok := a.rt.persist.(ModelSaver)
	text := fmt.Sprintf("Model set to %s.", info.Name)
	if !ok {
		a.reply(c, m, text)
		return
	}
	s, name, timeout, f := a.s, a.model, a.rt.cfg.StoreTimeout, a.fence
	goSend(c, func() any {
		ctx, cancel := context.WithTimeout(WithFence(context.Background(), f), timeout)
		defer cancel()
		if err := saver.SaveModel(ctx, s, name); err != nil {
			return &commandReply{m: m, text: text + " (It could not be saved and may be forgotten: " + err.Error() + ")", err: err}
		}
		return &commandReply{m: m, text: text}
	})
}

// currentModel is the catalog name this chat's turns ask for.
func (a *session) currentModel() string {
	if info, ok := a.rt.ModelInfo(a.model); ok {
		return info.Name
	}
	return a.rt.cfg.ModelName
}

// Catalog returns the model catalog, nil when hermesd runs one fixed
// Completer (the offline assistant, a test's model).
func (rt *Runtime) Catalog() Catalog { return rt.catalog }

// ModelInfo describes the model a chat that chose name is answered by: name
// when the catalog has it, else the default. It reports false when there is
// no catalog (then nothing is known: no context size, no vision).
func (rt *Runtime) ModelInfo(name string) (model.ModelInfo, bool) {
	if rt.catalog == nil {
		return model.ModelInfo{}, false
	}
	if info, ok := rt.catalog.Info(name); ok {
		return info, true
	}
	return rt.catalog.Info(rt.catalog.Default())
}

// usageCommand answers /usage from the usage book.
func (a *session) usageCommand(c actor.Context, m *messages.UserMessage) {
	book := a.rt.usage
	if book == nil {
		a.reply(c, m, "Usage is not recorded here.")
		return
	}
	s, cat, timeout := a.s, a.rt.catalog, a.rt.cfg.StoreTimeout
	goSend(c, func() any {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		entries, today, err := book.Usage(ctx, s)
		if err != nil {
			return &commandReply{m: m, text: "⚠️ Could not read the usage: " + err.Error()}
		}
		return &commandReply{m: m, text: UsageText(Summarize(entries, today, cat))}
	})
}

// UsageSummary is a session's usage, today and in total, priced by the
// catalog's current prices.
type UsageSummary struct {
	Today   string       `json:"today"`
	Day     UsageTotals  `json:"today_usage"`
	Total   UsageTotals  `json:"total"`
	ByModel []ModelUsage `json:"by_model"`
}

// UsageTotals adds up calls, tokens and cost.
type UsageTotals struct {
	Calls     int64   `json:"calls"`
	TokensIn  int64   `json:"tokens_in"`
	TokensOut int64   `json:"tokens_out"`
	Cost      float64 `json:"cost"`
}

// ModelUsage is one model's share of the total.
type ModelUsage struct {
	Model string `json:"model"`
	UsageTotals
}

// Summarize adds entries up into today's and all-time totals, pricing each
// model by cat (no price, or no catalog: cost 0).
func Summarize(entries []UsageEntry, today string, cat Catalog) UsageSummary {
	sum := UsageSummary{Today: today, ByModel: []ModelUsage{}}
	idx := map[string]int{}
	for _, e := range entries {
		var info model.ModelInfo
		if cat != nil {
			info, _ = cat.Info(e.Model)
		}
		cost := info.Cost(model.Usage{PromptTokens: int(e.TokensIn), CompletionTokens: int(e.TokensOut)})
		add := func(t *UsageTotals) {
			t.Calls += e.Calls
			t.TokensIn += e.TokensIn
			t.TokensOut += e.TokensOut
			t.Cost += cost
		}
		add(&sum.Total)
		if e.Day == today {
			add(&sum.Day)
		}
		i, ok := idx[e.Model]
		if !ok {
			i = len(sum.ByModel)
			idx[e.Model] = i
			sum.ByModel = append(sum.ByModel, ModelUsage{Model: e.Model})
		}
		add(&sum.ByModel[i].UsageTotals)
	}
	return sum
}

// UsageText words a summary for the chat.
func UsageText(s UsageSummary) string {
	if s.Total.Calls == 0 {
		return "No model usage recorded for this chat yet."
	}
	line := func(t UsageTotals) string {
		out := fmt.Sprintf("%d tokens in, %d out (%d calls)", t.TokensIn, t.TokensOut, t.Calls)
		if t.Cost > 0 {
			out += fmt.Sprintf(", cost %.4f", t.Cost)
		}
		return out
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Usage of this chat\nToday (%s UTC): %s\nTotal: %s", s.Today, line(s.Day), line(s.Total))
	if len(s.ByModel) > 1 {
		for _, mu := range s.ByModel {
			fmt.Fprintf(&b, "\n  %s: %s", mu.Model, line(mu.UsageTotals))
		}
	}
	return b.String()
}
