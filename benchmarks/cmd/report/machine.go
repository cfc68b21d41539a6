package main

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

type machine struct {
	nproc, cpu, goVersion, kernel, load string
}

func machineInfo() machine {
	m := machine{goVersion: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH}
	if out, err := exec.Command("nproc").Output(); err == nil {
		m.nproc = strings.TrimSpace(string(out))
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		s := bufio.NewScanner(f)
		for s.Scan() {
			if k, v, ok := strings.Cut(s.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.cpu = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.load = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	return m
}
