"""Storage backends behind the kernel facade; all SQL lives here."""
