"""The explorer's Available choices: this machine's detected budget, this device's total
or free memory, a typed size, or a device preset (`core.answer.presets`, shared with the
command line's `--preset`)."""

from __future__ import annotations

from core.answer.presets import PRESETS, PRESETS_BY_KEY, MemoryPreset, preset_keys
from core.device_memory import Budget

DETECTED = "detected"
CUSTOM = "custom"
DEVICE_TOTAL = "device-total"
DEVICE_FREE = "device-free"
DEVICE_KEYS = {DEVICE_TOTAL: Budget.TOTAL, DEVICE_FREE: Budget.FREE}
"""This device's total or free memory, read as `--memory-limit total|free` reads it."""

__all__ = [
    "CUSTOM",
    "DETECTED",
    "DEVICE_FREE",
    "DEVICE_KEYS",
    "DEVICE_TOTAL",
    "PRESETS",
    "PRESETS_BY_KEY",
    "MemoryPreset",
    "preset_keys",
]
