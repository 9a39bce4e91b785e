"""A timing diagram of a preemption, drawn from a simulation of the packet switch:
``python -m fredfab.sim.verify.packet.diagram [--ports P] [--at CYCLE] [--window N]``.

DP (an All-Reduce over every port) streams; at cycle ``--at`` MP (All-Reduce in pairs) sends
two packets. One character per cycle, per link of port 0 and for the switch's phase:

* links: ``M``/``D``/``P`` a head flit of MP/DP/PP, ``m``/``d``/``p`` a payload flit,
  ``c`` a control flit (ACK/NACK/REWIND), ``s`` a credit sync, ``.`` nothing;
* phase: ``M``/``D``/``P`` the VC the interconnect serves, ``r`` reconfiguring (draining the
  packets in flight, then copying the slot), ``.`` no phase yet.
"""

from __future__ import annotations

import argparse

from fredfab.hw.packet.params import PacketParams
from fredfab.hw.params import SwitchParams
from fredfab.model.packet.format import VC_CTRL, VC_DP, VC_MP, LinkFormat
from fredfab.sim.verify.packet.amaranth_sim import run_switch
from fredfab.sim.verify.packet.scenario import PacketPhase, PacketScenario
from fredfab.sim.verify.packet.scenarios import DP_SLOT, MP_SLOT, dp_flows, mp_flows

LETTER = {0: "m", 1: "d", 2: "p"}


def _flit_char(bits: int | None, link: LinkFormat) -> str:
    if bits is None:
        return "."
    f = link.decode(bits)
    if f.sync:
        return "s"
    if f.vc == VC_CTRL:
        return "c"
    return LETTER[f.vc].upper() if f.head else LETTER[f.vc]


def preemption_diagram(ports: int = 4, at: int = 60, window: int = 60) -> str:
    params = PacketParams(SwitchParams(ports, lanes=4, dtype="bf16"))
    link = params.link
    scenario = PacketScenario(
        "preempt",
        (
            PacketPhase.of(VC_DP, DP_SLOT, dp_flows(ports), 16),
            PacketPhase.of(VC_MP, MP_SLOT, mp_flows(ports), 2, at),
        ),
    )
    rows: dict[str, list[str]] = {"rx[0] NPU->switch": [], "tx[0] switch->NPU": [], "phase": []}
    start = at - 8

    def trace(now, drives, seen, phase) -> None:
        if not start <= now < start + window:
            return
        rows["rx[0] NPU->switch"].append(_flit_char(drives[0][0], link))
        rows["tx[0] switch->NPU"].append(_flit_char(seen[0][0], link))
        valid, vc, _, reconf = phase
        rows["phase"].append("r" if reconf else (LETTER[vc].upper() if valid else "."))

    result = run_switch(params, scenario, trace)
    if not result.passed:
        raise RuntimeError(f"the preemption scenario failed: {result.errors[:3]}")
    width = max(len(k) for k in rows)
    ruler = "".join("|" if (start + i) % 10 == 0 else " " for i in range(window))
    labels = "".join(f"{start + i:<10}" if (start + i) % 10 == 0 else "" for i in range(window))
    lines = [
        f"{'cycle':<{width}}  {ruler}",
        f"{'':<{width}}  {' ' * ((10 - start % 10) % 10)}{labels}",
    ]
    lines += [f"{k:<{width}}  {''.join(v)}" for k, v in rows.items()]
    lines.append(f"{'MP sends from':<{width}}  {' ' * (at - start)}^ cycle {at}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ports", type=int, default=4)
    ap.add_argument("--at", type=int, default=60, help="cycle MP starts sending")
    ap.add_argument("--window", type=int, default=60, help="cycles drawn")
    a = ap.parse_args()
    print(preemption_diagram(a.ports, a.at, a.window))


if __name__ == "__main__":
    main()
