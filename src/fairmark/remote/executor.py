"""A trial executed on a host by its agent: the same seam as the local executor (`TrialSpec` → `Measured`, see
`fairmark.run.spec`), so the runner treats a remote trial like a local one. Times and rusage are taken on the
host; the output tails come back and are written where the runner reads them."""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from fairmark.remote.confine import UnsafeName, inside, write_inside
from fairmark.remote.connection import AgentError, ConnectionLost, HostConnection, NoAnswer, ProtocolError
from fairmark.remote.profiling import host_artifacts
from fairmark.run.hooks import Artifact
from fairmark.run.monitors.base import build_series
from fairmark.run.monitors.freebsd import parse_sysctl, sysctl_command, to_snapshot
from fairmark.run.monitors.linux import SAMPLE_FILES, snapshot_from
from fairmark.run.spec import Measured, TrialSpec


def env_delta(env: Mapping[str, str] | None) -> tuple[dict[str, str], list[str]]:
    """What the runner's environment changes relative to the controller's own: only that travels to the host
    (the host keeps its own PATH, HOME …; the controller's secrets stay here)."""
    if env is None:
        return {}, []
    here = os.environ
    changed = {k: v for k, v in env.items() if here.get(k) != v}
    return changed, sorted(k for k in here if k not in env)


class RemoteExecutor:
    """Same seam as `fairmark.run.launch.executor.execute_spec` (`TrialSpec` → `Measured`, see `fairmark.run.spec`). `on_reconnect` runs after a reconnection (the
    runner re-applies the host's system changes, which the lost agent restored)."""

    def __init__(
        self,
        conn: HostConnection,
        on_reconnect: Callable[[], None] | None = None,
        monitor_interval_s: float | None = None,
    ):
        self.conn, self.on_reconnect = conn, on_reconnect
        self.monitor_interval_s = monitor_interval_s
        self.last_boot_id: str | None = None
        self._artifacts: list[Artifact] = []
        self.down: ConnectionLost | None = None  # the host stayed away: the next trial interrupts the run
        # The next trial's profiler there, {"name", "ctx"} (set by remote.profiling.RemoteProfile), else None
        self.profile: dict[str, Any] | None = None

    def take_artifacts(self) -> list[Artifact]:
        """The last trial's artifacts made on the host (its monitor series), handed over once."""
        out, self._artifacts = self._artifacts, []
        return out

    def _monitor_request(self) -> dict[str, Any] | None:
        if not self.monitor_interval_s:
            return None
        if self.conn.hello.get("os") == "freebsd":
            return {"interval_s": self.monitor_interval_s, "command": sysctl_command()}

        return {"interval_s": self.monitor_interval_s, "files": [f"/proc/{f}" for f in SAMPLE_FILES]}

    def _monitor_series(self, got: dict[str, Any]) -> None:
        os_name = str(self.conn.hello.get("os"))
        if os_name == "freebsd":
            snaps = [
                to_snapshot(parse_sysctl(s["texts"].get("command", "")), s["t_s"]) for s in got["samples"]
            ]
        else:
            snaps = [
                snapshot_from({k.removeprefix("/proc/"): v for k, v in s["texts"].items()}, s["t_s"])
                for s in got["samples"]
            ]
        series = build_series(snaps, os_name=os_name, interval_s=float(self.monitor_interval_s or 1.0))
        series["host"] = self.conn.spec.name
        if got.get("errors"):
            series["sample_errors"] = got["errors"]
        self._artifacts = [
            Artifact(kind="monitor", name="system", content_type="application/json", data=series)
        ]

    def __call__(self, spec: TrialSpec) -> Measured:
        if self.down is not None:
            raise self.down
        Path(spec.out_dir).mkdir(parents=True, exist_ok=True)
        env_set, env_unset = env_delta(spec.env)
        mkdirs = [env_set[k] for k in ("FAIRMARK_SCRATCH",) if k in env_set]
        # The spec travels without its env: the host keeps its own environment plus what the plan changes.
        wire = spec.to_dict() | {"env": None}
        # A profiled trial is profiled alone there, as here (no monitor beside its profiler).
        profile, self.profile = self.profile, None
        extra = {"profile": profile} if profile else {"monitor": self._monitor_request()}
        try:
            res = self.conn.call(
                "exec", spec=wire, env_set=env_set, env_unset=env_unset, mkdirs=mkdirs, **extra
            )
        except (ProtocolError, NoAnswer) as exc:
            return self._refused(spec, exc)
        except ConnectionLost as exc:
            return self._lost(spec, exc)
        except AgentError as exc:
            if not profile:
                raise
            # Its profiler could not start there (checked at connect: the host changed since): this profiled
            # trial fails with why, the run goes on.
            self._outputs(spec, b"", exc.message.encode())
            return Measured.not_started(spec, f"host {self.conn.spec.name}: {exc.message}")
        try:
            host = self.conn.spec.name
            self._outputs(
                spec, _bytes(res.pop("stdout_b64", ""), host), _bytes(res.pop("stderr_b64", ""), host)
            )
            self._files(spec, res.pop("files", {}))
        except ProtocolError as exc:
            return self._refused(spec, exc)
        self.last_boot_id = res.pop("boot_id", None)
        if res.get("monitor"):
            self._monitor_series(res.pop("monitor"))
        if "profile" in res:
            self._artifacts += host_artifacts(self.conn.spec.name, res.pop("profile"))
        return Measured.from_dict(
            res["measured"] | {"stdout_path": spec.stdout_path, "stderr_path": spec.stderr_path}
        )

    def _refused(self, spec: TrialSpec, exc: ConnectionLost) -> Measured:
        """The host broke the protocol, or did not answer in time: this trial fails with why, and the next one
        interrupts the run (another session would meet the same agent; `fairmark resume RUN` once the host is
        fixed)."""
        self._outputs(spec, b"", str(exc).encode())
        self.down = exc
        return Measured.not_started(spec, exc.message)

    def _lost(self, spec: TrialSpec, exc: ConnectionLost) -> Measured:
        """The connection went away during the trial: it fails; reconnected, the run goes on, else the next trial
        interrupts it."""
        self._outputs(spec, b"", str(exc).encode())
        try:
            self._reconnect()
        except ConnectionLost as gone:
            self.down = gone
            return Measured.not_started(
                spec, f"connection lost to host {self.conn.spec.name} during the trial; could not reconnect"
            )
        return Measured.not_started(
            spec, f"connection lost to host {self.conn.spec.name} during the trial; reconnected"
        )

    def _outputs(self, spec: TrialSpec, stdout: bytes, stderr: bytes) -> None:
        """The trial's output tails, at the paths the controller chose (made afresh: no link planted there is
        followed)."""
        for path, data in ((spec.stdout_path, stdout), (spec.stderr_path, stderr)):
            write_inside(os.path.dirname(path), os.path.basename(path), data)

    def _files(self, spec: TrialSpec, got: dict[str, str]) -> None:
        """The output files the trial's spec asked for, each written at its own path inside the trial's output
        directory; a file the host was not asked for is a protocol error (docs/security.md)."""
        host = self.conn.spec.name
        for path, b64 in got.items():
            rel = inside(spec.out_dir, path) if path in spec.files else None
            if rel is None:
                raise ProtocolError(
                    f"host {host}: protocol error: exec answered a file it was not asked for: {path!r}"
                )
            try:
                write_inside(spec.out_dir, rel, _bytes(b64, host))
            except UnsafeName as exc:
                raise ProtocolError(
                    f"host {host}: protocol error: exec: output file {path!r}: {exc}"
                ) from None

    def _reconnect(self) -> None:
        self.conn.reconnect()
        if self.on_reconnect:
            self.on_reconnect()


def _bytes(b64: str, host: str) -> bytes:
    """Base64 text of an answer as bytes (the answer's shape was checked by the connection: a str)."""
    try:
        return base64.b64decode(b64, validate=True)
    except ValueError:
        raise ProtocolError(f"host {host}: protocol error: an output is not base64") from None
