"""The training model: workloads, NPU and execution settings, 3D-parallel layouts, memory,
and an iteration as a task graph. fredfab.sim.engines.training runs it on the network simulator."""

from fredfab.model.training.config import NPU, TrainingConfig, config_from_table
from fredfab.model.training.memory import MemoryReport, choose_policy
from fredfab.model.training.parallel import Layout, factorizations, split_stages
from fredfab.model.training.timeline import CATEGORIES, Timeline
from fredfab.model.training.workload import (
    Layer,
    MPComm,
    Workload,
    WorkloadError,
    resnet_layers,
    transformer_layers,
    workload_from_dict,
)
from fredfab.model.training.workload_files import load_workload, shipped_workloads

__all__ = [
    "CATEGORIES",
    "NPU",
    "Layer",
    "Layout",
    "MPComm",
    "MemoryReport",
    "Timeline",
    "TrainingConfig",
    "Workload",
    "WorkloadError",
    "choose_policy",
    "config_from_table",
    "factorizations",
    "load_workload",
    "resnet_layers",
    "shipped_workloads",
    "split_stages",
    "transformer_layers",
    "workload_from_dict",
]
