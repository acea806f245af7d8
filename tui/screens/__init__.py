"""The review app's screens."""
