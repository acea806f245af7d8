"""The statements behind the short lists a shell's Tab press reads: a store's subjects and its
pending proposals. The stores and the SQLite peek run the same text; this module imports nothing."""

KNOWN_SUBJECTS = "SELECT subject FROM decision UNION SELECT subject FROM proposal WHERE status = 'pending'"
PENDING_TEXTS = "SELECT id, subject, decision FROM proposal WHERE status = 'pending'"
