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
    here = Path(__file__).resolve().parent
    found = []
    for package, folder in PACKAGE_DIR.items():
        for init in sorted((here / folder).rglob("__init__.py")):
            parts = init.parent.relative_to(here / folder).parts
            found.append(".".join((package, *parts)))
    return found


if __name__ == "__main__":  # as setuptools runs it; tests import the functions alone
    setup(package_dir=PACKAGE_DIR, packages=packages())
