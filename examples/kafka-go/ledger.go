package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// Ledger is the client of an accounting ledger's HTTP API: the effect this
// consumer exists for. Post is not idempotent (every call books another
// entry) and cannot be fenced by a token, but the ledger can look up the
// entry booked for an event id, which is what Settle asks.
type Ledger struct {
	BaseURL string
	HTTP    *http.Client
}

// entryBody is the request of POST /entries and, with EntryID set, the
// answer of POST and GET.
type entryBody struct {
	EventID string `json:"event_id"`
	Account string `json:"account,omitempty"`
	Amount  int64  `json:"amount,omitempty"`
	EntryID string `json:"entry_id,omitempty"`
}

// Post books an entry for an event and returns the entry id.
func (l *Ledger) Post(ctx context.Context, ev Event) (string, error) {
	body, err := json.Marshal(entryBody{EventID: ev.ID, Account: ev.Account, Amount: ev.Amount})
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.BaseURL+"/entries", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	id, found, err := l.do(req)
	if err == nil && !found {
		err = fmt.Errorf("ledger: entry for %s refused", ev.ID)
	}
	return id, err
}

// Lookup returns the entry booked for an event, if any.
func (l *Ledger) Lookup(ctx context.Context, eventID string) (entryID string, found bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		l.BaseURL+"/entries?event_id="+url.QueryEscape(eventID), http.NoBody)
	if err != nil {
		return "", false, err
	}
	return l.do(req)
}

// do sends req and reads an entryBody; 404 is "no such entry".
func (l *Ledger) do(req *http.Request) (string, bool, error) {
	resp, err := l.HTTP.Do(req)
	if err != nil {
		return "", false, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return "", false, nil
	case resp.StatusCode/100 != 2:
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
		return "", false, fmt.Errorf("ledger: %s %s: %s: %s", req.Method, req.URL.Path, resp.Status, msg)
	}
	var got entryBody
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&got); err != nil {
		return "", false, fmt.Errorf("ledger: %s %s: %w", req.Method, req.URL.Path, err)
	}
	return got.EntryID, true, nil
}
