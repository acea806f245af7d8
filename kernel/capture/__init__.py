"""Evidence arriving from outside: JSON input, bulk records, agents' transcripts, and secret redaction."""
