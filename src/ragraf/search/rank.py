"""Ranking rules over fused candidates, each separately switchable so its effect can be measured."""

from __future__ import annotations

import bisect
import functools
import re
from dataclasses import dataclass, replace

from ragraf.facts.lookup import ENTRY_STEMS, superseded_paths
from ragraf.languages import DOC_LANGUAGES, is_example_path, is_test_path, is_windows_path, language_of
from ragraf.store import ChunkHit
from ragraf.tokens import STOPWORDS, split_identifier

RULES = (
    "rrf", "path_candidates", "definition_boost", "symbol_match", "path_match", "name_match", "mentioned_path",
    "test_penalty", "example_penalty", "platform_penalty", "doc_penalty", "version_penalty", "file_evidence",
    "file_cap", "merge_adjacent",
)  # fmt: skip
_TEST_QUERY = re.compile(
    r"\b(tests?|testing|specs?|fixtures?|mocks?|mocking|coverage|pytest|unittest|jest)\b", re.I
)
_EXAMPLE_QUERY = re.compile(r"\b(examples?|demos?|samples?)\b", re.I)
_WINDOWS_QUERY = re.compile(r"\b(windows|win32|win64|winapi|msvc)\b", re.I)
_DOC_QUERY = re.compile(
    r"\b(docs?|documentation|readme|guide|tutorial|changelog|markdown|explain(ed)?)\b", re.I
)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A file path quoted in a query (a traceback, a bug report): name/with/slashes.ext, checked token by
# token (bounded length) so a pathological query cannot make the pattern backtrack for long.
_TOKEN_SPLIT = re.compile(r"[\s\"'`(),;:<>\[\]{}=]+")
_PATH_TOKEN = re.compile(r"[\w./\-]+\.[A-Za-z][A-Za-z0-9]{0,5}")
_VERSION_DIR = re.compile(r"v(\d+)\Z", re.I)
_VERSION_WORD = re.compile(r"\bv(\d+)\b", re.I)
_ABBREVIATION = 4  # letters a path word needs to stand for a longer query word it starts
_PATH_PREFIX_STEMS = 12  # a longer query (a bug report) names its paths in full often enough
_NOT_PLURAL = ("ss", "us", "is", "ias")
_SUFFIXES = ("ations", "ation", "ings", "ing", "ers", "er", "ies", "ied", "ed", "es", "s")


@dataclass(frozen=True)
class Candidate:
    hit: ChunkHit
    score: float


@functools.lru_cache(maxsize=100_000)
def stem(word: str) -> str:
    """A light suffix stripper: routes/routing/router -> rout, dependencies -> dependency."""
    w = word.lower()
    for suffix in _SUFFIXES:
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            if suffix == "s" and w.endswith(_NOT_PLURAL):
                break  # class, status, alias: their plurals lose "es" and meet them here
            return w[: -len(suffix)] + ("y" if suffix in ("ies", "ied") else "")
    # decode / decoding / decoded meet at "decod", type / types at "typ"
    return w[:-1] if w.endswith("e") and len(w) > 3 else w


@functools.lru_cache(maxsize=100_000)
def path_stems(path: str) -> frozenset[str]:
    """Stems of every part of a path: folders and file stem, split as identifiers."""
    base = path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path
    return frozenset().union(*map(segment_stems, re.split(r"[/\\]+", base)))


@functools.lru_cache(maxsize=100_000)
def segment_stems(segment: str) -> frozenset[str]:
    """Stems of one folder or file name. Names repeat across a tree's paths: stemming each once
    keeps indexing every path cheap."""
    return frozenset(
        stem(p) for w in re.split(r"[.\-]+", segment) for p in (split_identifier(w) or (w,)) if p
    )


@dataclass(frozen=True)
class QueryInfo:
    """What the rules need to know about a query, computed once."""

    identifiers: frozenset[str]  # lower-case words of the query that look like code names
    stems: frozenset[str]  # stems of the content words
    wants_tests: bool
    wants_docs: bool
    wants_examples: bool = False
    wants_windows: bool = False
    paths: tuple[str, ...] = ()  # file paths the query quotes
    versions: frozenset[str] = frozenset()  # version folders the query names ("v3")
    joined: tuple[tuple[str, str, str], ...] = ()  # (stem of two adjacent words run together, their stems)
    ordered: tuple[str, ...] = ()  # the stems, sorted: the ones a path abbreviation starts are a range

    @functools.cached_property
    def path_words(self) -> frozenset[str]:
        """The stems to find paths by: the stems, and for a short query the starts of each (of
        _ABBREVIATION letters or more) a path may abbreviate it by (`util` for utility, `impl`)."""
        if len(self.stems) > _PATH_PREFIX_STEMS:
            return self.stems
        return self.stems | {w[:n] for w in self.stems for n in range(_ABBREVIATION, len(w))}

    @classmethod
    def of(cls, query: str) -> QueryInfo:
        words = _WORD.findall(query[:20_000])
        identifiers = frozenset(w.lower() for w in words if len(w) > 2)
        parts = [p for w in words for p in (split_identifier(w) or (w.lower(),))]
        stems = frozenset(stem(p) for p in parts if len(p) > 2 and p not in STOPWORDS)
        tokens = _TOKEN_SPLIT.split(query[:200_000])
        quoted = (
            t.strip(".").lstrip("/") for t in tokens if "/" in t and len(t) < 300 and _PATH_TOKEN.fullmatch(t)
        )
        paths = tuple(dict.fromkeys(p for p in quoted if p))
        versions = frozenset(f"v{int(n)}" for n in _VERSION_WORD.findall(query[:20_000]))
        content = [p for p in parts[:200] if p not in STOPWORDS]
        joined = tuple(
            dict.fromkeys(
                (stem(a + b), stem(a), stem(b))
                for a, b in zip(content, content[1:], strict=False)
                if len(a) > 1 and len(b) > 1
            )
        )
        return cls(
            identifiers,
            stems,
            bool(_TEST_QUERY.search(query)),
            bool(_DOC_QUERY.search(query)),
            bool(_EXAMPLE_QUERY.search(query)),
            bool(_WINDOWS_QUERY.search(query)),
            paths[:50],
            versions,
            joined,
            tuple(sorted(stems)),
        )


def matched_stems(q: QueryInfo, stems: frozenset[str]) -> set[str]:
    """The query's stems a path holds. Two adjacent words run together count as both (`realip`), and a
    path word of 4 letters or more that starts a query word counts as it: paths abbreviate (`utils`
    for utility, `impls` for implementations, `format.h` for formatter)."""
    found = set(q.stems & stems)
    for joined, a, b in q.joined:
        if joined in stems:
            found |= {a, b}
    for s in stems:
        if len(s) >= _ABBREVIATION and s not in q.stems:
            at = bisect.bisect_left(q.ordered, s)
            while at < len(q.ordered) and q.ordered[at].startswith(s):
                found.add(q.ordered[at])
                at += 1
    return found


# Rules measured to hurt on the bench (benchmarks/ablation.py) stay switchable but start off.
OFF_BY_DEFAULT = frozenset({"symbol_match"})


def enabled(rules: dict[str, bool] | None, name: str) -> bool:
    default = name not in OFF_BY_DEFAULT
    return default if rules is None else rules.get(name, default)


def asks_about_tests(query: str) -> bool:
    return bool(_TEST_QUERY.search(query))


def _symbol_matches(symbol: str | None, q: QueryInfo) -> bool:
    if not symbol:
        return False
    last = symbol.rsplit(".", 1)[-1].lower()
    return last in q.identifiers or last.replace("_", "") in q.identifiers


def _same_file(path: str, mentioned: str) -> bool:
    """A quoted path names this file when one ends with the other at a folder boundary."""
    return path == mentioned or path.endswith("/" + mentioned) or mentioned.endswith("/" + path)


def _version_split(path: str) -> tuple[str, str, str] | None:
    """(the version folder, the path without it, its version) for a path under a `vN/` folder."""
    parts = path.split("/")
    for i, part in enumerate(parts[:-1]):
        match = _VERSION_DIR.match(part)
        if match:
            return "/".join(parts[: i + 1]), "/".join(parts[:i] + parts[i + 1 :]), f"v{int(match.group(1))}"
    return None


def older_versions(paths: set[str], named: frozenset[str] = frozenset()) -> set[str]:
    """Paths in a version folder that is not the one a plain import reaches, unless the query names it.

    Two shapes, judged from the paths at hand: a folder with a newer sibling (`src/v3/` beside
    `src/v4/`), and a folder that repeats modules which also exist without it (`pydantic/v1/fields.py`
    beside `pydantic/fields.py`: a copy kept for compatibility).
    """
    split = {p: s for p in paths if (s := _version_split(p))}
    if not split:
        return set()
    copies = {
        folder
        for p, (folder, plain, _) in split.items()
        # A package's entry file exists beside a version folder and in it alike (index.ts,
        # __init__.py), so it says nothing about the folder being a copy.
        if plain in paths and p.rsplit("/", 1)[-1].split(".", 1)[0] not in ENTRY_STEMS
    }
    older = superseded_paths(set(split)) | {p for p, (folder, _, _) in split.items() if folder in copies}
    return {p for p in older if split[p][2] not in named}


def _aside(q: QueryInfo, path: str, rules: dict[str, bool] | None) -> bool:
    """Tests and examples, unless the query asks for them (a test's example is penalised once)."""
    if is_test_path(path):
        return enabled(rules, "test_penalty") and not q.wants_tests
    return enabled(rules, "example_penalty") and not q.wants_examples and is_example_path(path)


NAME_MATCH = 0.3
DOC_PENALTY = 0.5  # prose files (Markdown, reStructuredText) unless the query asks for docs


class _NamedFiles:
    """Files named by query words alone (`Triple.java` for "triple container", where
    `MutableTriple.java` has a word more), weighed by how rare the rarest of those words is among the
    candidates' paths: a name of a word most of them hold (`json.hpp` in a JSON library) names
    nothing in particular, while `test_decode.py` is named by `decode` more than by `test`."""

    def __init__(self, q: QueryInfo, candidates: list[Candidate]) -> None:
        self.q = q
        self.files = {c.hit.path for c in candidates}
        self.held: dict[str, int] = {}
        for path in self.files:
            for word in path_stems(path):
                self.held[word] = self.held.get(word, 0) + 1
        self.memo: dict[str, float] = {}

    def rarity(self, path: str) -> float:
        """0 unless every word of the file name is a query word; else 1 less the share of candidate
        files its rarest word is in."""
        if path not in self.memo:
            words = segment_stems(path.rsplit("/", 1)[-1].split(".", 1)[0])
            named = bool(words) and all(matched_stems(self.q, frozenset((w,))) for w in words)
            self.memo[path] = (
                1.0 - min(self.held.get(w, 0) for w in words) / len(self.files) if named else 0.0
            )
        return self.memo[path]


def apply_rules(
    q: QueryInfo, candidates: list[Candidate], rules: dict[str, bool] | None = None
) -> list[Candidate]:
    """Boost symbol and path-name matches, demote tests, examples, Windows ports, docs and older
    versions unless asked for; best first."""
    older = (
        older_versions({c.hit.path for c in candidates}, q.versions)
        if enabled(rules, "version_penalty")
        else set()
    )
    named = _NamedFiles(q, candidates) if enabled(rules, "name_match") and q.stems else None
    # Every rule but symbol_match reads the path alone: a file's chunks share one factor.
    factors: dict[str, float] = {}

    def path_factor(path: str) -> float:
        factor = 1.0
        if enabled(rules, "path_match") and q.stems:
            overlap = min(1.0, len(matched_stems(q, path_stems(path))) / len(q.stems))
            factor *= 1.0 + 0.6 * overlap
        if named is not None:
            factor *= 1.0 + NAME_MATCH * named.rarity(path)
        if enabled(rules, "mentioned_path") and q.paths and any(_same_file(path, p) for p in q.paths):
            factor *= 1.5
        if _aside(q, path, rules):
            factor *= 0.5
        if enabled(rules, "platform_penalty") and not q.wants_windows and is_windows_path(path):
            factor *= 0.7
        if enabled(rules, "doc_penalty") and not q.wants_docs and language_of(path) in DOC_LANGUAGES:
            factor *= DOC_PENALTY
        if path in older:
            factor *= 0.5
        return factor

    symbols = enabled(rules, "symbol_match")
    out = []
    for cand in candidates:
        hit = cand.hit
        score = cand.score * 1.5 if symbols and _symbol_matches(hit.symbol, q) else cand.score
        factor = factors.get(hit.path)
        if factor is None:
            factor = factors[hit.path] = path_factor(hit.path)
        out.append(Candidate(hit, score * factor))
    out.sort(key=lambda c: (-c.score, c.hit.path, c.hit.start_line))
    return out


FILE_EVIDENCE = 0.4
EVIDENCE_CHUNKS = 2  # the chunks after a file's best that count: a big central file beats a satellite


def add_file_evidence(candidates: list[Candidate], rules: dict[str, bool] | None = None) -> list[Candidate]:
    """A file matched by several chunks is likelier the answer: each of its chunks gains a share of
    the scores of the file's next EVIDENCE_CHUNKS chunks. Best first."""
    if not enabled(rules, "file_evidence"):
        return candidates
    by_file: dict[str, list[float]] = {}
    for c in candidates:
        by_file.setdefault(c.hit.path, []).append(c.score)
    more = {
        p: sum(sorted(s, reverse=True)[1 : 1 + EVIDENCE_CHUNKS]) for p, s in by_file.items() if len(s) > 1
    }
    out = [Candidate(c.hit, c.score + FILE_EVIDENCE * more.get(c.hit.path, 0.0)) for c in candidates]
    out.sort(key=lambda c: (-c.score, c.hit.path, c.hit.start_line))
    return out


def merge_and_cap(
    candidates: list[Candidate], k: int, per_file: int, rules: dict[str, bool] | None = None
) -> list[Candidate]:
    """Merge overlapping or adjacent chunks of one file; at most per_file results per file in the top k."""
    taken: list[Candidate] = []
    by_file: dict[str, list[int]] = {}
    for cand in candidates:
        idx = by_file.get(cand.hit.path, [])
        if enabled(rules, "merge_adjacent"):
            merged = False
            for i in idx:
                prior = taken[i].hit
                if cand.hit.start_line <= prior.end_line + 1 and cand.hit.end_line >= prior.start_line - 1:
                    taken[i] = Candidate(_merge(prior, cand.hit), taken[i].score)
                    merged = True
                    break
            if merged:
                continue
        if enabled(rules, "file_cap") and len(idx) >= per_file:
            continue
        by_file.setdefault(cand.hit.path, []).append(len(taken))
        taken.append(cand)
        if len(taken) >= k:
            break
    return taken


def _merge(a: ChunkHit, b: ChunkHit) -> ChunkHit:
    first, second = (a, b) if a.start_line <= b.start_line else (b, a)
    if second.end_line <= first.end_line:
        return first
    first_lines = first.text.split("\n")
    second_lines = second.text.split("\n")
    overlap = first.end_line - second.start_line + 1
    gap = [""] * max(0, second.start_line - first.end_line - 1)
    text = "\n".join(first_lines + gap + second_lines[max(overlap, 0) :])
    return replace(first, end_line=second.end_line, text=text, symbol=first.symbol or second.symbol)
