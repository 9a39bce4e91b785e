"""What `pip install` ships: every folder of Python code is a package the build finds, and
every data file the tools read is declared as package data."""

from __future__ import annotations

import importlib.util
import tomllib
from fnmatch import fnmatch
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _setup():
    spec = importlib.util.spec_from_file_location("fred_setup_script", REPO / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _code_folders() -> set[Path]:
    found = set()
    for folder in _setup().PACKAGE_DIR.values():
        for py in (REPO / folder).rglob("*.py"):
            if "__pycache__" not in py.parts:
                found.add(py.parent)
    return found


def test_every_folder_of_python_code_is_a_package():
    missing = sorted(
        str(f.relative_to(REPO)) for f in _code_folders() if not (f / "__init__.py").exists()
    )
    assert not missing, (
        f"folders with Python code but no __init__.py (left out of the wheel): {missing}"
    )


def test_the_package_list_covers_every_code_folder():
    setup = _setup()
    listed = set(setup.packages())
    for folder in _code_folders():
        for package, root in setup.PACKAGE_DIR.items():
            if folder == REPO / root or (REPO / root) in folder.parents:
                rel = folder.relative_to(REPO / root).parts
                assert ".".join((package, *rel)) in listed, folder
    assert "fredfab.model.packet" in listed and "fredfab.model.switch" in listed


def test_every_data_file_is_package_data():
    patterns = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["*"]
    for folder in _setup().PACKAGE_DIR.values():
        for f in (REPO / folder).rglob("*"):
            if f.is_dir() or f.suffix in (".py", ".pyc") or "__pycache__" in f.parts:
                continue
            package_root = next(p for p in [f.parent, *f.parents] if (p / "__init__.py").exists())
            rel = f.relative_to(package_root).as_posix()
            assert any(fnmatch(rel, pat) for pat in patterns), f"{f} is not package data"


def test_every_data_folder_is_a_listed_package():
    """setuptools warns about each importable folder it is not told of (one screenful per
    folder on every install): data folders are data-only packages of the list."""
    setup = _setup()
    listed = set(setup.packages())
    for package, root in setup.PACKAGE_DIR.items():
        for f in (REPO / root).rglob("*"):
            if f.is_dir() or f.suffix in (".py", ".pyc") or "__pycache__" in f.parts:
                continue
            rel = f.parent.relative_to(REPO / root).parts
            assert ".".join((package, *rel)) in listed, f
