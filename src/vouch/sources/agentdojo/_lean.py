"""A lighter AgentDojo for the engine's pools: the suites and the replay, without the model SDKs.

Importing any module of ``agentdojo.agent_pipeline`` runs that package's ``__init__``, which
imports every model back-end (Anthropic's, OpenAI's, Cohere's, Google's SDKs: about 3,800
modules), and deepdiff imports pandas if it can. A replay needs none of them: the suites, the
functions runtime and the ground-truth pipeline. A pool that decides AgentDojo's state tasks
pre-imports those between ``install`` and ``restore`` (``vouch.bench.preload_for``): its
warmed size goes from about 200 MB to about 100 MB, and every run forked from it pays for that
size when it is cloned and when it exits.

``install`` puts a bare ``agentdojo.agent_pipeline`` package (the real package's directory,
without its ``__init__``) in ``sys.modules`` and keeps pandas out; ``restore`` takes both out
again, so that a run that does import the whole package or pandas gets the real ones (at its
own cost). The modules themselves are the pinned package's, loaded as they are. Never called in
vouch's own process: only in a pool's warm-up.
"""

from __future__ import annotations

import importlib.util
import sys
import types

_PIPELINE = "agentdojo.agent_pipeline"
_KEPT_OUT = ("pandas",)
_installed: list[str] = []


def install() -> None:
    """Before AgentDojo is imported: a bare pipeline package, and pandas kept out."""
    if _PIPELINE not in sys.modules:
        spec = importlib.util.find_spec(_PIPELINE)
        if spec is not None and spec.submodule_search_locations is not None:
            bare = types.ModuleType(_PIPELINE)
            bare.__path__ = list(spec.submodule_search_locations)
            bare.__package__ = _PIPELINE
            bare.__spec__ = spec
            sys.modules[_PIPELINE] = bare
            _installed.append(_PIPELINE)
    for name in _KEPT_OUT:
        if name not in sys.modules:
            sys.modules[name] = None  # type: ignore[assignment]  # an import of it raises ImportError
            _installed.append(name)


def restore() -> None:
    """After the warm-up: later imports of the package or of pandas find the real ones."""
    while _installed:
        sys.modules.pop(_installed.pop(), None)
