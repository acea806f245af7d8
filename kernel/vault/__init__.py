"""The evidence vault: append-only raw text (``service``, its one writer), and its encryption at
rest (``encryption`` seals and rekeys, ``sealing`` holds the cipher and the keys).
"""
