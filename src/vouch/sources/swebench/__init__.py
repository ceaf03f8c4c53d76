"""SWE-bench instances as ``code`` tasks whose candidates are patches (``_tasks``, built by
``_build``): candidate patches (``_cases``, ``_refactor``), the reference verifier run as T0 in a
candidate's world (``_check``) and a harness run directory read as trials (``_rundir``). The
SWE-bench machinery itself (instances, environments, harness, logs) is ``vouch.swebench``'s."""
