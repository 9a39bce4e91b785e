"""The package list, derived from the folders.

The design card's folders are mapped into one namespace, fredfab (``PACKAGE_DIR``), and
setuptools' package discovery does not see through such a mapping: every folder under hw/,
model/ and sim/ that holds an ``__init__.py`` is a package, found here, so that a new
subpackage cannot be left out of the wheel. tests/test_packaging.py checks that every folder
holding Python code is a package. Everything else about the distribution is in
pyproject.toml.
"""

from pathlib import Path

from setuptools import setup

PACKAGE_DIR = {"fredfab.hw": "hw", "fredfab.model": "model", "fredfab.sim": "sim"}


def packages() -> list[str]:
    """Every folder with an ``__init__.py``, and the data folders below them (data-only
    packages: setuptools warns about each folder it could import but is not told of, a
    wall of text on every first install)."""
    here = Path(__file__).resolve().parent
    found = []
    for package, folder in PACKAGE_DIR.items():
        root = here / folder
        for init in sorted(root.rglob("__init__.py")):
            found.append(".".join((package, *init.parent.relative_to(root).parts)))
        for data in sorted(d for d in root.rglob("data") if d.is_dir()):
            for sub in [data, *sorted(d for d in data.rglob("*") if d.is_dir())]:
                if "__pycache__" not in sub.parts and not (sub / "__init__.py").exists():
                    found.append(".".join((package, *sub.relative_to(root).parts)))
    return found


if __name__ == "__main__":  # as setuptools runs it; tests import the functions alone
    setup(package_dir=PACKAGE_DIR, packages=packages())
