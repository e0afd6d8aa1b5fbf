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

// Gateway is the client of a payment gateway's HTTP API, the kind of
// effect dedupd exists for: Charge is not idempotent (every call charges
// again) and cannot be fenced by a token, but the gateway offers a lookup
// of the charge made for an event id, which is what Settle asks.
type Gateway struct {
	BaseURL string
	HTTP    *http.Client
}

// chargeBody is both the request of POST /charges and, with ChargeID
// set, the answer of POST and GET.
type chargeBody struct {
	EventID  string `json:"event_id"`
	Amount   int64  `json:"amount,omitempty"`
	ChargeID string `json:"charge_id,omitempty"`
}

// Charge charges amount for an event and returns the charge id.
func (g *Gateway) Charge(ctx context.Context, eventID string, amount int64) (string, error) {
	body, err := json.Marshal(chargeBody{EventID: eventID, Amount: amount})
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.BaseURL+"/charges", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	got, found, err := g.do(req)
	if err == nil && !found {
		err = fmt.Errorf("gateway: charge of %s refused", eventID)
	}
	return got, err
}

// Lookup returns the charge made for an event, if any.
func (g *Gateway) Lookup(ctx context.Context, eventID string) (chargeID string, found bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		g.BaseURL+"/charges?event_id="+url.QueryEscape(eventID), http.NoBody)
	if err != nil {
		return "", false, err
	}
	return g.do(req)
}

// do sends req and reads a chargeBody; 404 is "no such charge".
func (g *Gateway) do(req *http.Request) (string, bool, error) {
	resp, err := g.HTTP.Do(req)
	if err != nil {
		return "", false, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return "", false, nil
	case resp.StatusCode/100 != 2:
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
		return "", false, fmt.Errorf("gateway: %s %s: %s: %s", req.Method, req.URL.Path, resp.Status, msg)
	}
	var got chargeBody
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&got); err != nil {
		return "", false, fmt.Errorf("gateway: %s %s: %w", req.Method, req.URL.Path, err)
	}
	return got.ChargeID, true, nil
}
