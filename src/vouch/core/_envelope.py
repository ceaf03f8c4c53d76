"""The envelope every ``--json`` output carries, and the ``exec`` report inside one."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 1


class Envelope(BaseModel):
    """Fields every JSON output of vouch starts with; ``vouch report`` dispatches on ``kind``."""

    model_config = ConfigDict(extra="forbid")

    kind: str = Field(description="What this object is: exec, data-stats, bench, baselines, v4v, audit, ...")
    schema_version: int = Field(default=SCHEMA_VERSION, description="Version of this JSON layout.")
    vouch_version: str = Field(description="The vouch release that wrote it.")
    seed: int | None = Field(default=None, description="Seed of every random choice made, if any was.")
    config: dict[str, Any] = Field(default_factory=dict, description="The resolved configuration of the run.")


class IsolationReport(BaseModel):
    """The isolation actually in force for a run."""

    level: Literal["full", "weak"] = Field(description="full: every namespace; weak: the caller opted out.")
    network: bool = Field(description="True when the run could reach a network; false when it had none.")
    user_namespace: bool = Field(description="The run had its own user namespace (root outside is not root inside).")
    pid_namespace: bool = Field(description="The run had its own PID namespace; its whole tree dies with it.")
    mount_namespace: bool = Field(description="The run had its own mount namespace.")
    readonly_root: bool = Field(description="Every host mount was read-only inside the run.")
    private_tmp: bool = Field(description="/tmp, /var/tmp and /dev/shm were private tmpfs mounts.")  # noqa: S108
    uid: int = Field(description="The run's uid as it saw it.")
    host_uid: int = Field(description="The unprivileged uid the run had on the host.")
    hidden_paths: list[str] = Field(description="Paths that appeared empty to the run.")
    hash_seed: str = Field(description="PYTHONHASHSEED of the run.")
    cpu_s: int = Field(description="CPU-time limit per process, in seconds.")
    address_space_mb: int = Field(description="Address-space limit: the pool's own size plus the memory headroom.")
    file_size_mb: int = Field(description="Largest file the run could write, captured output included.")
    processes: int = Field(description="Process limit of the run.")
    open_files: int = Field(description="Open-file limit per process.")
    weak_reason: str | None = Field(default=None, description="Why isolation was weak, when it was.")
    rootless: bool = Field(
        default=False, description="The pool ran without root: the run had the caller's own uid, its files hidden."
    )


class ExecReport(Envelope):
    """``vouch exec --json``: one untrusted file run under the engine."""

    kind: Literal["exec"] = "exec"
    file: str = Field(description="The file that was run, as given.")
    status: Literal["ok", "error", "timeout", "memory", "killed"] = Field(
        description="How the run ended, as its parent observed it."
    )
    reason: str | None = Field(description="Why the status is not ok; null when it is.")
    exit_code: int | None = Field(description="The process's exit code, when it exited.")
    signal: int | None = Field(description="The signal that ended it, when one did.")
    duration_s: float = Field(description="Wall-clock seconds from start to exit.")
    peak_memory_mb: float = Field(description="Peak resident memory, shared pages of the warm pool included.")
    pid: int = Field(description="The run's pid on the host.")
    stdout_tail: str = Field(description="The end of what the run printed on stdout, capped.")
    stderr_tail: str = Field(description="The end of what the run printed on stderr, capped.")
    isolation: IsolationReport = Field(description="The isolation actually in force.")
