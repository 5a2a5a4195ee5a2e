"""CLI command groups that belong to no single simulator layer."""
