package server

import (
	"fmt"
	"os"
	"path/filepath"
)

// writeReadyFile tells scripts and tests that the server serves, and where:
// the gRPC address on the first line, then "metrics <address>" when
// /metrics is served and "http <address>" when the HTTP API is. The file is written beside its final name and renamed
// into place, so a reader never sees it half-written. An empty path writes
// nothing.
func writeReadyFile(path, addr, metricsAddr, httpAddr string) error {
	if path == "" {
		return nil
	}
	content := addr + "\n"
	if metricsAddr != "" {
		content += "metrics " + metricsAddr + "\n"
	}
	if httpAddr != "" {
		content += "http " + httpAddr + "\n"
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("--ready-file: %w", err)
	}
	_, err = tmp.WriteString(content)
	if closeErr := tmp.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("--ready-file: %w", err)
	}
	return nil
}
