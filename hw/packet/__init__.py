"""Packet mode of the FRED switch: VC input ports, credit flow control, header-selected
phases with MP > PP > DP preemption, ACK/NACK forwarding (docs/switch-rtl.md)."""
