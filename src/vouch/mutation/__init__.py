"""Mutation testing for verifiers: a pure engine over source text and a kill matrix over any oracle.

`mutate` turns a source into single-edit mutants (libcst keeps formatting and comments);
`kill_matrix` records which probe detects which mutant under an oracle the caller runs. Nothing
here reads files, starts processes or uses global randomness.
"""

from vouch.mutation._engine import Location, Mutant, mutate, resolve_operators
from vouch.mutation._matrix import KillMatrix, Outcome, kill_matrix
from vouch.mutation._operators import OPERATORS, Edit, Operator, SiteContext
from vouch.mutation._targets import DATA_OPERATORS, mutate_data, mutate_embedded

__all__ = [
    "DATA_OPERATORS",
    "OPERATORS",
    "Edit",
    "KillMatrix",
    "Location",
    "Mutant",
    "Operator",
    "Outcome",
    "SiteContext",
    "kill_matrix",
    "mutate",
    "mutate_data",
    "mutate_embedded",
    "resolve_operators",
]
