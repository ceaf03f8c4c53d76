"""The benchmark's own defects an audit found, as an errata file: one JSON object a line.

Each row has ``task_id``, ``kind`` and what shows it:

* ``g_defect``: an input P allows where most models' passing trials agree with each other and not
  with G (``input``, ``g_answer``, ``consensus``, ``models``: each model's answer, ``basis``);
* ``ground_truth``: another finding about G (P's own examples G answers otherwise), in words;
* ``ambiguous_requirement``: an implicit requirement most models with passing trials skip
  (TestJack A.2), a defect of P;
* ``ambiguous_input``: an input where most passing trials disagree with G, a question about P or G.

None of them refuted a trial; the maintainer decides which side is wrong.
"""

from __future__ import annotations

from typing import Any

from vouch.core import AuditResults


def errata(results: AuditResults) -> list[dict[str, Any]]:
    """Every finding about the benchmark (G and P) in the results, in task order."""
    rows: list[dict[str, Any]] = []
    for task in results.tasks:
        base = {"task_id": task.task_id}
        rows += [{**base, "kind": "g_defect", **d.model_dump(mode="json")} for d in task.g_defects]
        defect_inputs = {d.input for d in task.g_defects}
        rows += [{**base, "kind": "ground_truth", "finding": text} for text in task.ground_truth]
        rows += [{**base, "kind": "ambiguous_requirement", "requirement": r} for r in task.ambiguous_requirements]
        rows += [
            {**base, "kind": "ambiguous_input", "input": i} for i in task.ambiguous_inputs if i not in defect_inputs
        ]
    return rows
