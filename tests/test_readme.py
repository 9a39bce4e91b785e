"""The README's Python API example runs as written (issue 25: it used names it never
defined)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks(section: str) -> list[str]:
    """The ```python blocks of the README section headed ``section``."""
    text = README.read_text()
    start = text.index(f"## {section}\n")
    end = text.find("\n## ", start + 1)
    return re.findall(r"```python\n(.*?)```", text[start : end if end > 0 else None], re.S)


def test_the_python_api_example_runs_verbatim(tmp_path, monkeypatch, capsys):
    (block,) = python_blocks("The Python API")
    monkeypatch.chdir(tmp_path)
    exec(compile(block, str(README), "exec"), {"__name__": "readme"})
    out = capsys.readouterr().out
    verilog = tmp_path / "build" / "verilog" / "fred_clos_p8_m3_l4_bf16_r1.v"
    assert verilog.is_file() and verilog.with_suffix(".json").is_file()
    assert str(Path("build/verilog") / verilog.name) in out
