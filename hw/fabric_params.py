"""Generator parameters of a wafer fabric in RTL: which fabric, which switches, which links.

``spec`` names the fabric description: a shipped fabric (``fred-b``, ``fred-d``: tree fabrics
only), a fabric TOML file, or a parametric tree ``tree:4x5`` (model/system/generators.fred_tree:
4 NPUs per L1 switch, 5 L1 switches under the root) with an optional ``+io<N>`` for N I/O
controllers (``tree:2x2+io2``). Every switch is a FRED switch (hw/switch.py) of the
architecture, m, lanes, element type, register slices, adder stages, slots and word width given
here, with as
many ports as the fabric gives it (``Fabric.num_ports``). ``link_delay`` register slices
(skid buffers) sit on every link, boundary links included.

Widths are scaled down for simulation: the paper's flit is 512 bytes; a simulated fabric
carries ``lanes`` elements of ``dtype`` per flit, which changes no cycle count (one flit per
cycle per port whatever its width) and no routing.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from functools import cached_property

from fredfab.hw.params import PARAM_LIMITS, SwitchParams
from fredfab.model import defaults
from fredfab.model.errors import InputError
from fredfab.model.switch.arches import ARCHES
from fredfab.model.switch.fabric_wiring import FabricWiring, SwitchSite
from fredfab.model.system.fabric import ROUTING_FORMS, Fabric

#: Register slices per link: 0 (wire) to this many.
MAX_LINK_DELAY = 16
_TREE = re.compile(r"tree:(\d+(?:x\d+)*)(?:\+io(\d+))?")


def load_spec(spec: str, switch_m: int | None = None) -> Fabric:
    """The fabric ``spec`` names (see the module docstring). ``switch_m``: the m of a
    parametric tree's switches (default the paper's); a fabric file states its own
    ``switch_m`` (default the paper's too), which a ``switch_m`` given here must equal: the
    RTL and the system model that predicts its cycles read the same fabric."""
    from fredfab.model.system.generators import fred_tree
    from fredfab.model.system.loader import load_fabric

    m = _TREE.fullmatch(spec)
    if m:
        radix = [int(r) for r in m[1].split("x")]
        ios = int(m[2] or 0)
        given = {} if switch_m is None else {"switch_m": switch_m}
        return fred_tree(
            radix, [1.0] * len(radix), io_controllers=ios, name=f"tree-{m[1]}", **given
        )
    if spec.startswith("tree:"):
        raise InputError(f"fabric {spec!r}: write a tree as tree:RxR[...][+ioN], e.g. tree:2x2")
    fabric = load_fabric(spec)
    if switch_m is not None and switch_m != fabric.switch_m:
        raise InputError(
            f"fabric {spec!r} has switch_m = {fabric.switch_m}, m = {switch_m} disagrees: "
            "leave m out to build the fabric's own switches, or change its switch_m"
        )
    return fabric


@dataclass(frozen=True)
class FabricParams:
    spec: str
    arch: str = defaults.ARCH
    #: None: the fabric's switch_m; given: a parametric tree's, or what the file's must be.
    m: int | None = None
    lanes: int = 1
    dtype: str = "int16"
    regs_per_stage: int = defaults.REGS_PER_STAGE
    adder_stages: int = defaults.ADDER_STAGES
    slots: int = defaults.SLOTS
    word_width: int = defaults.WORD_WIDTH
    link_delay: int = 1

    def __post_init__(self) -> None:
        if self.arch not in ARCHES:
            raise InputError(f"arch {self.arch!r} is not supported; use one of {', '.join(ARCHES)}")
        d = self.link_delay
        if isinstance(d, bool) or not isinstance(d, int) or not 0 <= d <= MAX_LINK_DELAY:
            raise InputError(f"link_delay must be an integer 0..{MAX_LINK_DELAY}, got {d!r}")
        if self.fabric.routing != "tree":
            form = ROUTING_FORMS[self.fabric.routing]
            raise InputError(f"fabric {self.spec!r} is {form}; the fabric RTL needs a switch tree")
        low, high = PARAM_LIMITS["m"]
        if self.arch == "clos" and not low <= self.switch_m <= high:
            # The model takes any m up to MAX_SWITCH_M; the generator builds fewer.
            whose = (
                f"m = {self.m}"
                if self.m is not None
                else f"fabric {self.spec!r} has switch_m = {self.switch_m}"
            )
            raise InputError(
                f"{whose}; the switch RTL is generated for m = {low}..{high} "
                "(the crossbar variant has no m)"
            )
        for site in self.wiring.switches:  # validates every switch's parameters at once
            self.switch_params(site)

    @cached_property
    def fabric(self) -> Fabric:
        return load_spec(self.spec, switch_m=self.m)

    @cached_property
    def wiring(self) -> FabricWiring:
        return FabricWiring.of(self.fabric)

    @property
    def switch_m(self) -> int:
        return self.fabric.switch_m  # equal to m when m is given (load_spec)

    def switch_params(self, site: SwitchSite) -> SwitchParams:
        return SwitchParams(
            ports=site.ports,
            # A crossbar has no middle stage: the fabric's m is the Clos's alone.
            m=self.switch_m if self.arch == "clos" else defaults.M,
            lanes=self.lanes,
            dtype=self.dtype,
            regs_per_stage=self.regs_per_stage,
            adder_stages=self.adder_stages,
            slots=self.slots,
            word_width=self.word_width,
            arch=self.arch,
        )

    @property
    def name(self) -> str:
        """File-system friendly, e.g. fabric_fred_d_clos_m3_l1_int16_r1_d1 (with adder stages
        fabric_fred_d_clos_m3_l1_int16_r1_a2_d1)."""
        slug = re.sub(r"[^a-z0-9]+", "_", self.spec.lower().rsplit("/", 1)[-1]).strip("_")
        m = f"_m{self.switch_m}" if self.arch == "clos" else ""
        a = f"_a{self.adder_stages}" if self.adder_stages else ""
        return (
            f"fabric_{slug}_{self.arch}{m}_l{self.lanes}_{self.dtype}"
            f"_r{self.regs_per_stage}{a}_d{self.link_delay}"
        )

    def to_dict(self) -> dict:
        return asdict(self)
