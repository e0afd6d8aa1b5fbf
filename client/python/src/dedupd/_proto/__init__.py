"""Generated protobuf and gRPC modules of dedup.v1 (see generate.sh)."""
