"""The decision kernel and the proposal queue: what a person's act changes, planned before it is
carried out.

``queue`` takes proposals and closes them unratified; ``review`` works out what ratifying one
would change (the plan a reviewer sees); ``kernel`` carries the plan out and is the one path that
writes a decision, ratified or imported.
"""
