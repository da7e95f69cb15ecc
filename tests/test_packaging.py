"""pyproject.toml names every package of the checkout, so a wheel (not only an editable install) has them all."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _declared() -> tuple[set[str], dict[str, str]]:
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    return set(setuptools["packages"]), dict(setuptools["package-dir"])


def test_every_folder_with_an_init_is_a_declared_package() -> None:
    # The editable install the tests run on finds undeclared folders anyway; a wheel leaves them out.
    packages, folders = _declared()
    missing: list[str] = []
    for package, folder in folders.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder)
            if any(part.startswith(".") or part == "__pycache__" for part in relative.parts):
                continue
            name = ".".join((package, *relative.parts))
            if name not in packages:
                missing.append(name)
    assert len(folders) >= 4
    assert missing == []


def test_every_declared_package_is_a_folder_with_an_init() -> None:
    packages, folders = _declared()
    stale = []
    for name in packages:
        base = next((p for p in sorted(folders, key=len, reverse=True) if name == p or name.startswith(p + ".")), None)
        rest = name[len(base) + 1 :].split(".") if base is not None and name != base else []
        if base is None or not (ROOT / folders[base] / Path(*rest) / "__init__.py").exists():
            stale.append(name)
    assert stale == []
