"""MLX's own hostfile for `mlx.launch --backend ring --hostfile FILE`, checked up front.

The format is mlx.launch's (mlx/_distributed_utils/common.py, `Hostfile.from_file`):
a JSON list of hosts, or an object `{"backend": ..., "envs": [...], "hosts": [...]}`,
each host `{"ssh": NAME, "ips": [IP, ...]}`. mlx.launch starts one rank per host, in
file order (so the file, not `-n`, sets the rank count); the ring backend needs IP
addresses, and rank r listens on the next `len(ips)` ports from `--starting-port`.
A host whose `ssh` is exactly `127.0.0.1` runs locally; any other is reached with ssh.

mlx.launch reports a bad file with a Python traceback or an argparse usage line
after it has started; vramscope reads the same file first and refuses it with one
line naming the file and what is wrong (exit 2).
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import UsageError, describe_os_error
from core.regular_file import read_regular

MAX_HOSTFILE_BYTES = 1 << 20  # a hostfile names a few hosts; anything larger is not one
FLAG = "--hostfile"


@dataclass(frozen=True)
class RingHost:
    """One rank's host: the name mlx.launch runs it on and the IPs it listens on."""

    ssh: str
    ips: tuple[str, ...]

    @property
    def local(self) -> bool:
        """mlx.launch runs the rank without ssh only for this exact name."""
        return self.ssh == "127.0.0.1"


@dataclass(frozen=True)
class RingHostfile:
    """A hostfile mlx.launch's ring backend accepts, for exactly as many ranks as the plan."""

    path: Path
    hosts: tuple[RingHost, ...]

    @property
    def ports(self) -> int:
        """Ports mlx.launch hands out from `--starting-port` (one per rank and IP)."""
        return sum(len(h.ips) for h in self.hosts)

    @property
    def local(self) -> bool:
        """Every rank runs on this machine."""
        return all(h.local for h in self.hosts)


def _fail(path: Path, problem: str) -> UsageError:
    return UsageError(FLAG, f"{path}: {problem}")


def read_hostfile(text_path: str, ranks: int) -> RingHostfile:
    """Read and check `--hostfile`; raises UsageError (one line, exit 2) if mlx.launch's
    ring backend would refuse it or run a different number of ranks than `ranks`."""
    path = Path(text_path).expanduser().absolute()
    try:
        raw = read_regular(path, MAX_HOSTFILE_BYTES)  # a FIFO is refused, never waited on
    except OSError as exc:
        raise _fail(path, f"cannot read it ({describe_os_error(exc)})") from None
    if len(raw) > MAX_HOSTFILE_BYTES:
        raise _fail(path, f"larger than {MAX_HOSTFILE_BYTES} bytes; not an MLX hostfile")
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise _fail(path, "not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise _fail(path, f"not JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:  # `[[[[...` 100,000 deep: no hostfile nests past two levels
        raise _fail(path, "JSON nested too deep to be an MLX hostfile") from None
    hosts_data: Any
    if isinstance(data, dict):
        # mlx.launch's own word for its transport, read at the file's boundary (not
        # vramscope's Backend).
        transport = data.get("backend", "")
        if transport not in ("", "ring"):
            raise _fail(
                path,
                f"names backend {str(transport)[:40]!r}; vramscope measures with the ring backend",
            )
        _check_envs(path, data.get("envs", []))
        if "hosts" not in data:
            raise _fail(path, 'has no "hosts" list')
        hosts_data = data["hosts"]
    else:
        hosts_data = data
    if not isinstance(hosts_data, list) or not hosts_data:
        raise _fail(path, 'the hosts must be a non-empty JSON list of {"ssh": ..., "ips": [...]}')
    hosts = tuple(_host(path, i, h) for i, h in enumerate(hosts_data))
    if len(hosts) != ranks:
        raise _fail(
            path,
            f"lists {len(hosts)} host{'s' if len(hosts) != 1 else ''} but the plan has "
            f"{ranks} ranks (mlx.launch starts one rank per host entry)",
        )
    return RingHostfile(path, hosts)


def _host(path: Path, index: int, entry: Any) -> RingHost:
    where = f"host {index}"
    if not isinstance(entry, dict):
        raise _fail(path, f'{where} is not an object {{"ssh": ..., "ips": [...]}}')
    ssh = entry.get("ssh")
    if not isinstance(ssh, str) or not ssh.strip():
        raise _fail(path, f'{where} has no "ssh" host name')
    ips = entry.get("ips")
    if not isinstance(ips, list) or not ips:
        raise _fail(path, f'{where} has no "ips" list (the ring backend needs IP addresses)')
    for ip in ips:
        try:
            ipaddress.ip_address(ip if isinstance(ip, str) else "")
        except ValueError:
            raise _fail(path, f"{where}: {str(ip)[:60]!r} is not an IP address") from None
    return RingHost(ssh, tuple(ips))


def _check_envs(path: Path, envs: Any) -> None:
    if not isinstance(envs, list):
        raise _fail(path, '"envs" is not a list of "NAME=VALUE" strings')
    for e in envs:
        key = e.split("=", 1)[0] if isinstance(e, str) else ""
        if not key or not all(c.isalnum() or c == "_" for c in key):
            raise _fail(path, f'"envs": {str(e)[:60]!r} is not NAME=VALUE')
