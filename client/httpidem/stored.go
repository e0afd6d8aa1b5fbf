package httpidem

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// A stored response is an HTTP/1.1 response message (status line, headers,
// Content-Length, body), so that `dedupctl records get` shows it as it
// will be replayed, and the standard library reads it back.

// hopByHop are the headers that describe one connection, not the response
// (RFC 9110 7.6.1), plus Date, which a replay sets afresh, and
// Content-Length, which the stored body decides.
var hopByHop = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Date", "Content-Length",
}

// storable is h without the hop-by-hop headers, those the Connection
// header names, and the ones the middleware itself sets on a replay.
func storable(h http.Header, own ...string) http.Header {
	out := h.Clone()
	for _, c := range h.Values("Connection") {
		for name := range strings.SplitSeq(c, ",") {
			out.Del(strings.TrimSpace(name))
		}
	}
	for _, name := range append(slices.Clone(hopByHop), own...) {
		out.Del(name)
	}
	// Trailers a handler declared after the body (http.TrailerPrefix) are
	// not part of the stored response.
	for name := range out {
		if strings.HasPrefix(name, http.TrailerPrefix) {
			delete(out, name)
		}
	}
	return out
}

// encodeResponse is the stored form of a response.
func encodeResponse(status int, h http.Header, body []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %03d %s\r\n", status, http.StatusText(status))
	names := make([]string, 0, len(h))
	for n := range h {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		for _, v := range h[n] {
			fmt.Fprintf(&b, "%s: %s\r\n", n, v)
		}
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", len(body))
	b.Write(body)
	return b.Bytes()
}

// storedResponse is a decoded stored response.
type storedResponse struct {
	status int
	header http.Header
	body   []byte
}

func decodeResponse(b []byte) (storedResponse, error) {
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(b)), nil)
	if err != nil {
		return storedResponse{}, fmt.Errorf("stored response: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return storedResponse{}, fmt.Errorf("stored response body: %w", err)
	}
	h := resp.Header
	h.Del("Content-Length")
	return storedResponse{status: resp.StatusCode, header: h, body: body}, nil
}

// write sends s to w with the extra headers.
func (s storedResponse) write(w http.ResponseWriter, extra http.Header) {
	h := w.Header()
	maps.Copy(h, s.header)
	maps.Copy(h, extra)
	h.Set("Content-Length", strconv.Itoa(len(s.body)))
	w.WriteHeader(s.status)
	_, _ = w.Write(s.body) // a client gone away is nothing to report
}
