package tts

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermesd/hermesd/audio"
	"github.com/hermesd/hermesd/audio/audiotest"
)

// benchText is a 30-word sentence, ~11 s of espeak-ng speech (the clip
// notes/audio.md measured).
const benchText = "The quick brown fox jumps over the lazy dog while the weather report " +
	"says that heavy rain is coming tomorrow afternoon, so please remember to bring " +
	"an umbrella and a warm coat before you leave."

// cpuClock measures this process's CPU time plus that of its finished child
// processes (espeak-ng, lame, opusenc): on a shared machine CPU time, not
// wall time, says how many clips one core can encode per second.
type cpuClock struct{ start time.Duration }

func cpuNow() time.Duration {
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
}

func startCPU() cpuClock { return cpuClock{cpuNow()} }

// allocCounter reports heap allocations during the timed loop.
type allocCounter struct{ mallocs, bytes uint64 }

func startAllocs() allocCounter {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return allocCounter{m.Mallocs, m.TotalAlloc}
}

func (a allocCounter) since() (mallocs, bytes uint64) {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.Mallocs - a.mallocs, m.TotalAlloc - a.bytes
}

// reportSpeed reports audio seconds processed per second of wall time and
// per CPU-second (the "per core" figure), and allocations per audio second.
func reportSpeed(b *testing.B, length time.Duration, cpu cpuClock, allocs allocCounter) {
	b.Helper()
	total := length.Seconds() * float64(b.N)
	b.ReportMetric(total/b.Elapsed().Seconds(), "xRT-wall")
	if used := (cpuNow() - cpu.start).Seconds(); used > 0 {
		b.ReportMetric(total/used, "xRT/core")
	}
	m, by := allocs.since()
	b.ReportMetric(float64(m)/total, "allocs/audio-s")
	b.ReportMetric(float64(by)/total/1024, "KiB/audio-s")
}

// benchClip returns espeak speech cut to d (or all of it for d = 0).
func benchClip(b *testing.B, d time.Duration) audio.PCM {
	b.Helper()
	p := audiotest.EspeakPCM(b, benchText)
	if d > 0 {
		n := int(d * time.Duration(p.Rate) / time.Second)
		if n > len(p.Samples) {
			b.Fatalf("speech is only %v", p.Duration())
		}
		p.Samples = p.Samples[:n]
	}
	return p
}

// BenchmarkPipeline is the offline voice-note path end to end: espeak-ng
// subprocess → WAV parse → resample to 24 kHz → gopus → Ogg.
func BenchmarkPipeline(b *testing.B) {
	audiotest.NeedTool(b, "espeak-ng", "espeak-ng")
	e := &Espeak{}
	clip, err := e.Synthesize(context.Background(), benchText, "", 0)
	if err != nil {
		b.Fatal(err)
	}
	length := clip.PCM.Duration()
	cpu, allocs := startCPU(), startAllocs()
	for b.Loop() {
		c, err := e.Synthesize(context.Background(), benchText, "", 0)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := audio.EncodeOggOpus(context.Background(), c.PCM, audio.OpusOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	reportSpeed(b, length, cpu, allocs)
}

// payloadOf sums the Opus packet bytes of an Ogg/Opus file.
func payloadOf(b *testing.B, ogg []byte) int {
	b.Helper()
	s, err := audio.ParseOggOpus(ogg)
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, p := range s.Packets {
		n += len(p)
	}
	return n
}

// BenchmarkEncodeOpus is resample + gopus + Ogg mux on PCM in memory, with
// the container overhead relative to the Opus payload.
func BenchmarkEncodeOpus(b *testing.B) {
	for _, d := range []time.Duration{5 * time.Second, 0} {
		pcm := benchClip(b, d)
		name := fmt.Sprintf("dur=%.0fs", pcm.Duration().Seconds())
		for _, cx := range []int{audio.DefaultOpusComplexity, 10} {
			sub := name
			if cx != audio.DefaultOpusComplexity {
				sub = fmt.Sprintf("%s/cx=%d", name, cx)
			}
			b.Run(sub, func(b *testing.B) {
				opt := audio.OpusOptions{Complexity: cx}
				var ogg []byte
				cpu, allocs := startCPU(), startAllocs()
				for b.Loop() {
					var err error
					if ogg, err = audio.EncodeOggOpus(context.Background(), pcm, opt); err != nil {
						b.Fatal(err)
					}
				}
				reportSpeed(b, pcm.Duration(), cpu, allocs)
				payload := payloadOf(b, ogg)
				b.ReportMetric(100*float64(len(ogg)-payload)/float64(payload), "overhead-%")
				b.ReportMetric(float64(payload)*8/pcm.Duration().Seconds()/1000, "payload-kbit/s")
			})
		}
	}
}

// BenchmarkOggMux is the muxer alone on real packets: its cost and the
// container overhead as a percentage of the Opus payload (goal ≤ 3%).
func BenchmarkOggMux(b *testing.B) {
	pcm := benchClip(b, 5*time.Second)
	ogg, err := audio.EncodeOggOpus(context.Background(), pcm, audio.OpusOptions{})
	if err != nil {
		b.Fatal(err)
	}
	s, err := audio.ParseOggOpus(ogg)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("dur=5s", func(b *testing.B) {
		var out bytes.Buffer
		payload := 0
		for _, p := range s.Packets {
			payload += len(p)
		}
		for b.Loop() {
			out.Reset()
			m, err := audio.NewOggOpusMuxer(&out, s.Head, audio.OpusTags{Vendor: "hermesd"}, 1, 0)
			if err != nil {
				b.Fatal(err)
			}
			for _, p := range s.Packets {
				if err := m.WritePacket(p, 960); err != nil {
					b.Fatal(err)
				}
			}
			if err := m.Close(s.FinalGranule); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(100*float64(out.Len()-payload)/float64(payload), "overhead-%")
	})
}

// BenchmarkOpusenc runs opus-tools' opusenc (libopus, C) on the same WAV
// input as BenchmarkEncodeOpus, process start included, as the yardstick.
func BenchmarkOpusenc(b *testing.B) {
	audiotest.NeedTool(b, "opusenc", "opus-tools")
	dir := b.TempDir()
	for _, d := range []time.Duration{5 * time.Second, 0} {
		pcm := benchClip(b, d)
		in := filepath.Join(dir, fmt.Sprintf("in-%d.wav", d))
		if err := os.WriteFile(in, audio.EncodeWAV(pcm), 0o644); err != nil {
			b.Fatal(err)
		}
		out := filepath.Join(dir, "out.opus")
		b.Run(fmt.Sprintf("dur=%.0fs", pcm.Duration().Seconds()), func(b *testing.B) {
			cpu, allocs := startCPU(), startAllocs()
			for b.Loop() {
				if msg, err := exec.Command("opusenc", "--quiet", "--bitrate", "32", in, out).CombinedOutput(); err != nil {
					b.Fatalf("opusenc: %v: %s", err, strings.TrimSpace(string(msg)))
				}
			}
			reportSpeed(b, pcm.Duration(), cpu, allocs)
			ogg, err := os.ReadFile(out)
			if err != nil {
				b.Fatal(err)
			}
			payload := payloadOf(b, ogg)
			b.ReportMetric(100*float64(len(ogg)-payload)/float64(payload), "overhead-%")
			b.ReportMetric(float64(payload)*8/pcm.Duration().Seconds()/1000, "payload-kbit/s")
		})
	}
}

// BenchmarkEncodeMP3 is the web-chat path: lame subprocess on PCM in memory.
func BenchmarkEncodeMP3(b *testing.B) {
	audiotest.NeedTool(b, "lame", "lame")
	pcm := benchClip(b, 5*time.Second)
	b.Run("dur=5s", func(b *testing.B) {
		cpu, allocs := startCPU(), startAllocs()
		for b.Loop() {
			if _, err := audio.EncodeMP3(context.Background(), pcm); err != nil {
				b.Fatal(err)
			}
		}
		reportSpeed(b, pcm.Duration(), cpu, allocs)
	})
}

// BenchmarkResample is the 22.05 → 24 kHz step alone.
func BenchmarkResample(b *testing.B) {
	pcm := benchClip(b, 5*time.Second)
	b.Run("dur=5s", func(b *testing.B) {
		cpu, allocs := startCPU(), startAllocs()
		for b.Loop() {
			if _, err := audio.Resample(pcm, 24000); err != nil {
				b.Fatal(err)
			}
		}
		reportSpeed(b, pcm.Duration(), cpu, allocs)
	})
}
