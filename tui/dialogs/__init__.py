"""Modal dialogs that return typed results."""
