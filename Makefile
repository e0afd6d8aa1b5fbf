BUF := go run github.com/bufbuild/buf/cmd/buf@v1.75.0
# Not a tool in go.mod: its dependencies would drag ours along.
GOLANGCI_LINT := go run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0

.PHONY: build test generate lint fmt-check breaking alerts-check ci

# -buildvcs=true stamps the commit into --version and dedupd_build_info
# (this machine's GOFLAGS turn it off by default).
build:
	go build -buildvcs=true -o bin/ ./cmd/...

test:
	go test -race -count=1 ./...

generate:
	$(BUF) generate

# lint fails on any finding: gofmt, golangci-lint (.golangci.yaml, which
# includes go vet) and buf lint.
lint: fmt-check
	$(GOLANGCI_LINT) run ./...
	$(BUF) lint

# breaking fails when the API lost anything since the previous commit: it
# may only grow.
breaking:
	$(BUF) breaking --against '.git#ref=HEAD~1'

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
