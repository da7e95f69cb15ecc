"""Which pyright language a `locale` yields, and which clients need a pyright of their own (pyright_locale.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lensmux.adapters.base import Adapter
from lensmux.adapters.clangd.clangd import ClangdAdapter
from lensmux.adapters.pyright.pyright import PyrightAdapter
from lensmux.adapters.pyright.pyright_locale import language
from lensmux.adapters.spec import ServerConfig

# An environment that yields English (as `LANG=C.UTF-8` does: no table is named "C").
ENGLISH_ENV = {"LANG": "C.UTF-8"}


@pytest.mark.parametrize(
    ("locale", "want"),
    [
        ("de", "de"),
        ("de-DE", "de"),
        ("DE-at", "de"),
        ("de_DE", "en"),  # no "-": the whole name is looked up, and there is no such table
        ("pt-BR", "pt-br"),
        ("pt", "en"),  # pyright ships pt-br only
        ("zh-CN", "zh-cn"),
        ("zh-TW", "zh-tw"),
        ("zh-hk", "en"),
        ("zh", "en"),
        ("en", "en"),
        ("en-US", "en"),
        ("en-gb", "en"),
        ("ja", "ja"),
        ("qps-ploc", "qps-ploc"),
        ("xx", "en"),
    ],
)
def test_a_locale_from_initialize_selects_its_table_or_its_head_or_english(locale: str, want: str) -> None:
    assert language(locale, ENGLISH_ENV) == want
    # initialize's locale wins over the environment.
    assert language(locale, {"LANG": "fr"}) == want


@pytest.mark.parametrize(
    ("environment", "want"),
    [
        ({}, "en"),
        ({"LANG": "C.UTF-8"}, "en"),
        ({"LANG": "de"}, "de"),
        ({"LANG": "de.UTF-8"}, "de"),
        ({"LANG": "de_DE.UTF-8"}, "en"),  # the usual form of LANG selects no table
        ({"LANG": "DE"}, "en"),  # the environment's name is not lower-cased
        ({"LANG": "de-DE.UTF-8"}, "de"),
        ({"LC_ALL": "fr", "LANG": "de"}, "fr"),
        ({"LC_ALL": "", "LC_MESSAGES": "ja", "LANG": "de"}, "ja"),
        ({"LANGUAGE": "ru"}, "ru"),
        ({"VSCODE_NLS_CONFIG": '{"locale": "zh-tw"}', "LANG": "de"}, "zh-tw"),
        ({"VSCODE_NLS_CONFIG": "{}", "LANG": "de"}, "en"),
        ({"VSCODE_NLS_CONFIG": "not json", "LANG": "de"}, "de"),
        ({"VSCODE_NLS_CONFIG": "null", "LANG": "de"}, "de"),
    ],
)
def test_without_a_locale_the_environment_decides(environment: dict[str, str], want: str) -> None:
    assert language(None, environment) == want
    assert language("", environment) == want
    assert language(5, environment) == want


def _pyright(env: dict[str, str]) -> Adapter:
    return PyrightAdapter(ServerConfig(name="pyright", command="pyright-langserver", adapter="pyright", env=env))


def test_only_a_client_whose_locale_yields_another_language_than_the_default_needs_its_own_pyright() -> None:
    english = _pyright({"LC_ALL": "C.UTF-8"})
    assert [english.own_language(x) for x in (None, "en", "en-US", "EN-gb", "de_DE")] == [None] * 5
    assert english.own_language("de-DE") == "de"
    # A daemon whose environment is German: an English client is the one apart.
    german = _pyright({"LC_ALL": "de"})
    assert german.own_language(None) is None and german.own_language("de-CH") is None
    assert german.own_language("en-US") == "en"


def test_a_server_that_ignores_locale_is_shared_by_every_client() -> None:
    clangd = ClangdAdapter(ServerConfig(name="clangd", command="clangd", adapter="clangd"))
    assert clangd.own_language("de") is None


def test_the_pyright_for_another_language_is_initialized_with_it() -> None:
    adapter = _pyright({"LC_ALL": "C.UTF-8"})
    root = Path("/w")
    assert adapter.initialize_params({}, root, 1, language="de")["locale"] == "de"
    assert "locale" not in adapter.initialize_params({}, root, 1)


def test_a_references_progress_is_known_by_its_title_in_every_language() -> None:
    adapter = _pyright({"LC_ALL": "C.UTF-8"})
    for title in ("Finding references", "Verweise werden gesucht", "Localizando refer\xeancias"):
        assert adapter.progress_request_method({"kind": "begin", "title": title}) == "textDocument/references"
    assert adapter.progress_request_method({"kind": "begin", "title": "Der Befehl wird ausgef\xfchrt."}) is None
