"""Settings from defaults < ragraf.toml / [tool.ragraf] < RAGRAF_* environment, and the index home."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ragraf.corpus.gitcmd import run_watched
from ragraf.errors import ConfigError, UsageError

CHUNKER_VERSION = "3"
FACTS_VERSION = "9"
REDACTION_VERSION = "1"  # corpus/secrets.py's rules: changing them rebuilds the index


@dataclass(frozen=True)
class Settings:
    """Everything configurable; field names are the config keys (RAGRAF_<UPPER> in the env)."""

    root: Path
    home: Path = field(default=Path())
    store: str = "sqlite"
    pg_dsn: str = ""
    pg_repo: str = ""  # the repository's name in a shared PostgreSQL database; default: the root path
    embedder: str = "local"
    embed_model: str = ""
    embed_url: str = ""
    embed_api_key: str = ""
    embed_batch_size: int = 32
    embed_timeout_s: float = 120.0
    embed_max_chunks: int = 0  # transformer-tier chunks one index run embeds, most valuable first; 0: all
    cache_dir: str = ""
    cache: bool = True
    max_file_bytes: int = 1024 * 1024
    max_line_chars: int = 4000
    chunk_max_chars: int = 1500
    chunk_min_chars: int = 250
    keep_revisions: int = 20
    reindex_on_drift: str = "warn"
    auto_reindex_max_files: int = 200
    budget_bytes: int = 16 * 1024
    lock_timeout_s: float = 600.0
    parse_timeout_s: float = 60.0  # one file's parse in an index worker; past it, chunked by lines
    watch: bool = True  # long-running processes skip the guard's stat pass while the kernel reports nothing
    worktrees: bool = True  # git work trees share one index: a base and a view per work tree
    base_branch: str = ""
    lazy_refresh_max_files: int = 200
    # A CLI read that found no server starts one in the background (`ragraf serve --socket-only`),
    # which answers the next reads of the root until idle this long; 0: never start one.
    server_idle_s: float = 900.0
    base_staleness_warn_commits: int = 50
    # Not configuration: set for a git work tree, whose index is a view in its repository's one file.
    view: str = ""
    repo_key: str = ""
    # Not configuration: the static model an index run's workers embed new chunks with ("" none).
    static_model: str = ""

    @property
    def db_path(self) -> Path:
        return self.home / db_name(Path(self.repo_key) if self.repo_key else self.root)

    def chunk_params(self) -> str:
        return (
            f"chunker{CHUNKER_VERSION}/max{self.chunk_max_chars}/min{self.chunk_min_chars}/facts{FACTS_VERSION}"
            f"/redact{REDACTION_VERSION}"
        )


_INT_FIELDS = {f.name for f in dataclasses.fields(Settings) if f.type in ("int", int)}
_FLOAT_FIELDS = {f.name for f in dataclasses.fields(Settings) if f.type in ("float", float)}
_BOOL_FIELDS = {f.name for f in dataclasses.fields(Settings) if f.type in ("bool", bool)}
_KEYS = {f.name for f in dataclasses.fields(Settings)} - {"root", "home", "view", "repo_key", "static_model"}


# The values each number may take (inclusive); a value outside is refused when settings load, with
# the key, the value and the range, rather than misbehaving later (a negative budget, no chunks).
RANGES: dict[str, tuple[float, float]] = {
    "embed_batch_size": (1, 100_000),
    "embed_timeout_s": (0.1, 86_400),
    "embed_max_chunks": (0, 1 << 40),  # 0: no limit
    "max_file_bytes": (1, 1 << 40),
    "max_line_chars": (0, 1 << 30),  # 0: no limit
    "chunk_max_chars": (100, 1_000_000),
    "chunk_min_chars": (0, 1_000_000),  # and at most chunk_max_chars
    "keep_revisions": (1, 1_000_000),
    "auto_reindex_max_files": (0, 1 << 31),
    "budget_bytes": (512, 1 << 30),
    "lock_timeout_s": (0, 7 * 86_400),
    "parse_timeout_s": (0.1, 86_400),
    "lazy_refresh_max_files": (0, 1 << 31),
    "base_staleness_warn_commits": (0, 1 << 31),
}


def _in_range(key: str, value: object, source: str) -> object:
    bounds = RANGES.get(key)
    if bounds is None or not isinstance(value, int | float) or isinstance(value, bool):
        return value
    if not bounds[0] <= value <= bounds[1]:  # NaN fails both comparisons, so it is refused too
        span = " to ".join(f"{x:g}" if isinstance(x, float) else f"{x:,}" for x in bounds)
        raise ConfigError(
            f"{source}: {key} = {value!r} is outside the allowed range {span}",
            suggest=f"set {key} to a value from {span} in {source}",
        )
    return value


def _coerce(key: str, value: object, source: str) -> object:
    try:
        if key in _BOOL_FIELDS:
            if isinstance(value, str):
                return value.strip().lower() not in ("0", "false", "no", "off", "")
            return bool(value)
        if key in _INT_FIELDS:
            if isinstance(value, float) and not value.is_integer():
                raise ValueError(value)
            return _in_range(key, int(value), source)  # type: ignore[arg-type]
        if key in _FLOAT_FIELDS:
            return _in_range(key, float(value), source)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(
            f"{source}: {key} = {value!r} is not a valid {'number' if key not in _BOOL_FIELDS else 'boolean'}",
            suggest=f"fix {key} in {source}",
        ) from None
    return str(value)


def _file_settings(root: Path) -> dict[str, object]:
    values: dict[str, object] = {}
    pyproject = root / "pyproject.toml"
    candidates = [(pyproject, ("tool", "ragraf")), (root / "ragraf.toml", ())]
    for path, table_path in candidates:
        if not path.is_file():
            continue
        import tomllib  # only where a configuration file exists

        try:
            data = tomllib.loads(path.read_text(encoding="utf-8", errors="replace"))
        except tomllib.TOMLDecodeError as exc:
            if path == pyproject:
                continue  # a broken pyproject is the project's business, not ours
            raise ConfigError(f"{path} is not valid TOML: {exc}", suggest=f"fix {path}") from None
        for part in table_path:
            data = data.get(part, {}) if isinstance(data, dict) else {}
        for key, value in (data or {}).items():
            key = key.replace("-", "_")
            if key in _KEYS:
                values[key] = _coerce(key, value, str(path))
    return values


def _env_settings(env: dict[str, str]) -> dict[str, object]:
    values: dict[str, object] = {}
    for key in _KEYS:
        name = f"RAGRAF_{key.upper()}"
        if name in env:
            values[key] = _coerce(key, env[name], name)
    if "embed_api_key" not in values and env.get("OPENAI_API_KEY"):
        values["embed_api_key"] = env["OPENAI_API_KEY"]
    return values


def git_dir(root: Path) -> tuple[Path, Path] | None:
    """(common git dir, work tree top level) when root is inside a git work tree."""
    try:
        out = run_watched(["git", "rev-parse", "--git-common-dir", "--show-toplevel"], root)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = out.stdout.decode(errors="surrogateescape").splitlines()
    if out.returncode != 0 or len(lines) < 2:
        return None
    common = Path(lines[0])
    if not common.is_absolute():
        common = (root / common).resolve()
    return common, Path(lines[1]).resolve()


def default_home(root: Path, env: dict[str, str], found: tuple[Path, Path] | None) -> Path:
    """<git common dir>/ragraf in a git repository, else <root>/.ragraf; RAGRAF_HOME wins."""
    if env.get("RAGRAF_HOME"):
        return Path(env["RAGRAF_HOME"]).expanduser().resolve()
    if found is not None:
        return found[0] / "ragraf"
    return root / ".ragraf"


def db_name(root: Path) -> str:
    """One index file per indexed root, so two roots sharing a home never collide."""
    digest = hashlib.sha1(str(root).encode()).hexdigest()[:12]
    return f"index-{digest}.db"


def load_settings(root: str | Path = ".", env: dict[str, str] | None = None, **overrides: object) -> Settings:
    """Settings for a root: defaults, then ragraf.toml / [tool.ragraf], then RAGRAF_*, then overrides."""
    env = dict(os.environ) if env is None else env
    root_path = Path(root).expanduser().resolve()
    if not root_path.is_dir():
        raise UsageError(  # a path the user typed, like a missing file: exit 2
            f"root {root_path} is not a directory", suggest="pass --root with an existing folder"
        )
    values: dict[str, object] = {}
    values.update(_file_settings(root_path))
    values.update(_env_settings(env))
    values.update({k: _in_range(k, v, "the arguments") for k, v in overrides.items() if v is not None})
    found = git_dir(root_path)
    shared = values.get("worktrees", True) and values.get("store", "sqlite") == "sqlite"
    if found is not None and found[1] == root_path and shared:
        # Every work tree of a repository is a view in one index file, over one base (DESIGN §10).
        values.update(view=str(root_path), repo_key=str(found[0].resolve()))
    settings = Settings(root=root_path, home=default_home(root_path, env, found), **values)  # type: ignore[arg-type]
    if settings.reindex_on_drift not in ("warn", "auto", "fail"):
        raise ConfigError(
            f"reindex_on_drift = {settings.reindex_on_drift!r} is not one of warn, auto, fail",
            suggest="set RAGRAF_REINDEX_ON_DRIFT to warn, auto or fail",
        )
    if settings.chunk_min_chars > settings.chunk_max_chars:
        raise ConfigError(
            f"chunk_min_chars = {settings.chunk_min_chars} is larger than chunk_max_chars = "
            f"{settings.chunk_max_chars}",
            suggest="set chunk_min_chars to at most chunk_max_chars",
        )
    if settings.store not in ("sqlite", "postgres"):
        raise ConfigError(f"store = {settings.store!r} is not sqlite or postgres", suggest="set RAGRAF_STORE")
    return settings
