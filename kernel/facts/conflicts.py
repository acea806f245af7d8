"""Which current decisions contradict a decision: found when a decision is ratified or imported,
and recorded, so that recall and the session-start block read them without looking again."""

from __future__ import annotations

from ctx_kernel.kernel import clock
from ctx_kernel.kernel.language import conflicts, entities
from ctx_kernel.kernel.language import query as fulltext
from ctx_kernel.kernel.language.query import TextQuery
from ctx_kernel.kernel.recall.entity_index import EntityIndex
from ctx_kernel.kernel.records import Decision, Proposal
from ctx_kernel.kernel.store.base import Store

# Decisions naming a decision's entities that are checked for an opposite stance.
CONFLICT_CANDIDATES = 20
# Related subjects: token_set_ratio of the subjects' words ("cache.sessions" ~ "auth.sessions").
SUBJECT_SIMILARITY = 75.0


class ConflictDetector:
    """Finds current decisions that contradict a decision; run when a decision is ratified."""

    def __init__(self, store: Store, entity_index: EntityIndex) -> None:
        self.store = store
        self.entity_index = entity_index
        self._subjects: dict[str, str] | None = None

    def find(self, decision: Decision) -> list[tuple[Decision, conflicts.Conflict]]:
        """Current decisions on other subjects that take the opposite stance to ``decision``."""
        chain = set(self.store.chain_ids(decision.id))
        text = f"{decision.decision}\n{decision.rationale or ''}"
        # Its own entities, and plain words that other records name as entities ("redis" vs `redis`).
        words = [w for w in fulltext.words(text) if len(w) >= 3 and w not in fulltext.STOPWORDS]
        named = dict.fromkeys([*entities.extract(text), *self.entity_index.known(self.store, words)])
        names = [n for n in named if len(entities.normalise(n)) >= 3][:16]
        # Decisions naming the same entities...
        candidates: dict[str, bool] = {}
        phrases = [entities.normalise(n) for n in names]
        if phrases:
            named_query = TextQuery(tuple(dict.fromkeys(phrases)))
            for other_id, _ in self.store.fts_decision_ids(
                named_query, CONFLICT_CANDIDATES, current_only=True
            ):
                candidates[other_id] = False
        # ...and decisions on fuzzy-similar subjects, compared on their shared content words.
        candidates.update(
            dict.fromkeys(self.store.current_ids(self._similar_subjects(decision.subject)), True)
        )
        for excluded in (decision.id, *chain):
            candidates.pop(excluded, None)
        others = self.store.decisions_by_ids(sorted(candidates))
        out: list[tuple[Decision, conflicts.Conflict]] = []
        mine = conflicts.content_words(text)
        for other_id in sorted(candidates):
            other = others.get(other_id)
            if other is None or other.subject == decision.subject or not other.current:
                continue
            other_text = f"{other.decision}\n{other.rationale or ''}"
            haystack = f" {entities.normalise(other_text)} "
            terms = {n for n, p in zip(names, phrases, strict=True) if f" {p} " in haystack}
            if candidates[other_id]:
                terms |= mine & conflicts.content_words(other_text)
            found = conflicts.find_conflict(text, other_text, terms)
            if found is None:
                continue
            out.append((other, found))
        return out

    def _similar_subjects(self, subject: str) -> list[str]:
        from rapidfuzz import fuzz, process  # noqa: PLC0415

        if self._subjects is None:
            self._subjects = {s: entities.normalise(s) for s in self.store.current_subjects()}
        leaf = subject.rsplit(".", 1)[-1]
        similar = {s for s in self._subjects if s.rsplit(".", 1)[-1] == leaf}
        similar.update(
            s
            for s, _, _ in process.extract(
                entities.normalise(subject),
                self._subjects,
                scorer=fuzz.token_set_ratio,
                score_cutoff=SUBJECT_SIMILARITY,
                limit=20,
            )
        )
        similar.discard(subject)
        return sorted(similar)


def as_decision(proposal: Proposal) -> Decision:
    """The decision a proposal would become, for conflict checks before it is ratified."""
    return Decision(
        id=proposal.id,
        subject=proposal.subject,
        decision=proposal.decision,
        rationale=proposal.rationale,
        valid_from=clock.now(),
        valid_until=None,
        ratified_by="",
        ratified_at="",
        proposal_id=proposal.id,
        amended=False,
        closed_by=None,
        close_reason=None,
    )
