"""Everyday words for software things, mapped to the short forms subjects and code use.

Decisions are filed under terse subjects (``db.driver``, ``auth.tokens``, ``ci.cache``) while
people ask in plain words ("database", "keep users signed in"). Before the keyword and
entity rankers look at decisions, a query gains the short forms of the words and phrases
it uses; its own words stay, so nothing it matched before is lost. The list is general
software vocabulary, one direction only (plain word to abbreviation): expanding an
abbreviation into every word it might stand for would add more noise than matches.
"""

from __future__ import annotations

import re

# phrase (lower case, single spaces) -> short forms added to the query
SHORT_FORMS: dict[str, tuple[str, ...]] = {
    # data
    "database": ("db",),
    "data base": ("db",),
    "datastore": ("db",),
    "postgres": ("postgresql", "db"),
    "postgresql": ("db",),
    "mysql": ("db",),
    "sqlite": ("db",),
    "sql": ("db",),
    "schema migration": ("migrations", "db"),
    # identity
    "authentication": ("auth",),
    "authenticate": ("auth",),
    "authenticated": ("auth",),
    "authorization": ("authz", "auth"),
    "authorisation": ("authz", "auth"),
    "permission": ("authz",),
    "login": ("auth",),
    "logins": ("auth",),
    "log in": ("auth",),
    "logged in": ("auth",),
    "logging in": ("auth",),
    "log out": ("auth",),
    "logout": ("auth",),
    "sign in": ("auth",),
    "signed in": ("auth",),
    "signing in": ("auth",),
    "signin": ("auth",),
    "sign-in": ("auth",),
    "log-in": ("auth",),
    "sign out": ("auth",),
    "signed out": ("auth",),
    "single sign on": ("sso", "auth"),
    "password": ("auth",),
    "session token": ("auth", "tokens"),
    "access token": ("auth", "tokens"),
    # delivery and operations
    "continuous integration": ("ci",),
    "continuous delivery": ("cd",),
    "continuous deployment": ("cd",),
    "pipeline": ("ci",),
    "deployment": ("deploy",),
    "infrastructure": ("infra",),
    "kubernetes": ("k8s",),
    "environment": ("env",),
    "environment variable": ("env",),
    "configuration": ("config",),
    "settings": ("config",),
    "observability": ("o11y", "monitoring"),
    "message queue": ("mq", "queue"),
    # code
    "repository": ("repo",),
    "dependency": ("deps",),
    "dependencies": ("deps",),
    "package": ("pkg",),
    "library": ("lib",),
    "application": ("app",),
    "documentation": ("docs",),
    "specification": ("spec",),
    "directory": ("dir",),
    "javascript": ("js",),
    "typescript": ("ts",),
    "user interface": ("ui", "frontend"),
    "front end": ("frontend",),
    "front-end": ("frontend",),
    "back end": ("backend",),
    "back-end": ("backend",),
    "web server": ("http",),
    "rest api": ("api",),
    "endpoint": ("api",),
    "error handling": ("errors",),
    "exception": ("errors",),
    "administrator": ("admin",),
    "internationalization": ("i18n",),
    "internationalisation": ("i18n",),
    "localization": ("l10n",),
    "localisation": ("l10n",),
    "accessibility": ("a11y",),
    "performance": ("perf",),
}
_LONGEST = max(len(phrase.split()) for phrase in SHORT_FORMS)
_WORD = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def short_forms(query: str) -> list[str]:
    """The short forms of the words and phrases in ``query`` that it does not already hold."""
    words = _WORD.findall(query.lower())
    found: dict[str, None] = {}
    for start in range(len(words)):
        for size in range(1, _LONGEST + 1):
            phrase = " ".join(words[start : start + size])
            forms = SHORT_FORMS.get(phrase)
            if forms is None and size == 1 and phrase.endswith("s"):
                forms = SHORT_FORMS.get(phrase[:-1])  # a plain plural: "databases"
            found.update(dict.fromkeys(forms or ()))
    have = set(words)
    return [form for form in found if form not in have]


def expand(query: str) -> str:
    """``query`` followed by the short forms of what it says (unchanged when there are none)."""
    extra = short_forms(query)
    return f"{query} {' '.join(extra)}" if extra else query
