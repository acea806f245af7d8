"""``ctx setup``: an agent's MCP server, hooks and instructions written into a project's files.

``agents`` says what each agent gets and plans the changes, ``documents`` edits inside JSON, TOML
and Markdown files, ``files`` finds, reads, diffs and writes them. Nothing here imports click.
"""

# The agents ``agents.AGENTS`` knows, here so the CLI offers them without loading the TOML and
# JSON editors on every command (a test keeps the two equal).
AGENT_NAMES = ("claude-code", "codex")
