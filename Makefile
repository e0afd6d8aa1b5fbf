BUF := go run github.com/bufbuild/buf/cmd/buf@v1.75.0

.PHONY: build test generate lint fmt-check alerts-check ci

build:
	go build -o bin/ ./cmd/...

test:
	go test -race -count=1 ./...

generate:
	$(BUF) generate

lint:
	gofmt -l $$(git ls-files '*.go')
	go vet ./...
	$(BUF) lint

# The Prometheus rules: valid, and their unit tests pass (promtool ships in
# Debian's prometheus package).
alerts-check:
	promtool check rules deploy/prometheus/dedupd-rules.yml
	cd deploy/prometheus && promtool test rules dedupd-rules.test.yml

# fmt-check fails (and names the files) when gofmt would change any.
fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

ci:
	bash .ci/run
