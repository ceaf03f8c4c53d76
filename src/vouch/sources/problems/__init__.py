"""Function-level problem sets: HumanEval, MBPP, EvalPlus's HumanEval+ and MBPP+, a user's own file."""

from vouch.sources.problems._readers import ProblemsFileError, mbpp_task_id, read_problems_file
from vouch.sources.problems._sets import PROBLEM_SETS, ProblemSet, ProblemSetEntry, load_problem_set

__all__ = [
    "PROBLEM_SETS",
    "ProblemSet",
    "ProblemSetEntry",
    "ProblemsFileError",
    "load_problem_set",
    "mbpp_task_id",
    "read_problems_file",
]
