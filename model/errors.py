"""The one base class of the errors a user's input can cause.

Every check at a boundary of the models (a parameter of the public API, a value from the
command line, a fabric, workload, timing-card or scenario file) raises ``InputError`` or one
of its subclasses (FabricError, WorkloadError, FlowError, ConfigError, TimingCardError, ...),
with a message that says what was wrong and what is allowed. The `fred` command prints those
as one line and exits 2; any other exception, ValueError included, is a bug in the project
and is reported as one, with its traceback. ``InputError`` is a ValueError, so callers that
catch ValueError keep working.
"""

from __future__ import annotations


class InputError(ValueError):
    """A value from outside that the models do not accept; the message says why."""
