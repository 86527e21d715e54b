package discord

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"math"
	"net/http"

	"github.com/bwmarrin/discordgo"

	"github.com/hermesd/hermesd/audio"
	"github.com/hermesd/hermesd/messages"
)

// Discord voice messages (flag IS_VOICE_MESSAGE): exactly one Ogg/Opus
// attachment named like the official clients', with its duration and a
// waveform of at most 256 samples, and no content at all.
const (
	voiceFlag     = int(discordgo.MessageFlagsIsVoiceMessage)
	voiceFilename = "voice-message.ogg"
	waveformLen   = 256
)

// errAudioTooLarge marks audio over MaxVoiceBytes, refused before upload.
var errAudioTooLarge = errors.New("audio over Discord's upload limit")

// sendVoice delivers a spoken reply. Ogg/Opus goes as a voice message; when
// the channel refuses voice messages (50173) or the permission is missing
// (50013) it goes as a plain audio attachment instead; when that is refused
// too, or the audio is too large (40005), the reply's text goes instead (or
// a notice saying why there is no audio). MP3 goes as an audio attachment.
// Any text of a delivered voice reply follows as a separate message, since a
// voice message cannot carry text. The caller holds the channel's lock.
func (a *Adapter) sendVoice(ctx context.Context, log *slog.Logger, ch string, d *messages.Delivery, rec *messages.DeliveryReceipt) error {
	audio := d.GetAudio()
	if len(audio) == 0 {
		rec.ShownAs = shownText
		ids, err := a.sendTextLocked(ctx, log, ch, d.GetText(), d.GetReplyToId())
		rec.MessageIds = append(rec.MessageIds, ids...)
		if err == nil && len(ids) == 0 {
			err = errors.New("discord: send: voice delivery without audio or text")
		}
		return err
	}

	format, known := messages.ParseAudioFormat(d.GetFormat())
	ogg := isOggOpus(audio)
	if known && format == messages.FormatOggOpus && !ogg {
		log.Warn("audio declared ogg/opus is not an Ogg/Opus stream; sending it as a file")
	}

	var (
		id, shown string
		reason    error // why the audio could not be shown, if it could not
		err       error
	)
	if len(audio) > MaxVoiceBytes {
		reason = errAudioTooLarge
	} else if ogg {
		id, err = a.postVoiceMessage(ctx, log, ch, audio, d)
		switch {
		case err == nil:
			shown = shownVoice
		case refused(err):
			log.Info("channel refuses voice messages; sending an audio file", "err", err)
		case tooLarge(err):
			reason = err
		default:
			return err
		}
	}
	if shown == "" && reason == nil {
		name, ct, as := fileFor(format, known, ogg)
		p := messagePayload{
			Reference:   reference(ch, d.GetReplyToId()),
			Attachments: []attachmentPayload{{ID: "0", Filename: name}},
		}
		id, err = a.post(ctx, log, ch, p, []upload{{name: name, contentType: ct, data: audio}})
		switch {
		case err == nil:
			shown = as
		case refused(err), tooLarge(err):
			log.Info("channel refuses the audio file; sending text", "err", err)
			reason = err
		default:
			return err
		}
	}

	if shown == "" {
		text := d.GetText()
		if text == "" {
			text = fallbackNotice(reason)
		}
		rec.ShownAs = shownText
		ids, err := a.sendTextLocked(ctx, log, ch, text, d.GetReplyToId())
		rec.MessageIds = append(rec.MessageIds, ids...)
		return err
	}
	rec.ShownAs = shown
	rec.MessageIds = append(rec.MessageIds, id)
	if d.GetText() != "" {
		ids, err := a.sendTextLocked(ctx, log, ch, d.GetText(), "")
		rec.MessageIds = append(rec.MessageIds, ids...)
		return err
	}
	return nil
}

// postVoiceMessage posts audio as a Discord voice message in one multipart
// request: flags 8192, one attachment voice-message.ogg with duration_secs
// and a base64 waveform, no content.
func (a *Adapter) postVoiceMessage(ctx context.Context, log *slog.Logger, ch string, audio []byte, d *messages.Delivery) (string, error) {
	dur := d.GetDurationSecs()
	if dur <= 0 {
		dur = oggDuration(audio)
	}
	if dur <= 0 {
		dur = 1 // Discord needs a duration; a wrong one only mislabels the bubble
	}
	p := messagePayload{
		Flags:     voiceFlag,
		Reference: reference(ch, d.GetReplyToId()),
		Attachments: []attachmentPayload{{
			ID: "0", Filename: voiceFilename, DurationSecs: dur,
			Waveform: base64.StdEncoding.EncodeToString(waveform(d.GetWaveform(), dur)),
		}},
	}
	return a.post(ctx, log, ch, p, []upload{{name: voiceFilename, contentType: messages.FormatOggOpus.MIMEType(), data: audio}})
}

// fileFor names an audio attachment and says how it will be shown.
func fileFor(format messages.AudioFormat, known, ogg bool) (name, contentType, shown string) {
	switch {
	case ogg:
		return "reply.ogg", messages.FormatOggOpus.MIMEType(), shownAudio
	case known && format == messages.FormatMP3:
		return "reply.mp3", messages.FormatMP3.MIMEType(), shownAudio
	}
	return "reply.bin", "application/octet-stream", shownFile
}

// refused reports a refusal to post this kind of message in the channel:
// voice messages not allowed (50173) or a missing permission (50013).
func refused(err error) bool {
	switch errorCode(err) {
	case codeVoiceForbidden, codeMissingPermissions:
		return true
	}
	return errorStatus(err) == http.StatusForbidden && errorCode(err) == 0
}

// tooLarge reports Discord's "request entity too large" (413 / 40005).
func tooLarge(err error) bool {
	return errors.Is(err, errAudioTooLarge) || errorCode(err) == codeTooLarge ||
		errorStatus(err) == http.StatusRequestEntityTooLarge
}

// fallbackNotice tells the user why a voice reply arrived as nothing but text.
func fallbackNotice(reason error) string {
	if tooLarge(reason) {
		return "(The voice reply was too large to send on Discord.)"
	}
	return "(This channel does not allow voice messages or audio files, so the voice reply could not be sent.)"
}

// isOggOpus reports whether b is an Ogg/Opus stream (audio.Sniff: a valid,
// CRC-checked first page holding an OpusHead). Anything else is not sent as
// a voice message.
func isOggOpus(b []byte) bool { return audio.Sniff(b) == audio.ContainerOggOpus }

// oggDuration is the length of an Ogg/Opus stream in seconds (last granule
// less the pre-skip); 0 when it cannot tell.
func oggDuration(b []byte) float64 {
	d, err := audio.OggOpusDuration(b)
	if err != nil {
		return 0
	}
	return d.Seconds()
}

// waveform returns at most 256 samples for the voice bubble: the delivery's
// own (downsampled by peak when longer), or a flat line of one sample per
// 100 ms when it has none.
func waveform(w []byte, dur float64) []byte {
	switch {
	case len(w) == 0:
		n := min(max(int(math.Ceil(dur*10)), 1), waveformLen)
		return bytes.Repeat([]byte{128}, n)
	case len(w) <= waveformLen:
		return w
	}
	out := make([]byte, waveformLen)
	for i := range out {
		lo, hi := i*len(w)/waveformLen, (i+1)*len(w)/waveformLen
		for _, v := range w[lo:hi] {
			out[i] = max(out[i], v)
		}
	}
	return out
}
