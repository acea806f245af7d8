"""The audit trail: the hash chain, signed heads, replay against the tables, signed exports and
their verification.
"""
