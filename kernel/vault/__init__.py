"""The evidence vault: append-only raw text, and its encryption at rest."""
