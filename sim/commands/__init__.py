"""One module per `fred` subcommand (see fredfab.sim.cli)."""
