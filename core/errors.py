"""One error hierarchy. Every message names the file, key or flag at fault."""

from __future__ import annotations

from pathlib import Path


class VramscopeError(Exception):
    """Base class of every error vramscope reports to a user as one line."""


class UsageError(VramscopeError):
    """A command-line flag or argument has a value that cannot be used."""

    def __init__(self, flag: str, problem: str) -> None:
        self.flag = flag
        self.problem = problem
        super().__init__(f"{flag}: {problem}")


class ModelError(VramscopeError):
    """A model cannot be read at all (as opposed to a file that falls back)."""

    def __init__(self, path: Path | str, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class ModelNotFoundError(ModelError):
    """A MODEL argument names nothing vramscope can find."""


class OversizedFileError(ModelError):
    """A `config.json` or index larger than vramscope reads. mlxcel reads any size, so
    falling back would answer for another model (a 1,000,000-layer config is 3.79 TB
    to mlxcel and 15.65 GiB to the 7 B fallback): the model is refused instead."""


class FileFault(VramscopeError):
    """A file inside a model folder is unusable; callers usually fall back and warn."""

    def __init__(self, path: Path | str, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class HeaderError(FileFault):
    """A safetensors header is malformed, truncated, too large or uses an unknown dtype."""


class GgufError(FileFault):
    """A GGUF file is truncated, malformed, over a cap or of an unknown type, or a split
    set is incomplete: the message names the file and the fault."""


class ConfigError(FileFault):
    """A `config.json` is missing, unreadable, too large or not a JSON object."""


class ShardIndexError(FileFault):
    """A `model.safetensors.index.json` is unusable (ignored, as mlxcel does)."""


def describe_os_error(exc: OSError) -> str:
    """A short lowercase reason for an OSError (`permission denied`, `is a directory`)."""
    if exc.strerror:
        return exc.strerror[0].lower() + exc.strerror[1:]
    return str(exc) or type(exc).__name__


class ShardingError(VramscopeError):
    """A tensor- or pipeline-parallel plan mlx-lm could not run (family, sizes, heads)."""


class HubError(ModelError):
    """A model could not be read from the Hugging Face Hub (gated, missing, unreachable)."""


class HubNotFoundError(HubError, ModelNotFoundError):
    """The Hub says the repo (or the revision) does not exist, or the Hub is off and
    the repo was never read."""


class HubUnreachableError(HubError):
    """The Hub could not be reached, or the connection went away during a read: a
    stored copy may answer instead, and a read may be tried again."""


class HubTimedOutError(HubUnreachableError):
    """The Hub did not answer within the deadline (`--hub-timeout`): unreachable, but
    asking again within the same deadline would not help."""


class HubClientClosedError(HubError):
    """huggingface_hub closed its one shared HTTP client under this request (another
    request of the process failed to connect); asked again, it makes a new one."""


class HubAuthError(HubError):
    """The repo is gated or private, or the Hub refused the token: a token with access
    is needed."""


class HubOfflineError(HubError):
    """The Hub is off (`HF_HUB_OFFLINE`, `--offline`) and nothing stored answers."""


class NotEnoughMemory(VramscopeError):
    """Too little memory to start a command; the message names the limit and the need."""


class NoHomeError(VramscopeError):
    """An environment handed in names no folder for a file vramscope keeps or reads
    (neither the XDG variable nor HOME): the process's own home is never assumed."""

    def __init__(self, variable: str, problem: str) -> None:
        self.variable = variable
        self.problem = problem
        super().__init__(f"{variable}: {problem}")
