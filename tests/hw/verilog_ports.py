"""The top module's ports as the generated Verilog declares them, for the manifest tests."""

from __future__ import annotations

import re


def declared_ports(text: str, top: str) -> dict[str, int]:
    """Port name -> width, from ``input``/``output`` declarations of module ``top``."""
    body = text[text.index(f"module {top}(") :]
    body = body[: body.index("endmodule")]
    pattern = r"^\s*(?:input|output)\s+(?:\[(\d+):0\]\s+)?(\w+);"
    return {name: int(msb) + 1 if msb else 1 for msb, name in re.findall(pattern, body, re.M)}


def assert_manifest_ports(text: str, top: str, ports: list[dict]) -> dict[str, int]:
    """The manifest's ``ports`` are exactly the Verilog's (with clk and rst), widths equal;
    returns the declared ports."""
    declared = declared_ports(text, top)
    assert set(declared) == {port["name"] for port in ports} | {"clk", "rst"}
    for port in ports:
        assert declared[port["name"]] == port["width"], port
    return declared
