"""The error hierarchy of xla-spmd.

Every layer raises one of these for bad input, so a user sees what was expected, what was
found and where, never a bare ``KeyError`` or ``AssertionError``. This module imports nothing
of ours: it is the one leaf every layer may import.

>>> try:
...     raise ParseError("expected ']'", file="m.hlo", line=3, column=7)
... except XlaSpmdError as e:
...     print(e)
m.hlo:3:7: expected ']'
"""

from __future__ import annotations

# The deepest nesting any reader or the IR accepts: tuple types, brackets, regions, chains of
# called computations. Deeper input gets a clear error here instead of a RecursionError in
# some later pass; real programs nest a handful of levels.
MAX_NESTING = 100
TOO_DEEP = f"nested more than {MAX_NESTING} levels deep; xla-spmd reads at most {MAX_NESTING}"


class XlaSpmdError(Exception):
    """Base class of every error xla-spmd raises on purpose.

    `peer_failed`, set on an error that is the consequence of another device's failure
    (read with ``getattr(error, "peer_failed", False)``), lets the caller report the root
    cause instead.
    """

    peer_failed: bool  # set only on consequences; unset reads as False through getattr
    # Under MPI: set on the error of a rank that stays quiet because another rank reports.
    reported_by_another_rank: bool
    # Under MPI: set on an error every rank learned together (a bad file or variable), so
    # each rank exits by itself instead of aborting the job.
    every_rank_knows: bool


class ParseError(XlaSpmdError, ValueError):
    """Malformed text (HLO, StableHLO, sharding or mesh syntax), with its position.

    ``line`` and ``column`` are 1-based; either may be None when the text has no lines
    (for example a sharding string given on its own).
    """

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 column: int | None = None, source_line: str | None = None):
        self.message = message
        self.file = file
        self.line = line
        self.column = column
        self.source_line = source_line
        super().__init__(self._format())

    def _format(self) -> str:
        where = ":".join(str(part) for part in (self.file, self.line, self.column)
                         if part is not None)
        text = f"{where}: {self.message}" if where else self.message
        if self.source_line is not None and self.column is not None:
            text += f"\n  {self.source_line}\n  {' ' * (self.column - 1)}^"
        return text


class VerifyError(XlaSpmdError, ValueError):
    """A module that breaks an IR invariant: wrong operand types, shapes or signatures."""


class ShardingError(XlaSpmdError, ValueError):
    """An invalid mesh or sharding: names the tensor, dimension or axis at fault."""


class PartitionError(XlaSpmdError):
    """The partitioner cannot rewrite an instruction under the given shardings."""


class EvaluationError(XlaSpmdError):
    """A program cannot be evaluated: unknown custom-call target, bad argument, no rule.

    `located` is set once the message shows the instructions around the failing one.
    """

    located: bool  # unset reads as False through getattr


class CommunicationError(XlaSpmdError):
    """A collective failed: a peer raised, or did not arrive in time.

    Under MPI, a timeout names the rank that reports it (`reporter`) and when (`report_at`,
    seconds since the epoch); both are set only there.
    """

    reporter: int
    report_at: float


class CheckpointError(XlaSpmdError):
    """A checkpoint cannot be saved or restored: names the directory, step, leaf and chunk."""


class MissingRuleError(XlaSpmdError, KeyError):
    """A registry has no entry for an opcode ("no sharding rule for 'dot'")."""

    def __str__(self) -> str:  # KeyError would print the repr of the message.
        return str(self.args[0]) if self.args else ""
