"""Default generator parameters of a FRED switch.

The RTL generator's ``SwitchParams`` (hw/params.py) takes its defaults from here, and so
does the built-in timing card (model/timing_card.py), which the system model uses until
co-simulation measures a real card: the card then describes the switch that
``fred generate`` builds without options.
"""

from __future__ import annotations

#: Middle subnetworks of the Clos: the paper's m = 3.
M = 3
#: Elements per flit, and their type (what `make verilog` builds).
LANES = 4
DTYPE = "bf16"
#: Skid-buffer register slices after every registered node output.
REGS_PER_STAGE = 1
#: Register stages inside every adder (hw/adder.py): 0 is the combinational adder, one
#: stage per uSwitch column; the RTL's behaviour and the system model's numbers before
#: pipelined adders existed. docs/architecture-cost.md measures what more stages buy.
ADDER_STAGES = 0
#: Configuration slots K: MP, DP, PP and the all-unicast default.
SLOTS = 4
#: Bits per configuration word on the cfg port.
WORD_WIDTH = 32
#: Interconnect architecture: the paper's recursive Clos.
ARCH = "clos"
