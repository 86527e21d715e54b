package audio

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrBadWAV is wrapped by every ParseWAV error, so callers can tell a
// malformed file from an I/O or provider failure.
var ErrBadWAV = errors.New("bad wav")

// WAV format tags (the fmt chunk's first field).
const (
	wavFormatPCM        = 0x0001
	wavFormatFloat      = 0x0003
	wavFormatExtensible = 0xFFFE
)

// ParseWAV decodes a RIFF/WAVE file of 16-bit PCM into mono PCM, averaging
// the channels of multi-channel audio.
//
// It is written for espeak-ng's --stdout output, which cannot seek and so
// writes placeholder RIFF and data sizes (0x7FFFF0xx): a data chunk whose
// size runs past the end of the input is taken to run to EOF. Only 16-bit
// integer samples are accepted; other depths are an error that names them.
func ParseWAV(b []byte) (PCM, error) {
	if len(b) < 12 || string(b[0:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		return PCM{}, fmt.Errorf("%w: no RIFF/WAVE header", ErrBadWAV)
	}
	var (
		haveFmt  bool
		channels int
		rate     int
		bits     int
		align    int
	)
	off := 12
	for off+8 <= len(b) {
		id := string(b[off : off+4])
		size := int64(binary.LittleEndian.Uint32(b[off+4 : off+8]))
		body := off + 8
		switch id {
		case "fmt ":
			if size < 16 || int64(body)+size > int64(len(b)) {
				return PCM{}, fmt.Errorf("%w: fmt chunk of %d bytes", ErrBadWAV, size)
			}
			f := b[body : body+int(size)]
			tag := binary.LittleEndian.Uint16(f[0:2])
			channels = int(binary.LittleEndian.Uint16(f[2:4]))
			rate = int(binary.LittleEndian.Uint32(f[4:8]))
			align = int(binary.LittleEndian.Uint16(f[12:14]))
			bits = int(binary.LittleEndian.Uint16(f[14:16]))
			if tag == wavFormatExtensible {
				if size < 26 {
					return PCM{}, fmt.Errorf("%w: extensible fmt chunk of %d bytes", ErrBadWAV, size)
				}
				tag = binary.LittleEndian.Uint16(f[24:26]) // first two bytes of the sub-format GUID
			}
			switch tag {
			case wavFormatPCM:
			case wavFormatFloat:
				return PCM{}, fmt.Errorf("%w: %d-bit float samples not supported (need 16-bit PCM)", ErrBadWAV, bits)
			default:
				return PCM{}, fmt.Errorf("%w: format tag %#04x not supported (need 16-bit PCM)", ErrBadWAV, tag)
			}
			if bits != 16 {
				return PCM{}, fmt.Errorf("%w: %d-bit samples not supported (need 16-bit PCM)", ErrBadWAV, bits)
			}
			if channels < 1 || channels > 8 {
				return PCM{}, fmt.Errorf("%w: %d channels", ErrBadWAV, channels)
			}
			if rate <= 0 || rate > maxRate {
				return PCM{}, fmt.Errorf("%w: sample rate %d Hz", ErrBadWAV, rate)
			}
			if align != 2*channels {
				return PCM{}, fmt.Errorf("%w: block align %d for %d channels of 16 bits", ErrBadWAV, align, channels)
			}
			haveFmt = true
		case "data":
			if !haveFmt {
				return PCM{}, fmt.Errorf("%w: data chunk before fmt chunk", ErrBadWAV)
			}
			end := int64(body) + size
			if end > int64(len(b)) {
				end = int64(len(b)) // streamed WAV: placeholder size, data runs to EOF
			}
			return decodeInterleaved16(b[body:end], channels, rate), nil
		}
		// Chunks are padded to an even size.
		next := int64(body) + size + size&1
		if next > int64(len(b)) {
			break
		}
		off = int(next)
	}
	if !haveFmt {
		return PCM{}, fmt.Errorf("%w: no fmt chunk", ErrBadWAV)
	}
	return PCM{}, fmt.Errorf("%w: no data chunk", ErrBadWAV)
}

// decodeInterleaved16 turns little-endian interleaved s16 frames into mono
// PCM. A trailing partial frame is dropped.
func decodeInterleaved16(data []byte, channels, rate int) PCM {
	frame := 2 * channels
	n := len(data) / frame
	out := make([]int16, n)
	if channels == 1 {
		for i := range out {
			out[i] = int16(binary.LittleEndian.Uint16(data[2*i:]))
		}
		return PCM{Samples: out, Rate: rate}
	}
	for i := range out {
		var sum int
		f := data[i*frame : i*frame+frame]
		for c := 0; c < channels; c++ {
			sum += int(int16(binary.LittleEndian.Uint16(f[2*c:])))
		}
		out[i] = int16(sum / channels)
	}
	return PCM{Samples: out, Rate: rate}
}

// EncodeWAV writes p as a canonical 44-byte-header mono 16-bit WAV file, the
// form every command-line encoder reads from a pipe.
func EncodeWAV(p PCM) []byte {
	data := 2 * len(p.Samples)
	b := make([]byte, 44+data)
	copy(b[0:], "RIFF")
	binary.LittleEndian.PutUint32(b[4:], uint32(36+data))
	copy(b[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(b[16:], 16)
	binary.LittleEndian.PutUint16(b[20:], wavFormatPCM)
	binary.LittleEndian.PutUint16(b[22:], 1)
	binary.LittleEndian.PutUint32(b[24:], uint32(p.Rate))
	binary.LittleEndian.PutUint32(b[28:], uint32(2*p.Rate))
	binary.LittleEndian.PutUint16(b[32:], 2)
	binary.LittleEndian.PutUint16(b[34:], 16)
	copy(b[36:], "data")
	binary.LittleEndian.PutUint32(b[40:], uint32(data))
	for i, s := range p.Samples {
		binary.LittleEndian.PutUint16(b[44+2*i:], uint16(s))
	}
	return b
}
