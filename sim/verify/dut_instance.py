"""The switch's Verilog as an Amaranth ``Instance`` inside a hardware harness, its ports wired
by the names its manifest gives (the circuit switch's soak harness, sim/verify/soak_harness.py,
and the packet switch's, sim/verify/packet/hw_soak.py)."""

from __future__ import annotations

from amaranth.hdl import ClockSignal, Const, Instance, ResetSignal, Signal, Value


def manifest_instance(manifest: dict, conns: dict[str, Value], idle_inputs: bool) -> Instance:
    """The manifest's top module with ``conns`` (Verilog port name: value) connected; every
    output nobody reads gets a wire of its own. An input not in ``conns`` is held at 0 with
    ``idle_inputs`` (the ready of a stream nobody reads), else it is an error."""
    ports = {}
    for port in manifest["ports"]:
        name, direction = port["name"], port["direction"]
        if name in conns:
            ports[name] = ("i" if direction == "input" else "o", conns[name])
        elif direction == "output":
            ports[name] = ("o", Signal(port["width"], name=f"unused_{name}"))
        elif idle_inputs:
            ports[name] = ("i", Const(0, port["width"]))
        else:
            raise ValueError(f"the harness does not know what to drive on input {name!r}")
    return Instance(
        manifest["top"],
        ("i", manifest["clock"], ClockSignal()),
        ("i", manifest["reset"]["name"], ResetSignal()),
        *((d, name, v) for name, (d, v) in ports.items()),
    )
