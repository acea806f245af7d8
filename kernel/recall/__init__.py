"""Finding decisions and evidence: keyword, entity and vector rankers, their fusion, contradictions,
and the inject block; ``service`` holds what recalling needs between calls (the embedding model,
vectors, the entity index, a worker thread).
"""
