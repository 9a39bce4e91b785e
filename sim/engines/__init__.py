"""The simulators of the system model: the flow-level network engine (netsim), its
packet-level cross-check (packetsim), collectives on a fabric (system) and training
iterations (training). APIs return data; the command line formats it."""
