"""Generator parameters of a FRED switch, validated once at the boundary."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from fredfab.model.arches import ARCHES, build_topology
from fredfab.model.dtypes import ELEMENT_TYPES, ElementType, element_type
from fredfab.model.graph import SwitchGraph


@dataclass(frozen=True)
class SwitchParams:
    """Everything that shapes the generated RTL.

    arch          -- "clos": the paper's Fred_m(ports) (model/topology.py); "xbar": crossbar
                     plus segmented reduction tree (model/xbar_topology.py), m unused.
    ports, m      -- switch ports, and middle subnetworks of the Clos.
    lanes, dtype  -- a flit carries ``lanes`` elements of ``dtype`` plus a ``last`` bit.
    regs_per_stage -- skid-buffer register slices after every uSwitch output. 1 (default)
                     registers every stage, so no combinational ready path spans more than one
                     stage; 0 builds a purely combinational interconnect.
    slots         -- configuration slots K (>= 4: MP, DP, PP and the all-unicast default).
    word_width    -- bits per configuration word on the configuration port.
    """

    ports: int
    m: int = 3
    lanes: int = 4
    dtype: str = "bf16"
    regs_per_stage: int = 1
    slots: int = 4
    word_width: int = 32
    arch: str = "clos"

    def __post_init__(self) -> None:
        _int_at_least("ports", self.ports, 2)
        _int_at_least("m", self.m, 2)
        _int_at_least("lanes", self.lanes, 1)
        _int_at_least("regs_per_stage", self.regs_per_stage, 0)
        _int_at_least("slots", self.slots, 4)
        _int_at_least("word_width", self.word_width, 8)
        if self.dtype not in ELEMENT_TYPES:
            raise ValueError(
                f"dtype {self.dtype!r} is not supported; use one of {', '.join(ELEMENT_TYPES)}"
            )
        if self.arch not in ARCHES:
            raise ValueError(f"arch {self.arch!r} is not supported; use one of {', '.join(ARCHES)}")
        if self.regs_per_stage > 4:
            raise ValueError(f"regs_per_stage {self.regs_per_stage} > 4 buys no throughput")

    @property
    def element(self) -> ElementType:
        return element_type(self.dtype)

    @property
    def data_width(self) -> int:
        return self.lanes * self.element.bits

    @property
    def topology(self) -> SwitchGraph:
        return build_topology(self.ports, self.m, self.arch)

    @property
    def latency_cycles(self) -> int:
        """Input accepted to output valid: one cycle per register slice on the path. Every
        Clos path crosses every stage; on the crossbar this is the longest path (a flow
        whose segment completes below the root of the tree arrives earlier)."""
        return self.topology.register_depth * self.regs_per_stage

    @property
    def name(self) -> str:
        """A file-system friendly name of the variant, e.g. fred_clos_p8_m3_l4_bf16_r1."""
        m = f"_m{self.m}" if self.arch == "clos" else ""
        return (
            f"fred_{self.arch}_p{self.ports}{m}_l{self.lanes}_{self.dtype}_r{self.regs_per_stage}"
        )

    def to_dict(self) -> dict:
        return asdict(self)


def _int_at_least(name: str, value: object, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
