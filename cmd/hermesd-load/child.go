package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"runtime/pprof"
	"slices"
	"sync"
	"time"
)

// botReport is what a bot reports when it stops.
type botReport struct {
	// PeakRSS is VmHWM of the bot's process, in bytes.
	PeakRSS int64 `json:"peak_rss"`
	// CPU is the process's user+system time during the load (set by the
	// parent; 0 in-process).
	CPU time.Duration `json:"-"`
	// InProcess says PeakRSS includes the driver and the fakes.
	InProcess bool `json:"-"`
	Warnings  int  `json:"warnings"`
	Errors    int  `json:"errors"`
	// LibWarnings and LibErrors are protoactor's own lines (see logCounter).
	LibWarnings int      `json:"lib_warnings,omitempty"`
	LibErrors   int      `json:"lib_errors,omitempty"`
	First       []string `json:"first,omitempty"`
	Err         string   `json:"err,omitempty"`
}

// botProc is a running bot, in this process or a child.
type botProc struct {
	exited <-chan struct{} // closed when the bot stopped on its own or was stopped
	once   sync.Once
	stopFn func() (botReport, error)
	rep    botReport
	err    error
	pid    int              // the child's process id (0 in this process)
	killFn func() botReport // SIGKILL and wait (nil in this process)
	// cpu is the child's user+system time so far (nil in this process).
	cpu func() time.Duration
}

// stop stops the bot (once) and returns its report.
func (b *botProc) stop() (botReport, error) {
	b.once.Do(func() { b.rep, b.err = b.stopFn() })
	return b.rep, b.err
}

// kill ends a child with SIGKILL, the way a machine or the OOM killer does:
// no shutdown, no report of its own. Its report then holds the peak RSS
// read just before and the CPU time the kernel counted; stop returns the
// same afterwards.
func (b *botProc) kill() botReport {
	b.once.Do(func() { b.rep = b.killFn() })
	return b.rep
}

// reportFD is the child's file descriptor for its report (ExtraFiles[0]).
const reportFD = 3

// childStopTimeout bounds a child's shutdown before it is killed.
const childStopTimeout = 45 * time.Second

// startBot starts the bot: in a child process (this binary with -child),
// or in this process with -inprocess.
func startBot(ctx context.Context, o options, spec botSpec, stderr io.Writer) (*botProc, error) {
	if o.inProcess {
		return startInProcess(ctx, spec)
	}
	return startChild(spec, stderr)
}

func startInProcess(ctx context.Context, spec botSpec) (*botProc, error) {
	counter := &logCounter{}
	log, done, err := botLogger(spec.logLevel, counter)
	if err != nil {
		return nil, err
	}
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	exited := make(chan struct{})
	var runErr error
	go func() {
		defer close(exited)
		runErr = runBot(bctx, spec, log)
	}()
	return &botProc{exited: exited, stopFn: func() (botReport, error) {
		cancel()
		<-exited
		done()
		rep := botReport{PeakRSS: peakRSS(), InProcess: true}
		rep.Warnings, rep.Errors, rep.First = counter.counts()
		rep.LibWarnings, rep.LibErrors = counter.library()
		if runErr != nil {
			rep.Err = runErr.Error()
		}
		return rep, runErr
	}}, nil
}

func startChild(spec botSpec, stderr io.Writer) (*botProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find this executable to run the bot in a child: %w", err)
	}
	pacing := "off"
	if spec.pacing {
		pacing = "on"
	}
	args := []string{"-child", "-platform", spec.platform, "-target", spec.target,
		"-api-url", spec.apiURL, "-token", spec.token, "-model-url", spec.modelURL,
		"-pacing", pacing, "-log-level", spec.logLevel}
	if spec.cpuProfile != "" {
		args = append(args, "-cpuprofile", spec.cpuProfile)
	}
	for _, k := range slices.Sorted(maps.Keys(spec.env)) {
		args = append(args, "-set", k+"="+spec.env[k])
	}
	// The child's temporary files (its HERMES_HOME, its log) go into a
	// directory of its own, removed once it exited: a child killed with
	// SIGKILL cannot clean up after itself.
	tmp, err := os.MkdirTemp("", "hermesd-load-child-")
	if err != nil {
		return nil, fmt.Errorf("the child's temporary directory: %w", err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("child stdin: %w", err)
	}
	rr, rw, err := os.Pipe()
	if err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("the child's report pipe: %w", err)
	}
	cmd.ExtraFiles = []*os.File{rw} // the child's reportFD
	// The child's stdout has only what libraries print (protoactor's
	// banner); its stderr has panics and the like.
	cmd.Stdout, cmd.Stderr = io.Discard, stderr
	if err := cmd.Start(); err != nil {
		rr.Close()
		rw.Close()
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("start the bot's process: %w", err)
	}
	rw.Close()
	var out bytes.Buffer
	read := make(chan struct{})
	go func() {
		defer close(read)
		_, _ = io.Copy(&out, rr)
		rr.Close()
	}()
	exited := make(chan struct{})
	var waitErr error
	go func() {
		defer close(exited)
		waitErr = cmd.Wait()
		<-read
		_ = os.RemoveAll(tmp)
	}()
	pid := cmd.Process.Pid
	return &botProc{exited: exited, pid: pid, cpu: func() time.Duration {
		select {
		case <-exited:
			return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		default:
			return procCPU(pid)
		}
	}, killFn: func() botReport {
		// VmHWM is gone with the process: read it first.
		rep := botReport{PeakRSS: procPeakRSS(cmd.Process.Pid), Err: "killed with SIGKILL"}
		_ = cmd.Process.Kill()
		<-exited
		_ = stdin.Close()
		return rep
	}, stopFn: func() (botReport, error) {
		_ = stdin.Close() // the child stops at EOF
		t := time.NewTimer(childStopTimeout)
		defer t.Stop()
		select {
		case <-exited:
		case <-t.C:
			_ = cmd.Process.Kill()
			<-exited
		}
		var rep botReport
		if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &rep); err != nil {
			return rep, fmt.Errorf("the bot's process (%v) reported nothing readable: %w", waitErr, err)
		}
		if waitErr != nil {
			return rep, fmt.Errorf("the bot's process: %w: %s", waitErr, rep.Err)
		}
		return rep, nil
	}}, nil
}

// runChild is the -child side: run the bot until stdin closes, then print
// its report as one JSON line.
func runChild(ctx context.Context, o options, stdin io.Reader, stdout io.Writer) (err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, stdin) // ends at EOF: the parent is done (or gone)
		cancel()
	}()
	if o.cpuProfile != "" {
		stop, err := startCPUProfile(o.cpuProfile)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, stop()) }()
	}
	counter := &logCounter{}
	log, done, err := botLogger(o.logLevel, counter)
	if err != nil {
		return err
	}
	spec := botSpec{platform: o.platform, target: o.target, apiURL: o.apiURL, token: o.token,
		modelURL: o.modelURL, pacing: o.pacing, logLevel: o.logLevel, env: o.env}
	runErr := runBot(ctx, spec, log)
	done()
	rep := botReport{PeakRSS: peakRSS()}
	rep.Warnings, rep.Errors, rep.First = counter.counts()
	rep.LibWarnings, rep.LibErrors = counter.library()
	if runErr != nil {
		rep.Err = runErr.Error()
	}
	if err := json.NewEncoder(stdout).Encode(rep); err != nil {
		return errors.Join(runErr, fmt.Errorf("write the report: %w", err))
	}
	return runErr
}

// startCPUProfile profiles this process into path until stop is called.
func startCPUProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create the CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("start the CPU profile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("write the CPU profile: %w", err)
		}
		return nil
	}, nil
}
