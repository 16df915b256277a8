"""Default excludes (DESIGN §9): dependency and build output, lock files, bundles, binaries, secrets."""

from __future__ import annotations

import fnmatch
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
    parts = path.split("/")
    name = parts[-1]
    if _SECRET_NAME.match(name):
        return True
    lowered = name.lower()
    return any(
        d.lower() in SECRET_DIR_FILES and fnmatch.fnmatchcase(lowered, SECRET_DIR_FILES[d.lower()])
        for d in parts[:-1]
    )


def excluded_reason(path: str) -> str | None:
    """Why a relative posix path is excluded by the default rules, or None."""
    parts = path.split("/")
    for part in parts[:-1]:
        if part in EXCLUDED_DIRS or part.endswith(".egg-info"):
            return f"excluded folder {part}/"
    name = parts[-1]
    if is_secret(path):
        return "secret"
    if name in LOCK_FILES or name.endswith(".lock"):
        return "lock file"
    lowered = name.lower()
    if ".min." in lowered or ".bundle." in lowered or lowered.endswith((".map", "-min.js")):
        return "minified or bundled"
    dot = lowered.rfind(".")
    if (dot > 0 and lowered[dot:] in BINARY_EXTENSIONS) or name in BINARY_EXTENSIONS:
        return "binary"
    return None
