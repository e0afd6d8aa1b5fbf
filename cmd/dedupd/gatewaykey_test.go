package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// webhookDelivery is one HTTP delivery of an event as its provider sends
// it: the headers (signatures and timestamps change on a redelivery, the
// event id does not) and the JSON body.
type webhookDelivery struct {
	headers map[string]string
	body    string
}

// webhookCase is a preset with a first delivery, a redelivery of the same
// event, and a delivery that lacks the provider's id.
type webhookCase struct {
	args                    []string
	first, redelivery, noID webhookDelivery
}

var webhookCases = map[string]webhookCase{
	"standard": {
		args: []string{"--webhooks", "standard"},
		first: webhookDelivery{map[string]string{"webhook-id": "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", "webhook-timestamp": "1674087231",
			"webhook-signature": "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4="}, standardBody},
		redelivery: webhookDelivery{map[string]string{"webhook-id": "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", "webhook-timestamp": "1674087291",
			"webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="}, standardBody},
		noID: webhookDelivery{map[string]string{"webhook-timestamp": "1674087231",
			"webhook-signature": "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4="}, standardBody},
	},
	"github": {
		args:       []string{"--webhooks", "github"},
		first:      webhookDelivery{githubHeaders("72d3162e-cc78-11e3-81ab-4c9367dc0958"), githubBody},
		redelivery: webhookDelivery{githubHeaders("72d3162e-cc78-11e3-81ab-4c9367dc0958"), githubBody},
		noID:       webhookDelivery{githubHeaders(""), githubBody},
	},
	"shopify": {
		args:       []string{"--webhooks", "shopify"},
		first:      webhookDelivery{shopifyHeaders("98880550-7158-44d4-b7cd-2c97c8a091b5", "2024-03-08T19:22:02.374Z"), shopifyBody},
		redelivery: webhookDelivery{shopifyHeaders("98880550-7158-44d4-b7cd-2c97c8a091b5", "2024-03-08T19:27:05.118Z"), shopifyBody},
		noID:       webhookDelivery{shopifyHeaders("", "2024-03-08T19:22:02.374Z"), shopifyBody},
	},
	"svix": {
		args: []string{"--webhooks", "svix"},
		first: webhookDelivery{map[string]string{"svix-id": "msg_p5jXN8AQM9LWM0D4loKWxJek", "svix-timestamp": "1614265330",
			"svix-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="}, standardBody},
		redelivery: webhookDelivery{map[string]string{"svix-id": "msg_p5jXN8AQM9LWM0D4loKWxJek", "svix-timestamp": "1614265335",
			"svix-signature": "v1,bm9ldGFzaWduYXR1cmVidXRzaGFwZWRsaWtlb25lAA="}, standardBody},
		noID: webhookDelivery{map[string]string{"svix-timestamp": "1614265330",
			"svix-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="}, standardBody},
	},
	"stripe": {
		args:       []string{"--webhooks", "stripe"},
		first:      webhookDelivery{map[string]string{"Stripe-Signature": "t=1686089970,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd"}, stripeBody("evt_1NG8Du2eZvKYlo2CUI79vXWy")},
		redelivery: webhookDelivery{map[string]string{"Stripe-Signature": "t=1686090270,v1=0b3a3c5e3b1ef1c0f9a84e0c9d2f31c0e8f7fbd8b6b9f0e4d1f7c3f0a9d2e1b7"}, stripeBody("evt_1NG8Du2eZvKYlo2CUI79vXWy")},
		noID:       webhookDelivery{map[string]string{"Stripe-Signature": "t=1686089970,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd"}, stripeBody("")},
	},
	"key-from json nested": {
		args:       []string{"--key-from", "json:/data/object/id"},
		first:      webhookDelivery{nil, stripeBody("evt_1")},
		redelivery: webhookDelivery{nil, stripeBody("evt_1")},
		noID:       webhookDelivery{nil, `{"data":{"object":{"amount":2000}}}`},
	},
}

const standardBody = `{"type":"contact.created","timestamp":"2022-11-03T20:26:10.344522Z","data":{"id":"1f81eb52-5198-4599-803e-771906343485","type":"contact"}}`

const githubBody = `{"action":"opened","issue":{"number":1347,"title":"Found a bug","state":"open"},"repository":{"id":1296269,"full_name":"octocat/Hello-World"},"sender":{"login":"octocat","id":1}}`

const shopifyBody = `{"id":820982911946154508,"email":"jon@example.com","total_price":"403.00","currency":"USD","line_items":[{"id":866550311766439020,"quantity":1}]}`

func githubHeaders(delivery string) map[string]string {
	h := map[string]string{"X-GitHub-Event": "issues", "X-GitHub-Hook-ID": "292430182", "User-Agent": "GitHub-Hookshot/044aadd",
		"X-Hub-Signature-256": "sha256=d57c68ca6f92289e6987922ff26938930f6e66a2d161ef06abdf1859230aa23c"}
	if delivery != "" {
		h["X-GitHub-Delivery"] = delivery
	}
	return h
}

func shopifyHeaders(event, triggeredAt string) map[string]string {
	h := map[string]string{"X-Shopify-Topic": "orders/create", "X-Shopify-Shop-Domain": "example.myshopify.com",
		"X-Shopify-Hmac-Sha256": "XWmrwMey6OsLMeiZKwP4FppHH3cmAiiJJAweH5Jo4bM=", "X-Shopify-API-Version": "2024-01",
		"X-Shopify-Webhook-Id": "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043", "X-Shopify-Triggered-At": triggeredAt}
	if event != "" {
		h["X-Shopify-Event-Id"] = event
	}
	return h
}

// stripeBody is a Stripe event; an empty id leaves the field out.
func stripeBody(id string) string {
	event := map[string]any{"object": "event", "api_version": "2022-11-15", "created": 1686089970, "livemode": false,
		"pending_webhooks": 1, "type": "payment_intent.succeeded", "request": map[string]any{"id": nil, "idempotency_key": nil},
		"data": map[string]any{"object": map[string]any{"id": "pi_3NG8Du2eZvKYlo2C0", "object": "payment_intent", "amount": 2000}}}
	if id != "" {
		event["id"] = id
		event["data"].(map[string]any)["object"].(map[string]any)["id"] = id
	}
	b, _ := json.Marshal(event)
	return string(b)
}

func deliver(t *testing.T, url string, d webhookDelivery) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/webhooks", strings.NewReader(d.body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range d.headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// TestGatewayWebhooks: per provider, the first delivery reaches the
// upstream, a redelivery (new signature and timestamp, same event id)
// gets the stored response without reaching it, and a delivery without
// the provider's id gets a 400 problem without reaching it.
func TestGatewayWebhooks(t *testing.T) {
	server := startDedupd(t, "--data-dir", t.TempDir(), "--max-result-bytes", fmt.Sprint(2<<20)).Addr
	for name, tc := range webhookCases {
		t.Run(name, func(t *testing.T) {
			var hits atomic.Int64
			upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.ReadAll(r.Body)
				fmt.Fprintf(w, "received %d", hits.Add(1))
			})
			url := startGateway(t, server, upstream, tc.args...)
			if code, body, _ := deliver(t, url, tc.first); code != http.StatusOK || body != "received 1" || hits.Load() != 1 {
				t.Fatalf("first delivery: %d %q, %d upstream hits; want 200 \"received 1\", 1 hit", code, body, hits.Load())
			}
			code, body, h := deliver(t, url, tc.redelivery)
			if code != http.StatusOK || body != "received 1" || h.Get("Idempotent-Replayed") != "true" || hits.Load() != 1 {
				t.Fatalf("redelivery: %d %q replayed=%q, %d upstream hits; want the stored 200 \"received 1\", still 1 hit",
					code, body, h.Get("Idempotent-Replayed"), hits.Load())
			}
			code, body, h = deliver(t, url, tc.noID)
			if code != http.StatusBadRequest || !strings.HasPrefix(h.Get("Content-Type"), "application/problem+json") ||
				!strings.Contains(body, "key-missing") || hits.Load() != 1 {
				t.Fatalf("delivery without the id: %d %s %q, %d upstream hits; want a 400 key-missing problem, still 1 hit",
					code, h.Get("Content-Type"), body, hits.Load())
			}
		})
	}
}

// TestResolvePointer follows RFC 6901's section 5 examples (those that
// name a string or number) and misses.
func TestResolvePointer(t *testing.T) {
	const doc = `{"foo":["bar","baz"],"":0,"a/b":1,"c%d":2,"e^f":3,"g|h":4,"i\\j":5,"k\"l":6," ":7,"m~n":8,"o":{"p":null}}`
	cases := []struct {
		pointer string
		want    string
		found   bool
	}{
		{"json:/foo/0", "bar", true}, {"json:/foo/1", "baz", true}, {"json:/", "0", true}, {"json:/a~1b", "1", true},
		{"json:/c%d", "2", true}, {"json:/e^f", "3", true}, {"json:/g|h", "4", true}, {`json:/i\j`, "5", true},
		{`json:/k"l`, "6", true}, {"json:/ ", "7", true}, {"json:/m~0n", "8", true},
		{"json:/foo", "", false}, {"json:/foo/2", "", false}, {"json:/foo/01", "", false}, {"json:/foo/-", "", false},
		{"json:/o/p", "", false}, {"json:/o/p/q", "", false}, {"json:/nosuch", "", false},
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		src, err := parseKeySource(tc.pointer, "")
		if err != nil {
			t.Fatalf("%s: %v", tc.pointer, err)
		}
		if got, found := resolvePointer(v, src.pointer); got != tc.want || found != tc.found {
			t.Errorf("%s: %q %v, want %q %v", tc.pointer, got, found, tc.want, tc.found)
		}
	}
	for _, bad := range []string{"json:id", "header:", "query:id", "id"} {
		if _, err := parseKeySource(bad, ""); err == nil {
			t.Errorf("--key-from %q accepted", bad)
		}
	}
	if _, err := parseKeySource("", "mailchimp"); err == nil {
		t.Error("--webhooks mailchimp accepted")
	}
	if _, err := parseKeySource("json:/id", "github"); err == nil {
		t.Error("--webhooks with --key-from accepted")
	}
}
