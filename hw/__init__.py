"""Amaranth generators of the FRED switch (uSwitches, interconnect, control unit, top)."""
