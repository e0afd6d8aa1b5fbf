BUF := go run github.com/bufbuild/buf/cmd/buf@v1.75.0

.PHONY: build test generate lint fmt-check ci

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

# fmt-check fails (and names the files) when gofmt would change any.
fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

ci:
	bash .ci/run
