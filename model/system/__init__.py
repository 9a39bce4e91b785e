"""The wafer system model: fabrics as data, worker placement and collective algorithms.

The simulator that runs what is described here lives in fredfab.sim.engines (netsim, system).
"""

# Registered algorithms beyond those of algorithms.py: importing a module registers them.
from fredfab.model.system import (
    dims_algorithms,  # noqa: F401  (ASTRA-sim's)
    mesh_algorithms,  # noqa: F401  (the mesh at its bound)
    mesh_ring_routes,  # noqa: F401  (mesh rings on chosen minimal routes)
)
from fredfab.model.system.algorithms import (
    OPS,
    CollectiveRequest,
    Plan,
    build,
    bus_factor,
    normalize_op,
    plan_request,
)
from fredfab.model.system.elements import FabricError, Link, Node
from fredfab.model.system.fabric import Fabric
from fredfab.model.system.generators import fred_tree, mesh
from fredfab.model.system.loader import fabric_from_dict, load_fabric, shipped_fabrics
from fredfab.model.system.placement import Strategy
from fredfab.model.system.schedule import Schedule, TreeFlow, switch_flows, tree_flow
from fredfab.model.system.switch_timing import SwitchTiming

__all__ = [
    "OPS",
    "CollectiveRequest",
    "Fabric",
    "FabricError",
    "Link",
    "Node",
    "Plan",
    "Schedule",
    "Strategy",
    "SwitchTiming",
    "TreeFlow",
    "build",
    "bus_factor",
    "fabric_from_dict",
    "fred_tree",
    "load_fabric",
    "mesh",
    "normalize_op",
    "plan_request",
    "shipped_fabrics",
    "switch_flows",
    "tree_flow",
]
