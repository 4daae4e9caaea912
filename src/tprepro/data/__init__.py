"""Data: parquet shards and manifests, vocabularies, batching and packing, prefetching."""
