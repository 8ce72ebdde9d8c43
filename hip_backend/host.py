"""The machine the measuring child runs on, as both engines read it: this process's
`/proc/self/status`, the CPU's name, and the cap on its address-space growth.

Standard library only; nothing here imports an engine.
"""

from __future__ import annotations

from core.probes.cpuinfo import read_cpu_name

# What native allocators say when they cannot map memory (oneDNN says the second
# when RLIMIT_AS stops it, libgomp the last when a thread stack cannot be mapped);
# only read as out-of-memory under --memory-cap, by the child and by the launcher.
CAPPED_ALLOCATION_TEXTS = (
    "could not create a primitive",
    "bad_alloc",
    "cannot allocate",
    "thread creation failed",  # libgomp: no room for a worker thread's stack
)


def status_kib(field: str) -> int | None:
    """A `/proc/self/status` field in KiB (VmRSS, VmHWM, VmSize), or None."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def cpu_name() -> str:
    """The CPU's model name (`core.probes.cpuinfo.read_cpu_name`: the name a calibration
    of this CPU's runs is for, and the one the estimate's device is named by)."""
    return read_cpu_name()


def cap_host_memory(cap: int) -> None:
    """Limit further address-space growth to `cap` bytes, so an oversized CPU run fails
    with an allocation error instead of driving the machine into swap."""
    import resource

    size_kib = status_kib("VmSize") or 0
    limit = size_kib * 1024 + cap
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
