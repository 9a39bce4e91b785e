"""Chakra execution traces (MLCommons; the workloads of ASTRA-sim 2.x): read, check, write.

A job is one file per rank, ``PREFIX.RANK.et`` (optionally gzipped), each a stream of
varint-length-delimited protobuf records: a ``GlobalMetadata``, then ``Node`` messages of
the schema in et_def.proto (written here from the format's public definition,
github.com/mlcommons/chakra schema/protobuf/et_def.proto; et_def_pb2.py is generated from it
and committed, so an install needs only the ``protobuf`` runtime).

    from fredfab.model.chakra import read_trace, write_trace
    trace = read_trace("build/chakra/job")      # job.0.et ... job.(N-1).et
    trace.num_ranks, trace.programs[trace.rank_program[0]].nodes

Ranks whose files hold the same bytes share one parsed program (``rank_program``), so a
job of identical ranks is parsed once. Every mistake in a file is a ``ChakraError`` (a
ValueError) of one line naming the file, the node and the field.

Regenerate et_def_pb2.py after editing the schema (grpcio-tools ships protoc):
``python -m grpc_tools.protoc -Imodel/chakra --python_out=model/chakra model/chakra/et_def.proto``
"""

from fredfab.model.chakra.reader import read_trace, trace_files
from fredfab.model.chakra.trace import ChakraError, ChakraTrace, Program, TraceNode
from fredfab.model.chakra.writer import write_trace

__all__ = [
    "ChakraError",
    "ChakraTrace",
    "Program",
    "TraceNode",
    "read_trace",
    "trace_files",
    "write_trace",
]
