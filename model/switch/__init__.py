"""The FRED switch as data and as a function: the Fred_m(P) topology and the crossbar
variant, the router and its configuration encoding, the functional network the RTL is
checked against, and the fabric router that configures every switch of a wafer fabric."""
