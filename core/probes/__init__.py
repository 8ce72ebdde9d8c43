"""Probes: everything that reads the machine (sysfs, /proc, /dev, nvidia-smi, NVML, MLX
in a child, sysctl), one small module per thing read.

A probe returns what it read, or None when nothing answered; it never raises for a
missing or unreadable source. The estimate (core/estimate) is arithmetic over what the
probes read and imports none of them: core/device and core/environment hand the
readings over (tests/test_structure.py checks the rule).
"""
