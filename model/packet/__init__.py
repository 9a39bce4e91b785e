"""The FRED switch's packet protocol, as data and pure-Python reference logic: header and
link-flit formats, the flit CRC, link framing and credits, Go-Back-N endpoints, fault
injection (docs/switch-rtl.md, "Packet mode")."""
