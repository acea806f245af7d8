"""Reusable widgets of the review app."""
