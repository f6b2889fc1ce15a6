"""The transaction coordinator and the producer state of partitions (KIP-98, KIP-447, KIP-890)."""
