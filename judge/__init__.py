"""Judge stage (placeholder, filled below)."""
