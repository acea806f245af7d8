"""The audit trail: the hash chain, signed heads, replay against the tables, signed exports and
their verification; ``service`` runs them over a store.
"""
