"""llama.cpp's own memory lines, read from its log (llama-server, llama-cli, llama-fit-params).

llama.cpp prints each buffer it allocates, per device, in MiB with two decimals:

    load_tensors:   CPU_Mapped model buffer size =   511.79 MiB
    llama_kv_cache:      ROCm0 KV buffer size =   128.00 MiB
    llama_kv_cache: size =  128.00 MiB (  4096 cells,  32 layers,  1/1 seqs), K (f16): ...
    llama_memory_recurrent: size =    0.38 MiB (     1 cells,   6 layers, ...), R (f32): ...
    llama_context:  ROCm_Host  output buffer size =     0.49 MiB
    sched_reserve:      ROCm0 compute buffer size =   300.01 MiB

A figure is kept in bytes (`round(MiB * 2**20)`), good to the ±0.005 MiB it was printed
with (±5,243 bytes). Lines may carry a log prefix (timestamps, a level letter) and other
text may surround them: each is matched on its own, anywhere in a line. Text from another
program's log is untrusted: numbers are bounded and a device name is kept to 32
characters of `[A-Za-z0-9_.-]`, with an RPC server's `[host:port]` after it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.kind import Kind


class LlamaCppBufferKind(Kind):
    """What a llama.cpp buffer holds, as its log names it (the value is the word the
    history and `run --json` write)."""

    MODEL = "model"
    KV = "kv"
    """The KV cache, a recurrent model's state buffers included."""
    OUTPUT = "output"
    COMPUTE = "compute"


MIB = 1024 * 1024
PRINTED_RESOLUTION_BYTES = 5243
"""Half of the 0.01 MiB llama.cpp prints: a parsed figure is this close to the true one."""
_MAX_MIB = 1 << 40  # a petabyte-scale figure is not a buffer line

_NUM = r"(\d{1,15}(?:\.\d{1,6})?)"
# Buffer type names: `CPU_Mapped`, `ROCm0`, `CUDA_Host`, `Vulkan0`, `RPC0[127.0.0.1:50052]`.
_DEV = r"([A-Za-z0-9_.\-]{1,32}(?:\[[A-Za-z0-9_.:\-]{1,64}\])?)"
_MODEL = re.compile(rf"load_tensors:\s+{_DEV} model buffer size\s*=\s*{_NUM} MiB")
_KV_BUF = re.compile(rf"llama_kv_cache:\s+{_DEV} KV buffer size\s*=\s*{_NUM} MiB")
_RS_BUF = re.compile(rf"llama_memory_recurrent:\s+{_DEV} RS buffer size\s*=\s*{_NUM} MiB")
_OUTPUT = re.compile(rf"llama_context:\s+{_DEV}\s+output buffer size\s*=\s*{_NUM} MiB")
_COMPUTE = re.compile(rf"\w+:\s+{_DEV} compute buffer size\s*=\s*{_NUM} MiB")
# At teardown (debug level) llama.cpp prints the compute buffer again, to four decimals.
_COMPUTE_FINE = re.compile(
    rf"~llama_context:\s+{_DEV} compute buffer size is\s+{_NUM} MiB, matches expectation"
)
_KV_SIZE = re.compile(
    rf"llama_kv_cache: size\s*=\s*{_NUM} MiB"
    rf" \(\s*(\d+) cells,\s*(\d+) layers,\s*(\d+)/\s*(\d+) seqs\),"
    rf" K \(([a-z0-9_]+)\):\s*{_NUM} MiB, V \(([a-z0-9_]+)\):\s*{_NUM} MiB"
)
_RS_SIZE = re.compile(
    rf"llama_memory_recurrent: size\s*=\s*{_NUM} MiB \(\s*(\d+) cells,\s*(\d+) layers"
)


def _bytes(mib: str) -> int:
    value = float(mib)
    return round(min(value, _MAX_MIB) * MIB)


@dataclass(frozen=True)
class DeviceBuffer:
    """One buffer line: what it holds, the buffer type's name and its bytes."""

    device: str
    """llama.cpp's buffer type name: `CPU_Mapped`, `CPU`, `ROCm0`, `CUDA0`, `ROCm_Host`..."""
    bytes: int


@dataclass(frozen=True)
class KvCacheLine:
    """One `llama_kv_cache: size = ...` line (a sliding-window model prints two)."""

    bytes: int
    cells: int
    layers: int
    seqs: int
    streams: int
    type_k: str
    k_bytes: int
    type_v: str
    v_bytes: int


@dataclass(frozen=True)
class RecurrentLine:
    """One `llama_memory_recurrent: size = ...` line."""

    bytes: int
    cells: int
    layers: int


@dataclass(frozen=True)
class LlamaCppLog:
    """Every memory line found in one log, in the order printed."""

    model: tuple[DeviceBuffer, ...]
    kv_buffers: tuple[DeviceBuffer, ...]
    recurrent_buffers: tuple[DeviceBuffer, ...]
    output: tuple[DeviceBuffer, ...]
    compute: tuple[DeviceBuffer, ...]
    kv_caches: tuple[KvCacheLine, ...]
    recurrent: tuple[RecurrentLine, ...]
    compute_fine: tuple[DeviceBuffer, ...] = ()
    """The compute buffers as the teardown prints them (0.0001 MiB), when it did."""

    @property
    def kv_bytes(self) -> int:
        """The KV caches and recurrent state, as their `size =` lines print them."""
        return sum(k.bytes for k in self.kv_caches) + sum(r.bytes for r in self.recurrent)

    @property
    def found(self) -> bool:
        return any((self.model, self.kv_caches, self.recurrent, self.output, self.compute))

    def by_device(self) -> dict[str, dict[str, int]]:
        """`{device: {"model": bytes, "kv": ..., "output": ..., "compute": ...}}`."""
        table: dict[str, dict[str, int]] = {}
        for kind, bufs in (
            ("model", self.model),
            ("kv", self.kv_buffers + self.recurrent_buffers),
            ("output", self.output),
            ("compute", self.compute),
        ):
            for b in bufs:
                row = table.setdefault(b.device, {})
                row[kind] = row.get(kind, 0) + b.bytes
        return table


def parse_llama_log(text: str) -> LlamaCppLog:
    """Every llama.cpp memory line in `text` (a whole log, or a part of one)."""
    model: list[DeviceBuffer] = []
    kv_bufs: list[DeviceBuffer] = []
    rs_bufs: list[DeviceBuffer] = []
    output: list[DeviceBuffer] = []
    compute: list[DeviceBuffer] = []
    fine: list[DeviceBuffer] = []
    kv: list[KvCacheLine] = []
    rs: list[RecurrentLine] = []
    for line in text.splitlines():
        if len(line) > 4096:
            continue
        if m := _KV_SIZE.search(line):
            kv.append(
                KvCacheLine(
                    bytes=_bytes(m[1]),
                    cells=int(m[2]),
                    layers=int(m[3]),
                    seqs=int(m[4]),
                    streams=int(m[5]),
                    type_k=m[6],
                    k_bytes=_bytes(m[7]),
                    type_v=m[8],
                    v_bytes=_bytes(m[9]),
                )
            )
        elif m := _RS_SIZE.search(line):
            rs.append(RecurrentLine(_bytes(m[1]), int(m[2]), int(m[3])))
        elif m := _COMPUTE_FINE.search(line):
            fine.append(DeviceBuffer(m[1], _bytes(m[2])))
            continue
        for pattern, into in (
            (_MODEL, model),
            (_KV_BUF, kv_bufs),
            (_RS_BUF, rs_bufs),
            (_OUTPUT, output),
            (_COMPUTE, compute),
        ):
            if m := pattern.search(line):
                into.append(DeviceBuffer(m[1], _bytes(m[2])))
                break
    return LlamaCppLog(
        tuple(model),
        tuple(kv_bufs),
        tuple(rs_bufs),
        tuple(output),
        tuple(compute),
        tuple(kv),
        tuple(rs),
        tuple(fine),
    )
