"""The language pyright 1.1.414 writes its messages in, as it chooses it for one process.

Read in pyright's localize.ts (the bundled pyright-internal.js, `setLocaleOverride` and the
lookup beside it). pyright ships one string table per language, looked up by a lower-case key:
cs, de, en (the same table as en-us), es, fr, it, ja, ko, pl, pt-br, qps-ploc (a pseudo-locale),
ru, tr, zh-cn, zh-tw. It picks its locale name once per process:

- `locale` from `initialize`, when it is a non-empty string, lower-cased (`setLocaleOverride`);
- else, from its environment: the `locale` of `VSCODE_NLS_CONFIG` (JSON; "en-us" when it has
  none, the variables below when it does not parse or is null), else the first non-empty of
  `LC_ALL`, `LC_MESSAGES`, `LANG`, `LANGUAGE`, cut at its first "." and *not* lower-cased;
- else "en-us".

The name selects its own table, else the table of its part before the first "-", else none, and
every message missing from the chosen table (and every message, with none) is the English one.
So "de-DE" and "de-at" are German, "pt-BR" Brazilian Portuguese, but "pt", "zh" and "de_DE" (an
underscore, as in `LANG=de_DE.UTF-8`) are English; `LANG=de` is German, `LANG=DE` English.
Two names that select the same table give the same messages: they are one language, named here
by its table's key ("en" for English, whichever way it was reached).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

ENGLISH = "en"
# pyright's table keys; "en-us", its default name, selects the English table too.
_TABLES = frozenset(
    {"cs", "de", "en", "es", "fr", "it", "ja", "ko", "pl", "pt-br", "qps-ploc", "ru", "tr", "zh-cn", "zh-tw"}
)
_DEFAULT_NAME = "en-us"
_ENVIRONMENT = ("LC_ALL", "LC_MESSAGES", "LANG", "LANGUAGE")

# The title of the progress pyright creates for a references request
# (`Localizer.CodeAction.findingReferences`), in each table, in the order above.
FINDING_REFERENCES = frozenset(
    {
        "Hledaj\xed se odkazy",
        "Verweise werden gesucht",
        "Finding references",
        "Buscando referencias",
        "Recherche de r\xe9f\xe9rences",
        "Ricerca dei riferimenti in corso",
        "\u53c2\u7167\u3092\u691c\u7d22\u3057\u3066\u3044\u307e\u3059",
        "\ucc38\uc870 \ucc3e\uae30",
        "Znajdowanie odwo\u0142a\u0144",
        "Localizando refer\xeancias",
        "[0UmwS][\u0e19\u0e31\u0e49F\xef\xf1\xf0\xef\xf1g r\xebf\xebr\xeb\xf1\xe7\xebs"
        "\u1ea4\u011f\u502a\u0130\u0402\u04b0\u0915\u094d\u0e19\u0e31\u0e49\u0922\u0942\u0901]",
        "\u041f\u0440\u043e\u0438\u0437\u0432\u043e\u0434\u0438\u0442\u0441\u044f "
        "\u043f\u043e\u0438\u0441\u043a \u0441\u0441\u044b\u043b\u043e\u043a",
        "Ba\u015fvurular bulunuyor",
        "\u6b63\u5728\u67e5\u627e\u5f15\u7528",
        "\u5c0b\u627e\u53c3\u8003",
    }
)


def language(locale: object, environment: Mapping[str, str]) -> str:
    """The table pyright writes in when `initialize` carries `locale` (None: absent) and it runs in `environment`.

    A `locale` that is not a string is taken as absent (pyright alone would fail its `initialize`).
    """
    if isinstance(locale, str) and locale:
        return _table(locale.lower())
    return _table(_environment_name(environment))


def _table(name: str) -> str:
    if name == _DEFAULT_NAME:
        return ENGLISH
    if name in _TABLES:
        return name
    head = name.split("-", maxsplit=1)[0]
    return head if head in _TABLES else ENGLISH


def _environment_name(environment: Mapping[str, str]) -> str:
    nls = environment.get("VSCODE_NLS_CONFIG")
    if nls:
        try:
            config = json.loads(nls)
        except ValueError:
            config = None
        if config is not None:
            chosen = config.get("locale") if isinstance(config, dict) else None
            return chosen if isinstance(chosen, str) and chosen else _DEFAULT_NAME
    value = next((environment[name] for name in _ENVIRONMENT if environment.get(name)), "")
    return value.split(".", maxsplit=1)[0] or _DEFAULT_NAME
