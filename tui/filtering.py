"""The queue's search box: ``subject:``, ``by:`` and fuzzy words (no Textual here)."""

from __future__ import annotations

from dataclasses import dataclass

from rapidfuzz import fuzz, utils

from ctx_kernel.kernel.facade import QueueEntry

# partial_ratio of a word against "subject proposer decision": 75 tolerates a typo or two.
FUZZY_CUTOFF = 75.0


@dataclass(frozen=True)
class Filter:
    """A parsed search: subject prefix, proposer, and free words matched fuzzily."""

    subject: str | None = None
    proposer: str | None = None
    words: tuple[str, ...] = ()

    @classmethod
    def parse(cls, query: str) -> Filter:
        """``subject:auth by:claude refresh tokn`` → subject prefix, proposer and fuzzy words."""
        subject = proposer = None
        words = []
        for token in query.split():
            key, sep, value = token.partition(":")
            if sep and key.lower() in ("subject", "s") and value:
                subject = value.lower()
            elif sep and key.lower() in ("by", "proposer", "p") and value:
                proposer = value.lower()
            else:
                words.append(token)
        return cls(subject, proposer, tuple(words))

    def __bool__(self) -> bool:
        return bool(self.subject or self.proposer or self.words)

    def matches(self, entry: QueueEntry) -> bool:
        """True when the entry passes every part of the filter."""
        proposal = entry.proposal
        if self.subject and not (
            proposal.subject == self.subject or proposal.subject.startswith(self.subject)
        ):
            return False
        if self.proposer and self.proposer not in proposal.proposer.lower():
            return False
        if not self.words:
            return True
        haystack = utils.default_process(f"{proposal.subject} {proposal.proposer} {proposal.decision}")
        return all(
            fuzz.partial_ratio(utils.default_process(word), haystack) >= FUZZY_CUTOFF for word in self.words
        )


def apply(entries: list[QueueEntry], query: str) -> list[QueueEntry]:
    """The entries that match ``query`` (all of them for an empty query)."""
    parsed = Filter.parse(query)
    if not parsed:
        return entries
    return [e for e in entries if parsed.matches(e)]
