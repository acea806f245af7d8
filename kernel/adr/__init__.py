"""Architecture Decision Records: reading and writing ADR files, importing them into the kernel,
and exporting the kernel as ADRs.
"""
