"""Generator parameters of a FRED switch, validated once at the boundary."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from fredfab.model import defaults
from fredfab.model.dtypes import ELEMENT_TYPES, ElementType, element_type
from fredfab.model.errors import InputError
from fredfab.model.switch.arches import ARCHES, build_topology
from fredfab.model.switch.graph import SwitchGraph
from fredfab.model.switch.latency import MAX_ADDER_STAGES, latency_cycles


@dataclass(frozen=True)
class SwitchParams:
    """Everything that shapes the generated RTL.

    arch          -- "clos": the paper's Fred_m(ports) (model/switch/topology.py); "xbar": crossbar
                     plus segmented reduction tree (model/switch/xbar_topology.py), m unused.
    ports, m      -- switch ports, and middle subnetworks of the Clos.
    lanes, dtype  -- a flit carries ``lanes`` elements of ``dtype`` plus a ``last`` bit.
    regs_per_stage -- skid-buffer register slices after every uSwitch output. 1 (default)
                     registers every stage, so no combinational ready path spans more than one
                     stage; 0 builds a purely combinational interconnect.
    slots         -- configuration slots K (>= 4: MP, DP, PP and the all-unicast default).
    word_width    -- bits per configuration word on the configuration port.
    """

    ports: int
    m: int = defaults.M
    lanes: int = defaults.LANES
    dtype: str = defaults.DTYPE
    regs_per_stage: int = defaults.REGS_PER_STAGE
    adder_stages: int = defaults.ADDER_STAGES
    slots: int = defaults.SLOTS
    word_width: int = defaults.WORD_WIDTH
    arch: str = defaults.ARCH

    def __post_init__(self) -> None:
        for name, (low, high) in PARAM_LIMITS.items():
            _int_in(name, getattr(self, name), low, high)
        if self.dtype not in ELEMENT_TYPES:
            raise InputError(
                f"dtype {self.dtype!r} is not supported; use one of {', '.join(ELEMENT_TYPES)}"
            )
        if self.arch not in ARCHES:
            raise InputError(f"arch {self.arch!r} is not supported; use one of {', '.join(ARCHES)}")

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
        """Input accepted to output valid (model/switch/latency.py): one cycle per register
        slice and per adder stage on the longest path."""
        return latency_cycles(self.topology, self.regs_per_stage, self.adder_stages)

    @property
    def name(self) -> str:
        """A file-system friendly name of the variant, e.g. fred_clos_p8_m3_l4_bf16_r1, and
        fred_clos_p8_m3_l4_bf16_r1_a3 with three adder stages (none: the name it always had)."""
        m = f"_m{self.m}" if self.arch == "clos" else ""
        a = f"_a{self.adder_stages}" if self.adder_stages else ""
        return (
            f"fred_{self.arch}_p{self.ports}{m}_l{self.lanes}_{self.dtype}"
            f"_r{self.regs_per_stage}{a}"
        )

    def report_fields(self) -> dict:
        """What a row of a cost report says of its variant (`fred cost`, `fred cost --fpga`,
        `make bench`): architecture, size, element type, adder stages and latency; m only for
        the Clos."""
        return {
            "arch": self.arch,
            "ports": self.ports,
            "m": self.m if self.arch == "clos" else None,
            "lanes": self.lanes,
            "dtype": self.dtype,
            "adder_stages": self.adder_stages,
            "latency_cycles": self.latency_cycles,
        }

    def to_dict(self) -> dict:
        return asdict(self)


#: Inclusive bounds of the integer parameters. The upper bounds keep generation, simulation
#: and synthesis within minutes: the Clos grows as m ** log2(ports) uSwitches, a flit is
#: lanes x 32 bits at most, the control unit stores slots x words per slot; more than 4
#: register slices per stage buy no throughput; the float adder has MAX_ADDER_STAGES + 1
#: steps to put registers between (hw/adder.py).
PARAM_LIMITS: dict[str, tuple[int, int]] = {
    "ports": (2, 64),
    "m": (2, 4),
    "lanes": (1, 64),
    "regs_per_stage": (0, 4),
    "adder_stages": (0, MAX_ADDER_STAGES),
    "slots": (4, 1024),
    "word_width": (8, 1024),
}


def _int_in(name: str, value: object, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InputError(f"{name} must be an integer >= {low} and <= {high}, got {value!r}")
