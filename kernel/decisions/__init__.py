"""The decision kernel and the proposal queue: what a person's act changes, planned before it is
carried out.
"""
