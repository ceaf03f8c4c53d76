"""Readers of trials other tools produced: samples files of HumanEval problems (``_samples``),
Inspect eval logs (``_inspect``), EvalPlus results (``_evalplus``) and Harbor job directories
(``_harbor``)."""
