"""Default excludes (DESIGN §9): dependency and build output, lock files, bundles, binaries, secrets."""

from __future__ import annotations

import fnmatch
import functools
import re

EXCLUDED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".bzr",
        ".ragraf",
        "node_modules",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        "dist",
        "build",
        "target",
        "__pycache__",
        ".next",
        ".nuxt",
        "coverage",
        "storybook-static",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".cache",
        ".gradle",
        ".idea",
        ".eggs",
        "bower_components",
        ".terraform",
        "htmlcov",
    }
)

LOCK_FILES = frozenset(
    {
        "package-lock.json",
        "npm-shrinkwrap.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "bun.lockb",
        "poetry.lock",
        "Pipfile.lock",
        "uv.lock",
        "pdm.lock",
        "Cargo.lock",
        "Gemfile.lock",
        "composer.lock",
        "go.sum",
        "mix.lock",
        "pubspec.lock",
        "Podfile.lock",
        "flake.lock",
        "packages.lock.json",
        "gradle.lockfile",
        "conda-lock.yml",
    }
)

SECRET_PATTERNS = (
    ".env",
    ".env.*",
    "*.env",
    "*.pem",
    "*.key",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.kdbx",
    "credentials",
    "credentials.json",
    "credentials.yml",
    "credentials.yaml",
    ".netrc",
    "_netrc",
    ".pgpass",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    "*.ppk",
    "secrets.json",
    "secrets.yml",
    "secrets.yaml",
    "service-account*.json",
    "*.tfvars",
    "*.tfstate",
    "htpasswd",
    ".htpasswd",
    ".dockercfg",
    # Issue 27: names a red team found indexed.
    ".envrc",
    "env.local",
    "env.*.local",
    "*.env.local",
    "*.p8",
    "*.pkcs12",
    "*.keytab",
    "*.ovpn",
    "*_rsa",
    "*_dsa",
    "*_ecdsa",
    "*_ed25519",
    "credentials.csv",
    "*_credentials.csv",
    "*accesskeys.csv",
    "credentials.toml",
    "*.tfstate.*",
    "terraform.rc",
    ".terraformrc",
    "kubeconfig",
    "*.kubeconfig",
    ".boto",
    ".s3cfg",
    "application_default_credentials.json",
    "client_secret*.json",
    "*.secret",
    "*.secrets",
    "secrets.env",
    "secrets.toml",
    "sftp-config.json",
    ".ftpconfig",
)
SECRET_DIR_FILES = {
    ".aws": "credentials",
    ".docker": "config.json",
    ".ssh": "*",
    ".gnupg": "*",
    ".kube": "config",
    ".gem": "credentials",
    ".cargo": "credentials*",
    "gcloud": "*credentials*",
}

BINARY_EXTENSIONS = frozenset(
    {
        ".png",
        ".jpg",
        ".jpeg",
        ".gif",
        ".bmp",
        ".ico",
        ".webp",
        ".tif",
        ".tiff",
        ".psd",
        ".pdf",
        ".zip",
        ".gz",
        ".tgz",
        ".bz2",
        ".xz",
        ".zst",
        ".7z",
        ".rar",
        ".tar",
        ".jar",
        ".war",
        ".whl",
        ".egg",
        ".so",
        ".dylib",
        ".dll",
        ".exe",
        ".o",
        ".a",
        ".obj",
        ".lib",
        ".class",
        ".pyc",
        ".pyo",
        ".wasm",
        ".bin",
        ".dat",
        ".db",
        ".sqlite",
        ".sqlite3",
        ".woff",
        ".woff2",
        ".ttf",
        ".otf",
        ".eot",
        ".mp3",
        ".mp4",
        ".wav",
        ".ogg",
        ".flac",
        ".mov",
        ".avi",
        ".mkv",
        ".webm",
        ".npy",
        ".npz",
        ".pkl",
        ".pickle",
        ".parquet",
        ".onnx",
        ".pt",
        ".safetensors",
        ".h5",
        ".ipynb_checkpoints",
        ".DS_Store",
        ".svgz",
        ".icns",
    }
)


# Case-insensitive: ID_RSA and .ENV are as secret as id_rsa and .env.
_SECRET_NAME = re.compile("|".join(fnmatch.translate(p) for p in SECRET_PATTERNS), re.IGNORECASE)


def is_secret(path: str) -> bool:
    """Secrets never enter the index, whatever the ignore files say."""
    folder, _, name = path.rpartition("/")
    if _secret_name(name):
        return True
    patterns = _secret_folder_patterns(folder) if folder else ()
    return bool(patterns) and any(fnmatch.fnmatchcase(name.lower(), p) for p in patterns)


def excluded_reason(path: str) -> str | None:
    """Why a relative posix path is excluded by the default rules, or None."""
    folder, _, name = path.rpartition("/")
    return (
        (folder and _excluded_folder(folder)) or ("secret" if is_secret(path) else None) or _name_reason(name)
    )


# The rules depend only on a file's name and its folder's, which repeat across a tree (10,000
# paths hold about 600 names) and across the listings of a long-running process: each is worked
# out once.
_CACHED = 1 << 16


@functools.lru_cache(maxsize=_CACHED)
def _secret_name(name: str) -> bool:
    return _SECRET_NAME.match(name) is not None


@functools.lru_cache(maxsize=_CACHED)
def _secret_folder_patterns(folder: str) -> tuple[str, ...]:
    """The name patterns a secret folder on this path (.ssh, .aws, ...) makes secret."""
    return tuple(SECRET_DIR_FILES[d.lower()] for d in folder.split("/") if d.lower() in SECRET_DIR_FILES)


@functools.lru_cache(maxsize=_CACHED)
def _excluded_folder(folder: str) -> str | None:
    for part in folder.split("/"):
        if part in EXCLUDED_DIRS or part.endswith(".egg-info"):
            return f"excluded folder {part}/"
    return None


@functools.lru_cache(maxsize=_CACHED)
def _name_reason(name: str) -> str | None:
    """A lock file, a minified or bundled file, or a binary, by its name alone."""
    if name in LOCK_FILES or name.endswith(".lock"):
        return "lock file"
    lowered = name.lower()
    if ".min." in lowered or ".bundle." in lowered or lowered.endswith((".map", "-min.js")):
        return "minified or bundled"
    dot = lowered.rfind(".")
    if (dot > 0 and lowered[dot:] in BINARY_EXTENSIONS) or name in BINARY_EXTENSIONS:
        return "binary"
    return None
