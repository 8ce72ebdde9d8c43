"""A finished command as a measured peak (engine `external`), for the history, or the
failure it was (it could not start, it was stopped, nothing of it was read).

The headline figure is the device's where one was read (amdgpu: the VRAM + GTT of its
processes' DRM clients; NVIDIA: NVML's per-process used memory), else the host's (the
sum of its processes' VmHWM at a sample). `peak_kind` names it; the other figures go
beside it (`ExternalFields`). The estimate is the caller's: the held-against answer
for the model at the command's context on the figure's device.
"""

from __future__ import annotations

import datetime
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from core import __version__
from core.backend import Backend
from core.display_text import clean_text
from core.estimate.estimate import KvCacheMode
from core.measurement.command_flags import EngineFamily
from core.measurement.engine import Engine
from core.measurement.fields import ExternalFields, ExternalFigure
from core.measurement.result import (
    FailureKind,
    MeasuredPeak,
    MeasurementFailure,
    UnmeasuredRun,
    status_words,
)
from core.measurement.run import MeasuredRun, RunOutcome
from core.probes.amdgpu_sysfs import read_amdgpu_cards
from hip_backend.external.run import CommandRun
from hip_backend.external.sampler import TreePeaks

HOST_KIND = (
    "host RSS of the command's processes: the largest sum of their VmHWM (each "
    "process's own peak resident memory) at a sample, the runtime's own included"
)
DRM_KIND = "device VRAM + GTT of the command's processes (amdgpu fdinfo, each DRM client once)"
NVML_KIND = "device memory of the command's processes (NVML per-process used memory)"


@dataclass(frozen=True)
class Figure:
    """The headline figure of a run and where it was measured."""

    figure: ExternalFigure
    device_kind: Backend
    device_name: str
    arch: str | None
    peak_bytes: int
    peak_kind: str


def headline(run: CommandRun) -> Figure:
    """The device's figure where one was read, else the host's."""
    peaks = run.peaks
    if peaks.drm_total:
        cards = read_amdgpu_cards()
        card = cards[0] if cards else None
        name = (card.name or card.card) if card is not None else "amdgpu"
        arch = card.gfx_target if card is not None else None
        return Figure(ExternalFigure.DEVICE, Backend.ROCM, name, arch, peaks.drm_total, DRM_KIND)
    if peaks.nvml:
        return Figure(
            ExternalFigure.DEVICE, Backend.CUDA, "NVIDIA GPU", None, peaks.nvml, NVML_KIND
        )
    return Figure(ExternalFigure.HOST, Backend.CPU, "host", None, run.host_peak_bytes, HOST_KIND)


def command_text(argv: Sequence[str]) -> str:
    """The command as one shell line, control characters stripped."""
    return clean_text(shlex.join(argv))


def external_peak(
    run: CommandRun,
    argv: Sequence[str],
    *,
    model: str,
    family: EngineFamily,
    context_tokens: int,
    kv_int8: bool,
    inflight_mib: int,
    estimate_for: Callable[[Backend], int | None],
) -> MeasuredPeak:
    """The run as a history record, its estimate taken at its figure's device."""
    shown = headline(run)
    peaks = run.peaks
    fields = ExternalFields(
        command=command_text(argv),
        family=family,
        figure=shown.figure,
        exit_status=run.exit_status,
        host_peak_bytes=run.host_peak_bytes,
        host_rss_peak_bytes=peaks.host_rss,
        device_peak_bytes=shown.peak_bytes if shown.figure is ExternalFigure.DEVICE else None,
        drm_vram_peak_bytes=peaks.drm_vram,
        drm_gtt_peak_bytes=peaks.drm_gtt,
        card_used_delta_bytes=peaks.card_delta,
        nvml_peak_bytes=peaks.nvml,
        interval_s=run.interval_s,
        samples=peaks.samples,
        wall_seconds=round(run.wall_seconds, 3),
        other_gpu_processes=sorted(peaks.others),
        exit_signal=run.signal,
        maxrss_bytes=run.maxrss_bytes,
        cgroup_peak_bytes=run.cgroup_peak_bytes,
        followed_by=run.followed_by,
    )
    queue = shown.device_kind.has_inflight_reserve
    return MeasuredPeak(
        model=clean_text(model),
        device_kind=shown.device_kind,
        device_name=clean_text(shown.device_name),
        peak_bytes=shown.peak_bytes,
        peak_kind=shown.peak_kind,
        inflight_mib=inflight_mib if queue else 0,
        prompt_tokens=0,
        gen_tokens=context_tokens,
        synthetic_weights=False,
        load_seconds=0.0,
        prefill_tokens_per_s=0.0,
        decode_tokens_per_s=0.0,
        torch_version="",
        arch=shown.arch,
        estimate_bytes=estimate_for(shown.device_kind),
        timestamp=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        vramscope_version=__version__,
        extra=fields.to_extra(),
        warmup_tokens=0,
        engine=Engine.EXTERNAL,
        kv_cache_mode=KvCacheMode.INT8 if kv_int8 else KvCacheMode.FP16,
    )


CommandFinish = Callable[[CommandRun], MeasuredPeak]
"""The caller's peak of a command that ran (`external_peak` with its estimate)."""


def command_outcome(run: CommandRun, finish: CommandFinish) -> RunOutcome:
    """The run as one outcome: the failure when it could not start, was stopped, or
    nothing of it was read (0 samples and no ru_maxrss of its own: "not measured",
    never a 0-byte peak); else its peak, whatever its exit status (which the peak
    records: a failed run is never covered)."""
    status = run.exit_status
    if run.error is not None:
        return MeasurementFailure(FailureKind.CANNOT_START, run.error)
    if run.stopped:
        return MeasurementFailure(
            FailureKind.CANCELLED, "cancelled: every process of the command was killed", status
        )
    if not run.measured:
        return MeasurementFailure(
            FailureKind.NOT_MEASURED,
            f"not measured: the command ended ({status_words(status, run.signal)}) "
            f"{run.wall_seconds:.2f} s after its start, before the first sample (every "
            f"{run.interval_s:g} s), and its ru_maxrss was no more than the pages it "
            "started from",
            status,
        )
    return MeasuredRun((finish(run),))


def unmeasured_run(
    run: CommandRun, finish: CommandFinish, failure: MeasurementFailure
) -> UnmeasuredRun:
    """A not-measured run as the history records it: the model, command, context and
    estimate `finish` names, its peak "not measured" (no figure) and why."""
    peak = finish(run)
    fields = peak.fields
    command = fields.command if isinstance(fields, ExternalFields) else command_text(())
    return UnmeasuredRun(
        model=peak.model,
        command=command,
        context_tokens=peak.context_tokens,
        inflight_mib=peak.inflight_mib,
        estimate_bytes=peak.estimate_bytes,
        failure=failure,
        timestamp=peak.timestamp,
        vramscope_version=peak.vramscope_version,
    )


class SampleNotices:
    """What a sample has to say once: other processes on the GPU (the guard), and a
    command that stopped (said again if it stops again after running)."""

    GUARD = (
        "other processes use the GPU during the run (pid {pids}): the card's own figures "
        "count them; the command's per-process figures do not"
    )
    STOPPED = (
        "the command is stopped (SIGSTOP or Ctrl-Z), and vramscope waits for it: "
        "`kill -CONT {pids}` resumes it"
    )

    def __init__(self) -> None:
        self._guarded = False
        self._stopped: tuple[int, ...] = ()

    def of(self, peaks: TreePeaks) -> list[str]:
        """The lines this sample adds."""
        out = []
        if peaks.others and not self._guarded:
            self._guarded = True
            out.append(self.GUARD.format(pids=", ".join(map(str, sorted(peaks.others)[:8]))))
        stopped = tuple(peaks.stopped)
        if stopped and not self._stopped:
            out.append(self.STOPPED.format(pids=" ".join(map(str, stopped[:8]))))
        self._stopped = stopped
        return out
