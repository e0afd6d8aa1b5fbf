package main

import (
	"fmt"
	"io"
	"strings"
)

// progress reports a running count while it runs; the final count is the
// command's output, on stdout, so a progress report never repeats it.
type progress interface {
	update(done int64)
	// finish ends the report; it may be called more than once.
	finish()
}

// newProgress is a redrawn bar on a terminal, plain lines elsewhere. total
// is -1 when unknown.
func (a *app) newProgress(total int64) progress {
	if a.std.progressBar {
		return &barProgress{w: a.std.err, total: total}
	}
	return lineProgress{w: a.std.err}
}

// lineProgress prints "deleted N so far" per update, for logs and pipes.
type lineProgress struct{ w io.Writer }

func (p lineProgress) update(done int64) { fmt.Fprintf(p.w, "deleted %d so far\n", done) }
func (lineProgress) finish()             {}

// barProgress redraws one line: a bar when the total is known, a counter
// otherwise.
type barProgress struct {
	w        io.Writer
	total    int64
	drawn    bool
	finished bool
}

const barWidth = 30

func (p *barProgress) update(done int64) {
	p.drawn = true
	fmt.Fprint(p.w, "\r"+renderBar(done, p.total))
}

// eraseLine returns to the start of the line and clears it (ANSI EL).
const eraseLine = "\r\x1b[K"

// finish erases the line: what follows (the total, or an error) replaces it.
func (p *barProgress) finish() {
	if p.drawn && !p.finished {
		fmt.Fprint(p.w, eraseLine)
	}
	p.finished = true
}

// renderBar is the text of the progress line.
func renderBar(done, total int64) string {
	if total <= 0 {
		return fmt.Sprintf("deleted %d so far", done)
	}
	filled := int(min(done, total) * barWidth / total)
	return fmt.Sprintf("[%s%s] %d/%d deleted (%d%%)", strings.Repeat("#", filled),
		strings.Repeat(".", barWidth-filled), done, total, min(done, total)*100/total)
}
