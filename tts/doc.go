// Package tts turns text into speech encoded for the platform that asked for
// it: Ogg/Opus voice notes for Telegram and Discord, MP3 for the web chat.
//
// A Provider (espeak.go, openai.go, elevenlabs.go) produces PCM or encoded
// bytes; the conversions between them (resampling, Opus, MP3, the Ogg
// muxer, the sniffer, the waveform) live in package audio. synth.go ties
// the stages into one Speak call that always returns exactly the requested
// format; actor.go serves Speak to every session from a bounded worker pool,
// choosing the format from the request's envelope and the platform's
// messages.Capabilities.
package tts
