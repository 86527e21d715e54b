package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// TextToSpeech speaks text into the calling conversation as a voice reply.
// The format (Ogg/Opus voice note or MP3) follows from the conversation's
// platform, never from an argument.
func TextToSpeech() Tool {
	return Tool{
		Name:        "text_to_speech",
		Description: "Speak text aloud to the user as a voice message in this chat. Use when the user asks you to say something out loud or asks for a voice reply.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"What to say."},` +
			`"voice":{"type":"string","description":"Optional voice name."}},"required":["text"]}`),
		Run: func(ctx context.Context, env Env, args json.RawMessage) (string, error) {
			var a struct{ Text, Voice string }
			if err := decode(args, &a); err != nil {
				return "", err
			}
			if strings.TrimSpace(a.Text) == "" {
				return "", fmt.Errorf("%w: text is empty", ErrBadArguments)
			}
			d, err := env.Speak(ctx, a.Text, a.Voice)
			if err != nil {
				return "", fmt.Errorf("text_to_speech: %w", err)
			}
			return fmt.Sprintf("Delivered a %.1f s voice message to the user.", d.Seconds()), nil
		},
	}
}
