"""What an engine's own command line says about its load: the model and the context.

`vramscope run -- CMD ARGS...` holds the command's peak against the estimate for the
model it loads at the context it asks for. For the engines users run, those are read
from the command's own flags, one small reader per family (pure: argv in, facts out):

- mlx-lm: `mlx_lm.generate`, `mlx_lm generate`, `python -m mlx_lm generate` (or
  `-m mlx_lm.generate`): `--model`, `--max-tokens/-m` (default 100), `--max-kv-size`,
  `--kv-bits 8`; the prompt is text, so its tokens are not counted;
- mlxcel: `mlxcel generate|serve|bench`: `-m/--model`, `-n/--max-tokens`; `serve`'s
  per-slot window `--ctx-size C` / `--parallel N`;
- llama.cpp: `llama-cli`, `llama-server`, `llama-completion`: `-m/--model`,
  `-c/--ctx-size`.

What cannot be read is said, in one line (`CommandFacts.unread`); that includes a
count past u64 (`inspect`'s own range for a context), read without converting a
5,000-digit word whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from core.display_text import clean_text
from core.kind import Kind
from core.numbers import decimal_to_int
from core.units import U64_MAX


class EngineFamily(Kind):
    """Whose command line a command is."""

    MLX_LM = "mlx-lm"
    MLXCEL = "mlxcel"
    LLAMA_CPP = "llama.cpp"
    OTHER = "other"


MLX_LM_DEFAULT_MAX_TOKENS = 100
"""`mlx_lm generate`'s `--max-tokens` default (mlx-lm 0.32)."""


@dataclass(frozen=True)
class CommandFacts:
    """What a command's flags say (None: not said, or not readable)."""

    family: EngineFamily
    model: str | None = None
    context_tokens: int | None = None
    kv_int8: bool = False
    unread: tuple[str, ...] = ()
    """What could not be read, each in a few words."""

    @property
    def unread_line(self) -> str | None:
        """The one line that says what could not be read (None: everything was)."""
        if not self.unread:
            return None
        return f"from the command's flags ({self.family.value}): " + "; ".join(self.unread)


def _program(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def _flags(args: Sequence[str], names: Mapping[str, str]) -> dict[str, str]:
    """`--flag value` and `--flag=value` of the named flags (`names`: flag -> key); the
    last one given wins."""
    out: dict[str, str] = {}
    i = 0
    while i < len(args):
        word = args[i]
        flag, eq, value = word.partition("=")
        if flag in names and eq and flag.startswith("--"):
            out[names[flag]] = value
        elif word in names and i + 1 < len(args):
            out[names[word]] = args[i + 1]
            i += 1
        i += 1
    return out


def _tokens(text: str | None, flag: str = "", unread: list[str] | None = None) -> int | None:
    """A count of whole tokens (None: not digits, or out of range, which `unread` says)."""
    text = (text or "").strip()
    if not (text.isascii() and text.isdigit()):
        return None
    value = decimal_to_int(text)
    if value is None or value > U64_MAX:
        if unread is not None:
            shown = clean_text(text) if len(text) <= 24 else f"{text[:12]}…' ({len(text):,} digits"
            unread.append(f"{flag} '{shown}' is out of range (at most {U64_MAX:,})")
        return None
    return value


def _strip_launcher(argv: Sequence[str]) -> list[str]:
    """argv without a leading `env`, `VAR=value` words and `uv run` / `uvx`."""
    words = list(argv)
    while words:
        head = _program(words[0])
        if head == "env" or ("=" in words[0] and not words[0].startswith("-")):
            words = words[1:]
        elif head == "uv" and words[1:2] == ["run"]:
            words = words[2:]
        elif head == "uvx":
            words = words[1:]
        else:
            break
    return words


def _mlx_lm_rest(words: list[str]) -> list[str] | None:
    """The arguments of an mlx-lm generate command, or None when it is not one."""
    program = _program(words[0]) if words else ""
    if program == "mlx_lm.generate":
        return words[1:]
    if program == "mlx_lm" and words[1:2] == ["generate"]:
        return words[2:]
    if program.startswith("python") and "-m" in words:
        at = words.index("-m")
        module = words[at + 1 : at + 2]
        if module == ["mlx_lm.generate"]:
            return words[at + 2 :]
        if module == ["mlx_lm"] and words[at + 2 : at + 3] == ["generate"]:
            return words[at + 3 :]
    return None


def _mlx_lm(rest: list[str]) -> CommandFacts:
    flags = _flags(
        rest,
        {
            "--model": "model",
            "--max-tokens": "max_tokens",
            "-m": "max_tokens",
            "--max-kv-size": "max_kv",
            "--kv-bits": "kv_bits",
        },
    )
    unread = ["the prompt's tokens (text) are not counted"]
    model = flags.get("model")
    if model is None:
        unread.append("no --model (mlx-lm's default model is not assumed)")
    said = len(unread)
    given = flags.get("max_tokens", str(MLX_LM_DEFAULT_MAX_TOKENS))
    context = _tokens(given, "--max-tokens", unread)
    if context is None and len(unread) == said:
        unread.append(f"--max-tokens '{clean_text(given)[:40]}' is not a token count")
    said = len(unread)
    cap = _tokens(flags.get("max_kv"), "--max-kv-size", unread)
    if len(unread) > said:
        context = None  # a cap past range: the context it caps is not known
    if context is not None and cap is not None:
        context = min(context, cap)
    return CommandFacts(
        EngineFamily.MLX_LM, model, context, flags.get("kv_bits") == "8", tuple(unread)
    )


def _mlxcel(words: list[str]) -> CommandFacts:
    sub = words[1] if len(words) > 1 else ""
    rest = words[2:]
    flags = _flags(
        rest,
        {
            "--model": "model",
            "-m": "model",
            "--max-tokens": "max_tokens",
            "-n": "max_tokens",
            "--ctx-size": "ctx",
            "-c": "ctx",
            "--parallel": "parallel",
            "--kv-cache-mode": "kv",
        },
    )
    unread: list[str] = []
    model = flags.get("model")
    if model is None:
        unread.append("no -m/--model")
    past: list[str] = []  # counts past range, each said once
    context = _tokens(flags.get("max_tokens"), "-n/--max-tokens", past)
    if sub == "serve" and context is None and not past:
        ctx = _tokens(flags.get("ctx"), "--ctx-size", past)
        slots = _tokens(flags.get("parallel"), "--parallel", past)
        context = ctx // (slots or 1) if ctx and not past else None
    if sub not in ("generate", "serve", "bench"):
        unread.append(f"'{sub}' is not generate, serve or bench")
    unread += past
    if context is None and not past:
        unread.append("no context (-n/--max-tokens, or serve's --ctx-size)")
    return CommandFacts(
        EngineFamily.MLXCEL, model, context, flags.get("kv") == "int8", tuple(unread)
    )


def _llama_cpp(words: list[str]) -> CommandFacts:
    flags = _flags(words[1:], {"--model": "model", "-m": "model", "--ctx-size": "ctx", "-c": "ctx"})
    unread = []
    model = flags.get("model")
    if model is None:
        unread.append("no -m/--model")
    past: list[str] = []
    context = _tokens(flags.get("ctx"), "-c/--ctx-size", past)
    unread += past
    if not context and not past:
        # 0 or absent: llama.cpp takes the model's own, which GGUF holds
        unread.append("no -c/--ctx-size (llama.cpp's default is the model's own)")
    context = context or None
    return CommandFacts(EngineFamily.LLAMA_CPP, model, context, False, tuple(unread))


def read_command(argv: Sequence[str]) -> CommandFacts:
    """The facts a command's flags give (a family vramscope does not read: none)."""
    words = _strip_launcher(argv)
    rest = _mlx_lm_rest(words)
    if rest is not None:
        return _mlx_lm(rest)
    program = _program(words[0]) if words else ""
    if program == "mlxcel":
        return _mlxcel(words)
    if program in ("llama-cli", "llama-server", "llama-completion"):
        return _llama_cpp(words)
    return CommandFacts(
        EngineFamily.OTHER,
        unread=("not an engine whose flags vramscope reads (mlx-lm, mlxcel, llama.cpp)",),
    )
