package testbed

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// process is one control-plane component started by this package. Its PID file holds
// "<pid> <binary>" so that StopDir ends only processes it started, even after a restart of
// the caller.
type process struct {
	name    string
	cmd     *exec.Cmd
	pidFile string
	logFile *os.File
}

func startProcess(dir, name, bin string, detach bool, args ...string) (*process, error) {
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "pids"), 0o755); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(filepath.Join(dir, "logs", name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s log: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if !detach {
		// A test binary that dies must not leave a control plane behind.
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, pidFile: filepath.Join(dir, "pids", name+".pid"), logFile: logf}
	if err := os.WriteFile(p.pidFile, fmt.Appendf(nil, "%d %s\n", cmd.Process.Pid, bin), 0o644); err != nil {
		p.stop()
		return nil, fmt.Errorf("write %s pid file: %w", name, err)
	}
	if !detach {
		go func() { _ = cmd.Wait() }()
	}
	return p, nil
}

// exited reports whether the process has already ended, with the tail of its log.
func (p *process) exited() error {
	if err := syscall.Kill(p.cmd.Process.Pid, 0); err == nil {
		if state, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid)); !strings.Contains(string(state), ") Z ") {
			return nil
		}
	}
	return fmt.Errorf("%s exited; last log lines:\n%s", p.name, tail(p.logFile.Name(), 15))
}

func (p *process) stop() {
	terminate(p.cmd.Process.Pid)
	p.release()
}

// release forgets an ended process: its PID file and log handle.
func (p *process) release() {
	_ = os.Remove(p.pidFile)
	_ = p.logFile.Close()
}

// terminate sends SIGTERM to every pid and SIGKILL to those still running five seconds later.
func terminate(pids ...int) {
	var live []int
	for _, pid := range pids {
		if syscall.Kill(pid, syscall.SIGTERM) == nil {
			live = append(live, pid)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(live) > 0 && time.Now().Before(deadline) {
		live = slices.DeleteFunc(live, func(pid int) bool { return !alive(pid) })
		time.Sleep(50 * time.Millisecond)
	}
	for _, pid := range live {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err == nil && !strings.Contains(string(stat), ") Z ")
}

// StopDir ends the processes whose PID files are under dir/pids, checking that each PID
// still runs the binary recorded for it, so a recycled PID is never signalled. All get
// SIGTERM at once; any still running after five seconds gets SIGKILL.
func StopDir(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "pids", "*.pid"))
	if err != nil {
		return err
	}
	var errs []error
	var pids []int
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fields := strings.Fields(string(data))
		if len(fields) != 2 {
			errs = append(errs, fmt.Errorf("malformed pid file %s", f))
			continue
		}
		pid, err := strconv.Atoi(fields[0])
		if err != nil {
			errs = append(errs, fmt.Errorf("malformed pid file %s: %w", f, err))
			continue
		}
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && exe == fields[1] {
			pids = append(pids, pid)
		}
		_ = os.Remove(f)
	}
	terminate(pids...)
	return errors.Join(errs...)
}

func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
