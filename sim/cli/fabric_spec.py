"""``--fabric SPEC`` of `fred generate` and `fred cosim`: which fabric of FRED switches to
build in RTL (hw/fabric_params.py), and its links' register slices.

The switches' m is the fabric's own ``switch_m`` (the fabric file's, or the paper's 3): the
RTL is the fabric the system model describes. An explicit ``--m`` must agree with it (a
parametric ``tree:RxR`` takes it as its switches' m); the Clos generator builds m = 2..4,
and a crossbar (--arch xbar) has no m at all. The other switch parameters (--arch,
--lanes, --dtype, --regs-per-stage, --slots, --word-width) apply to every switch, and each
switch gets as many ports as the fabric gives it.
"""

from __future__ import annotations

import argparse

from fredfab.sim.cli import UserError
from fredfab.sim.cli.arguments import bounded_int


def add_fabric_spec_arguments(p: argparse.ArgumentParser, what: str) -> argparse._ArgumentGroup:
    """``--fabric`` and ``--link-delay``; returns the group for a command's own fabric options.
    ``what``: what the command does with the fabric, for the help."""
    from fredfab.hw.fabric_params import MAX_LINK_DELAY, FabricParams

    g = p.add_argument_group("fabric (--fabric)")
    g.add_argument(
        "--fabric",
        metavar="SPEC",
        help=f"{what}: fred-b, fred-d, a fabric TOML file or tree:4x5[+ioN]; its switches take "
        "the fabric's switch_m (an explicit --m must agree; xbar takes none) and their ports "
        "from the fabric",
    )
    g.add_argument(
        "--link-delay",
        type=bounded_int((0, MAX_LINK_DELAY)),
        help=f"register slices per link (0..{MAX_LINK_DELAY}; default "
        f"{FabricParams.__dataclass_fields__['link_delay'].default})",
    )
    return g


#: Options of the fabric groups (``dest``; generate's and cosim's), each of which means
#: nothing without --fabric.
FABRIC_ONLY = ("link_delay", "op", "strategy", "flits", "check")


def refuse_without_fabric(args: argparse.Namespace) -> None:
    """A fabric's options on a command run without --fabric are refused, not ignored."""
    for name in FABRIC_ONLY:
        v = getattr(args, name, None)
        if v is not None and v is not False and v != []:  # given (--link-delay 0 too)
            raise UserError(f"--{name.replace('_', '-')} applies to --fabric")


def fabric_params_from(args: argparse.Namespace):
    """The FabricParams of ``args`` (UserError naming --fabric for anything it refuses;
    --ports, which the fabric decides, is refused)."""
    if args.ports is not None:
        raise UserError("--ports does not apply to --fabric: the fabric gives its switches ports")
    from fredfab.hw.fabric_params import FabricParams
    from fredfab.model.errors import InputError
    from fredfab.sim.cli.generate import INT_PARAMS, refuse_m_for_xbar

    refuse_m_for_xbar(args)
    ints = {name: getattr(args, name) for name in INT_PARAMS}  # m: None unless given
    if args.link_delay is not None:  # else FabricParams' own default
        ints["link_delay"] = args.link_delay
    try:
        return FabricParams(args.fabric, arch=args.arch, dtype=args.dtype, **ints)
    except (InputError, OSError) as exc:
        raise UserError(f"--fabric {args.fabric}: {exc}") from None
