"""Finding decisions and evidence: keyword, entity and vector rankers, their fusion, contradictions,
and the inject block.
"""
