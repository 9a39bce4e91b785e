"""Benches of the packet-mode switch: scenarios, traffic with its expected results, NPU
endpoints with Go-Back-N and faulty links, and the cycle loop that joins them to the RTL in
the Amaranth simulator or under cocotb (docs/cosim.md, "Packet mode")."""
