"""Thin hosts over the facade (CLI, MCP); the core modules of ``kernel`` never import these."""
