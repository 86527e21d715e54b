package audio

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/thesyncim/gopus"
)

// Opus defaults: 20 ms frames at about 32 kbit/s in VoIP mode is what
// Telegram and Discord clients themselves send for voice notes.
const (
	// DefaultOpusBitrate is the target in bit/s (gopus undershoots it on
	// speech, landing near 26 kbit/s).
	DefaultOpusBitrate = 32000
	// DefaultOpusComplexity trades a little quality for speed: gopus at
	// complexity 5 encodes about 1.5× faster than at 10 with a barely
	// measurable loss on speech (notes/audio.md §2).
	DefaultOpusComplexity = 5
	opusFrameDuration     = 20 * time.Millisecond
	// opusMaxPacket is the most an encoder may write for one frame.
	opusMaxPacket = 4000
	// opusVendor is the OpusTags vendor string of files hermesd writes.
	opusVendor = "hermesd"
)

// OpusEncoder is one mono Opus encoder for one stream: it turns frames of
// PCM into Opus packets. It exists so that a cgo libopus encoder can be added
// later behind a build tag with no change to the muxing code; the default is
// pure-Go gopus (NewGopusEncoder), which needs neither cgo nor a system
// library.
type OpusEncoder interface {
	// SampleRate is the input rate: 8, 12, 16, 24 or 48 kHz.
	SampleRate() int
	// FrameSize is the number of samples Encode takes per call.
	FrameSize() int
	// Lookahead is the encoder's algorithmic delay in samples at
	// SampleRate: the decoder must skip this much (the Ogg pre-skip).
	Lookahead() int
	// Encode encodes one frame of exactly FrameSize samples into dst and
	// returns the packet length.
	Encode(frame []int16, dst []byte) (int, error)
}

// OpusConfig configures a new OpusEncoder.
type OpusConfig struct {
	// SampleRate is the encoder's input rate (8, 12, 16, 24 or 48 kHz).
	SampleRate int
	// Bitrate in bit/s.
	Bitrate int
	// Complexity 0–10: higher is slower and slightly better.
	Complexity int
}

// NewOpusEncoderFunc creates an OpusEncoder; OpusOptions.NewEncoder takes
// one so the implementation can be swapped.
type NewOpusEncoderFunc func(OpusConfig) (OpusEncoder, error)

// gopusEncoder adapts gopus to OpusEncoder.
type gopusEncoder struct {
	enc  *gopus.Encoder
	rate int
}

var _ OpusEncoder = (*gopusEncoder)(nil)

// NewGopusEncoder returns a pure-Go Opus encoder (github.com/thesyncim/gopus)
// in VoIP mode with 20 ms frames.
func NewGopusEncoder(cfg OpusConfig) (OpusEncoder, error) {
	enc, err := gopus.NewEncoder(gopus.EncoderConfig{SampleRate: cfg.SampleRate, Channels: 1, Application: gopus.ApplicationVoIP})
	if err != nil {
		return nil, fmt.Errorf("gopus: new encoder at %d Hz: %w", cfg.SampleRate, err)
	}
	if err := enc.SetBitrate(cfg.Bitrate); err != nil {
		return nil, fmt.Errorf("gopus: bitrate %d: %w", cfg.Bitrate, err)
	}
	if err := enc.SetComplexity(cfg.Complexity); err != nil {
		return nil, fmt.Errorf("gopus: complexity %d: %w", cfg.Complexity, err)
	}
	if err := enc.SetSignal(gopus.SignalVoice); err != nil {
		return nil, fmt.Errorf("gopus: signal: %w", err)
	}
	frame := int(time.Duration(cfg.SampleRate) * opusFrameDuration / time.Second)
	if err := enc.SetFrameSize(frame); err != nil {
		return nil, fmt.Errorf("gopus: frame size %d: %w", frame, err)
	}
	return &gopusEncoder{enc: enc, rate: cfg.SampleRate}, nil
}

// SampleRate, FrameSize, Lookahead and Encode implement OpusEncoder.
func (g *gopusEncoder) SampleRate() int { return g.rate }
func (g *gopusEncoder) FrameSize() int  { return g.enc.FrameSize() }
func (g *gopusEncoder) Lookahead() int  { return g.enc.Lookahead() }
func (g *gopusEncoder) Encode(frame []int16, dst []byte) (int, error) {
	return g.enc.EncodeInt16(frame, dst)
}

// OpusOptions tune EncodeOggOpus; the zero value gives the defaults.
type OpusOptions struct {
	// Bitrate in bit/s; 0 means DefaultOpusBitrate.
	Bitrate int
	// Complexity 0–10; 0 means DefaultOpusComplexity (use the encoder
	// directly for complexity 0).
	Complexity int
	// SampleRate forces the encoder rate; 0 picks the lowest Opus rate at or
	// above the input's (24 kHz for espeak-ng, 48 kHz for 44.1 kHz MP3).
	SampleRate int
	// PageDuration is the most audio per Ogg page; 0 means
	// DefaultOggPageDuration.
	PageDuration time.Duration
	// NewEncoder creates the encoder; nil means NewGopusEncoder.
	NewEncoder NewOpusEncoderFunc
}

// opusRates are the input rates Opus accepts, ascending.
var opusRates = [...]int{8000, 12000, 16000, 24000, 48000}

// opusRateFor returns the lowest Opus rate that keeps all of a signal
// sampled at rate: resampling up loses nothing, down would.
func opusRateFor(rate int) int {
	for _, r := range opusRates {
		if r >= rate {
			return r
		}
	}
	return 48000
}

// EncodeOggOpus encodes p as a mono Ogg/Opus file: resample to an Opus rate,
// encode 20 ms frames, mux with this package's Ogg muxer. The OpusHead
// carries the encoder's real lookahead as pre-skip and the input rate, and
// the last granule is trimmed to the real length, so the file's duration is
// that of p. ctx is checked between frames.
func EncodeOggOpus(ctx context.Context, p PCM, opt OpusOptions) ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("encode opus: %w", err)
	}
	if opt.Bitrate == 0 {
		opt.Bitrate = DefaultOpusBitrate
	}
	if opt.Complexity == 0 {
		opt.Complexity = DefaultOpusComplexity
	}
	if opt.NewEncoder == nil {
		opt.NewEncoder = NewGopusEncoder
	}
	rate := opt.SampleRate
	if rate == 0 {
		rate = opusRateFor(p.Rate)
	}
	in, err := Resample(p, rate)
	if err != nil {
		return nil, fmt.Errorf("encode opus: %w", err)
	}
	enc, err := opt.NewEncoder(OpusConfig{SampleRate: rate, Bitrate: opt.Bitrate, Complexity: opt.Complexity})
	if err != nil {
		return nil, fmt.Errorf("encode opus: %w", err)
	}
	if enc.SampleRate() != rate || opusGranuleRate%rate != 0 {
		return nil, fmt.Errorf("encode opus: encoder runs at %d Hz, want %d", enc.SampleRate(), rate)
	}
	scale := opusGranuleRate / rate // 48 kHz granule samples per encoder sample
	frame, look := enc.FrameSize(), enc.Lookahead()
	if frame <= 0 || look < 0 || look*scale > 0xFFFF {
		return nil, fmt.Errorf("encode opus: encoder frame %d, lookahead %d", frame, look)
	}

	n := len(in.Samples)
	// The decoder's output lags the input by the lookahead, so encode that
	// much padding past the end for the last real sample to come out.
	frames := (n + look + frame - 1) / frame
	var out bytes.Buffer
	out.Grow(frames*opt.Bitrate/8/50 + frames + 1024)
	head := OpusHead{Version: 1, Channels: 1, PreSkip: uint16(look * scale), InputRate: uint32(p.Rate)}
	mux, err := NewOggOpusMuxer(&out, head, OpusTags{Vendor: opusVendor}, rand.Uint32(), opt.PageDuration)
	if err != nil {
		return nil, fmt.Errorf("encode opus: %w", err)
	}
	buf := make([]int16, frame)
	pkt := make([]byte, opusMaxPacket)
	for f := 0; f < frames; f++ {
		if f%50 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("encode opus: %w", err)
			}
		}
		start := f * frame
		if start+frame <= n {
			copy(buf, in.Samples[start:start+frame])
		} else {
			clear(buf)
			if start < n {
				copy(buf, in.Samples[start:])
			}
		}
		size, err := enc.Encode(buf, pkt)
		if err != nil {
			return nil, fmt.Errorf("encode opus: frame %d: %w", f, err)
		}
		if err := mux.WritePacket(pkt[:size], frame*scale); err != nil {
			return nil, fmt.Errorf("encode opus: frame %d: %w", f, err)
		}
	}
	if err := mux.Close(int64(look*scale) + int64(n*scale)); err != nil {
		return nil, fmt.Errorf("encode opus: %w", err)
	}
	return out.Bytes(), nil
}

// DecodeOggOpus decodes an Ogg/Opus file to mono PCM at rate (one of the
// Opus rates), dropping the pre-skip and the trimmed end, so the result is
// the audio a player would play. Stereo streams are averaged to mono.
func DecodeOggOpus(b []byte, rate int) (PCM, error) {
	s, err := ParseOggOpus(b)
	if err != nil {
		return PCM{}, fmt.Errorf("decode opus: %w", err)
	}
	if len(s.Packets) == 0 {
		return PCM{}, fmt.Errorf("decode opus: %w", ErrEmptyAudio)
	}
	if s.Head.MappingFamily != 0 {
		return PCM{}, fmt.Errorf("decode opus: channel mapping family %d not supported", s.Head.MappingFamily)
	}
	ch := int(s.Head.Channels)
	dec, err := gopus.NewDecoder(gopus.DefaultDecoderConfig(rate, ch))
	if err != nil {
		return PCM{}, fmt.Errorf("decode opus: new decoder at %d Hz: %w", rate, err)
	}
	if s.Head.OutputGain != 0 {
		if err := dec.SetGain(int(s.Head.OutputGain)); err != nil {
			return PCM{}, fmt.Errorf("decode opus: output gain: %w", err)
		}
	}
	skip := int64(s.Head.PreSkip) * int64(rate) / opusGranuleRate
	keep := (s.FinalGranule - int64(s.Head.PreSkip)) * int64(rate) / opusGranuleRate
	out := make([]int16, 0, keep)   // ParseOggOpus bounds keep by the packets' length
	frame := make([]int16, 5760*ch) // 120 ms, the longest Opus packet
	var pos int64
	for i, p := range s.Packets {
		k, err := dec.DecodeInt16(p, frame)
		if err != nil {
			return PCM{}, fmt.Errorf("decode opus: packet %d: %w", i, err)
		}
		for j := 0; j < k; j, pos = j+1, pos+1 {
			if pos < skip || int64(len(out)) >= keep {
				continue
			}
			if ch == 1 {
				out = append(out, frame[j])
			} else {
				out = append(out, int16((int(frame[2*j])+int(frame[2*j+1]))/2))
			}
		}
	}
	return PCM{Samples: out, Rate: rate}, nil
}
