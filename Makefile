BUF := go run github.com/bufbuild/buf/cmd/buf@v1.75.0

.PHONY: build test generate lint ci

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

ci:
	bash .ci/run
