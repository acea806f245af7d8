"""A shared team store on PostgreSQL: its schema, the roles that keep ratification human, the backend.

:mod:`.schema` holds the tables, indexes and invariant triggers (the same schema the SQLite
migrations produce at head, in PostgreSQL's native types), and :mod:`.roles` the group roles
``ctx_agent``, ``ctx_reviewer`` and ``ctx_auditor`` with their grants and row-level security
policies. :mod:`.store` is the backend (records, transactions, audit, meta; what differs from
SQLite and why), over :mod:`.index` (search and derived data); :mod:`.connection` connects and
names a store without its password and checks its schema; :mod:`.migrate` runs the Alembic
revisions of ``migrations/``. p001 runs ``schema.STATEMENTS`` and then ``roles.STATEMENTS``, p002
``roles.P002_STATEMENTS``, each revision in one transaction, as the role that is to own the
tables; that owner is the administrator, and every other login is a member of exactly one group
role.

The owner need not be a superuser: pg_trgm and btree_gist are trusted extensions, but pgvector
is not, so a superuser runs ``CREATE EXTENSION vector`` in the database first; and the group
roles are created only if missing, which needs CREATEROLE unless they already exist.
"""
