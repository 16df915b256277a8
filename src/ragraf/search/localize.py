"""Localization: a pasted report to the files to change, each with the evidence that points at it.

Each part of the report goes through the channel that fits it (search/report.py reads the parts):
traceback frames and named paths to the revision's paths, code names to the facts (the files that
define them), messages and quoted strings to the lexical index as phrases (an error message's text
often sits on the line that raises it), the whole text to hybrid search, its title (first line) to
lexical search alone, its words to whole-file BM25 (a file's best chunks summed) and to the files
whose own names they spell. Each channel ranks files, code apart from the rest; the ranks are fused
(weighted reciprocal rank) and the kinds a fix rarely lands in (docs, config, tests, examples, code
under a docs folder) rank after code.
"""

from __future__ import annotations

import math
import re
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

from ragraf.languages import is_example_path, is_vendored_path, kind_of
from ragraf.search.engine import CANDIDATES, SearchOutcome, run_search
from ragraf.search.rank import Candidate, path_stems, segment_stems, stem
from ragraf.search.report import Report
from ragraf.store import ChunkHit, Store
from ragraf.tokens import STOPWORDS, fts_match, query_terms, split_identifier

# Weights of the channels in the fusion, and its rank constant: a file first in one channel beats a
# file fifth in two (K small). The search of the whole text, the broadest evidence, and the trace's
# frames, where the error was raised, weigh twice a single name's or message's (bench-issues,
# lexical: file Acc@1/5 36.8/71.9 with the text at 1.0, 42.1/75.4 at 2.0; the frames the same at 1.6
# or 2.0 there, but a trace in pages of pasted log must not lose to the log's words).
WEIGHTS = {
    "traceback": 2.0, "path": 1.2, "definition": 1.0, "message": 0.9, "literal": 1.0, "text": 2.0,
    "files": 1.0, "name": 1.0, "title": 2.0,
}  # fmt: skip
FUSE_K = 4.0
# A name defined in more files than this says little about where the fix goes (`__init__`, `run`).
MAX_DEFINING_FILES = 8
MAX_NAMES = 25
MAX_MESSAGES = 8
MAX_LITERALS = 15
# A flag or key held verbatim by more files than this is used everywhere, not declared somewhere.
MAX_LITERAL_FILES = 15
# How much a kind of file keeps of its score: a fix lands in code; docs, config and tests it touches
# come along with it, rarely alone.
KIND_FACTOR = {"code": 1.0, "test": 0.45, "doc": 0.3, "config": 0.35}
EXAMPLE_FACTOR = 0.5
VENDORED_FACTOR = 0.5
CHUNKS_PER_FILE = 2
# A report with more undecodable bytes and control characters than this is data pasted by mistake.
BINARY_SHARE = 0.1


@dataclass
class FileAnswer:
    """One ranked file: its fused score, why it is here, its best chunks."""

    path: str
    score: float = 0.0
    evidence: list[dict[str, object]] = field(default_factory=list)
    chunks: list[ChunkHit] = field(default_factory=list)
    channels: dict[str, int] = field(default_factory=dict)  # channel -> rank (0 first) in it
    rarity: float = 0.0  # how rare the report's names it defines are (rerank_by_definitions)


@dataclass(frozen=True)
class LocalizeOutcome:
    files: list[FileAnswer]
    notes: list[str]
    missing_paths: list[str]  # paths the report names that the revision does not hold


def localize(
    store: Store,
    rev_no: int,
    report: Report,
    k: int,
    vector_hits: Callable[[int], list[ChunkHit]] | None = None,
    keep: Callable[[str], bool] | None = None,
) -> LocalizeOutcome:
    """The k files of a revision most likely to need the change a report asks for, best first."""
    if k <= 0 or report.is_empty:
        return LocalizeOutcome([], [], [])
    paths = [p for p, _ in store.manifest_hashes(rev_no)]
    resolver = PathResolver(paths)
    answers: dict[str, FileAnswer] = {}
    notes: list[str] = []

    def add(channel: str, ranked: list[tuple[str, dict[str, object], ChunkHit | None]]) -> None:
        # Code is ranked apart from the files a fix rarely lands in alone (tests, docs, config,
        # examples): a channel's first code file counts as first whatever docs it ranked above it.
        rank = {True: 0, False: 0}
        for path, evidence, chunk in ranked:
            if keep is not None and not keep(path):
                continue
            answer = answers.setdefault(path, FileAnswer(path))
            if channel not in answer.channels:
                code = _is_code(path)
                answer.channels[channel] = rank[code]
                answer.score += WEIGHTS[channel] / (FUSE_K + rank[code])
                rank[code] += 1
            if len(answer.evidence) < 6:
                answer.evidence.append(evidence)
            if chunk is not None and len(answer.chunks) < CHUNKS_PER_FILE and chunk not in answer.chunks:
                answer.chunks.append(chunk)

    frames, missing = _traceback_channel(report, resolver)
    add("traceback", frames)
    named, missing_named = _path_channel(report, resolver)
    add("path", named)
    defines: dict[str, dict[str, int]] = {}  # file -> the report's names it defines -> files defining each
    add("definition", _definition_channel(store, rev_no, report, defines))
    add("message", _message_channel(store, rev_no, report))
    add("literal", _literal_channel(store, rev_no, report))
    text = _text_channel(store, rev_no, report, vector_hits)
    add("text", text)
    add("title", _title_channel(store, rev_no, report))
    add("files", _files_channel(store, rev_no, report))
    add("name", _name_channel(store, rev_no, paths, report))
    if not text and not report.names:
        notes.append("the report has no words to search for")
    if report.binary_share > BINARY_SHARE:
        notes.append(
            f"{report.binary_share:.0%} of the report's characters are no text (binary data?):"
            " ranked by the few words it holds"
        )

    for answer in answers.values():
        kind = kind_of(answer.path)
        # Tests rank after code even when the report speaks of tests (it does whenever it says
        # how it ran them): a fix lands in code; the report that names a test file gets it at 0.8.
        factor = KIND_FACTOR.get(kind, 1.0)
        if "path" in answer.channels or "traceback" in answer.channels:
            factor = max(factor, 0.8)  # the report itself names this file
        if is_example_path(answer.path) or (kind == "code" and _in_docs(answer.path)):
            factor *= EXAMPLE_FACTOR
        if is_vendored_path(answer.path) and "path" not in answer.channels:
            factor *= VENDORED_FACTOR
        answer.score *= factor
    ranked = sorted(answers.values(), key=lambda a: (-a.score, a.path))
    ranked = rerank_by_definitions(ranked, defines, len(_names_of(store, rev_no, paths).words))[:k]
    _fill_chunks(store, rev_no, ranked, report)
    missing_all = list(dict.fromkeys(missing + missing_named))
    return LocalizeOutcome(ranked, notes, missing_all)


# The fused top files re-weighed by the rare names of the report each defines: a file defining three
# names the report uses, each defined in one or two files, is where the report points, whichever
# channel ranked it. A gain of at most 30% of the fused score (leave one repository out on
# bench-issues, the factor fitted on six repositories: 0.15-0.4 in every fold).
RERANK_DEPTH = 20
DEFINITION_GAIN = 0.3


def rerank_by_definitions(
    ranked: list[FileAnswer], defines: dict[str, dict[str, int]], code_files: int
) -> list[FileAnswer]:
    """The first RERANK_DEPTH answers each scaled by 1 + DEFINITION_GAIN x its share of the best
    evidence among them: the sum over the report's names it defines of log(1 + code files / files
    defining the name). The rest keep their order below."""
    for answer in ranked:
        names = defines.get(answer.path)
        answer.rarity = sum(math.log(1 + code_files / n) for n in names.values()) if names else 0.0
    head, tail = ranked[:RERANK_DEPTH], ranked[RERANK_DEPTH:]
    best = max((a.rarity for a in head), default=0.0)
    if best <= 0:
        return ranked
    for answer in head:
        answer.score *= 1 + DEFINITION_GAIN * answer.rarity / best
    return sorted(head, key=lambda a: (-a.score, a.path)) + tail


def search_report(
    store: Store,
    rev_no: int,
    report: Report,
    k: int,
    vector_hits: Callable[[int], list[ChunkHit]] | None = None,
    offset: int = 0,
    keep: Callable[[str], bool] | None = None,
) -> SearchOutcome:
    """`search` of a pasted report: the files localize ranks, each cited by its best chunk."""
    outcome = localize(store, rev_no, report, offset + k, vector_hits, keep)
    hits = [Candidate(a.chunks[0], a.score) for a in outcome.files if a.chunks]
    note = "read as an issue report: files ranked as `localize` ranks them (it also gives the evidence)"
    return SearchOutcome(hits[offset : offset + k], [note, *outcome.notes], len(hits))


class PathResolver:
    """Paths as a report writes them (absolute, under site-packages, a bare file name, a dotted
    module) matched to the revision's paths by their longest common ending."""

    def __init__(self, paths: list[str]) -> None:
        self.by_name: dict[str, list[str]] = {}
        for path in paths:
            self.by_name.setdefault(path.rsplit("/", 1)[-1], []).append(path)

    def resolve(self, written: str) -> list[str]:
        """The indexed paths that end as `written` does, longest matching ending first; a bare file
        name matches only when few paths hold it."""
        parts = [p for p in written.replace("\\", "/").split("/") if p and p not in (".", "..")]
        if not parts:
            return []
        candidates = self.by_name.get(parts[-1], [])
        if not candidates:
            return []
        scored = []
        for path in candidates:
            theirs = path.split("/")
            common = 0
            while common < min(len(parts), len(theirs)) and parts[-1 - common] == theirs[-1 - common]:
                common += 1
            scored.append((common, path))
        best = max(c for c, _ in scored)
        if best == 1 and len(candidates) > 3:
            return []  # `__init__.py`, `utils.py` alone: too many to say which
        return [p for c, p in sorted(scored, key=lambda s: (-s[0], s[1])) if c == best][:3]

    def module(self, dotted: str) -> list[str]:
        """`sphinx.ext.autodoc` as `sphinx/ext/autodoc.py` or `.../autodoc/__init__.py`; a dotted name
        ending in a class or function (`pkg.mod.Class`) is tried without its last parts too."""
        parts = dotted.split(".")
        for cut in range(len(parts), 1, -1):
            stem = "/".join(parts[:cut])
            for written in (f"{stem}.py", f"{stem}/__init__.py"):
                found = [
                    p for p in self.resolve(written) if p.endswith(written) and len(written.split("/")) > 1
                ]
                if found:
                    return found
        return []


def _traceback_channel(report: Report, resolver: PathResolver) -> tuple[list, list[str]]:  # type: ignore[type-arg]
    """Frames whose files the revision holds, innermost first (the error is raised there; the fix is
    often there or a frame or two out); frames of the user's own script or of other packages drop out."""
    ranked = []
    vendored = []  # frames in third-party code the project carries: after its own frames
    missing: list[str] = []
    seen: set[str] = set()
    for frame in reversed(report.frames):
        found = resolver.resolve(frame.path)
        if not found:
            if _repository_relative(frame.path):
                missing.append(frame.path)
            continue
        path = found[0]
        if path in seen:
            continue
        seen.add(path)
        where = f" in {frame.function}" if frame.function else ""
        (vendored if is_vendored_path(path) else ranked).append((path, {"channel": "traceback", "line": frame.line,
                              "detail": f"named in the traceback (line {frame.line}{where})"}, None))  # fmt: skip
    return ranked + vendored, [] if ranked or vendored else missing[:5]


def _path_channel(report: Report, resolver: PathResolver) -> tuple[list, list[str]]:  # type: ignore[type-arg]
    """Files the report names by path or as a dotted module, in the order named."""
    ranked = []
    missing: list[str] = []
    seen: set[str] = set()
    for written in report.paths:
        found = resolver.resolve(written)
        if not found and "/" in written and _repository_relative(written):
            missing.append(written)
        for path in found[:2]:
            if path not in seen:
                seen.add(path)
                ranked.append(
                    (
                        path,
                        {"channel": "path", "line": None, "detail": f"named in the report as {written}"},
                        None,
                    )
                )
    for dotted in report.modules:
        for path in resolver.module(dotted)[:1]:
            if path not in seen:
                seen.add(path)
                ranked.append(
                    (
                        path,
                        {"channel": "path", "line": None, "detail": f"module {dotted} named in the report"},
                        None,
                    )
                )
    return ranked, missing[:5]


def _definition_channel(
    store: Store, rev_no: int, report: Report, rarity: dict[str, dict[str, int]] | None = None
) -> list:  # type: ignore[type-arg]
    """Files defining the report's code names, a name defined in few files weighing more, and one
    mentioned often more again. `rarity`, if given, gets each file's names as (name, files defining it)."""
    score: dict[str, float] = {}
    evidence: dict[str, dict[str, object]] = {}
    for order, name in enumerate(report.names[:MAX_NAMES]):
        bare = name.rsplit(".", 1)[-1]
        container = name.rsplit(".", 2)[-2] if "." in name else None
        hits = [
            h
            for h in store.find_facts(rev_no, "def", name=bare, exact=True, limit=200)
            if h.kind not in ("heading", "variable", "field", "import")
        ]
        defining = {h.path for h in hits}
        if rarity is not None and len(defining) <= MAX_DEFINING_FILES:
            for path in defining:
                rarity.setdefault(path, {})[name] = len(defining)
        if container and container[:1].isupper():
            narrowed = [h for h in hits if h.container == container]
            hits = narrowed or hits
        files = {h.path for h in hits}
        if not files or len(files) > MAX_DEFINING_FILES:
            continue
        weight = (1.0 / math.log2(1 + len(files))) * (1.0 / (1 + 0.05 * order))
        for h in hits:
            if h.path in evidence and score.get(h.path, 0) >= weight:
                score[h.path] += weight * 0.3
                continue
            score[h.path] = score.get(h.path, 0.0) + weight
            evidence.setdefault(h.path, {"channel": "definition", "line": h.line,
                                         "detail": f"`{name}` defined here (line {h.line})"})  # fmt: skip
    ranked = sorted(score, key=lambda p: (-score[p], p))
    return [(p, evidence[p], None) for p in ranked]


_MESSAGE_WORD = re.compile(r"[A-Za-z]{2,}")


def _message_channel(store: Store, rev_no: int, report: Report) -> list:  # type: ignore[type-arg]
    """Chunks holding an error message or quoted string of the report as a phrase (its words in order)."""
    ranked = []
    seen: set[str] = set()
    for text in report.strings[: MAX_MESSAGES * 2]:
        words = _MESSAGE_WORD.findall(text)
        if len(words) < 2 or len(" ".join(words)) < 8:
            continue
        phrase = '"' + " ".join(w.lower() for w in words[:12]) + '"'
        for hit in store.lexical_search(phrase, rev_no, 5):
            if hit.path in seen:
                continue
            seen.add(hit.path)
            line = _line_of(hit, words[0])
            ranked.append((hit.path, {"channel": "message", "line": line,
                                      "detail": f"message text {text[:60]!r} found at line {line}"}, hit))  # fmt: skip
    return ranked


_LITERAL_SHAPE = re.compile(r"[\w.-]+")


def _literal_channel(store: Store, rev_no: int, report: Report) -> list:  # type: ignore[type-arg]
    """Files holding a CLI flag or a quoted setting of the report verbatim (`--collect-only`,
    `autodoc_typehints`): where an option is declared or read. Rarer literals weigh more."""
    literals = [
        *report.flags,
        *(s for s in report.strings if _LITERAL_SHAPE.fullmatch(s) and any(c in s for c in "_-.")),
    ]
    score: dict[str, float] = {}
    evidence: dict[str, dict[str, object]] = {}
    chunk_of: dict[str, ChunkHit] = {}
    for literal in list(dict.fromkeys(literals))[:MAX_LITERALS]:
        words = _MESSAGE_WORD.findall(literal)
        if not words:
            continue
        core = literal.lstrip("-")
        forms = {core, core.replace("-", "_")}
        hits = [
            h
            for h in store.lexical_search('"' + " ".join(w.lower() for w in words) + '"', rev_no, 40)
            if any(f in h.text for f in forms)
        ]
        files = {h.path for h in hits}
        if not files or len(files) > MAX_LITERAL_FILES:
            continue
        weight = 1.0 / math.log2(1 + len(files))
        counted: set[str] = set()
        for h in hits:
            if h.path in counted:
                continue
            counted.add(h.path)
            score[h.path] = score.get(h.path, 0.0) + weight * (1.0 if kind_of(h.path) == "code" else 0.3)
            if h.path not in evidence:
                line = _line_of(h, next(f for f in forms if f in h.text))
                evidence[h.path] = {"channel": "literal", "line": line,
                                    "detail": f"`{literal}` appears here (line {line})"}  # fmt: skip
                chunk_of[h.path] = h
    ranked = sorted(score, key=lambda p: (-score[p], p))
    return [(p, evidence[p], chunk_of[p]) for p in ranked]


def _text_channel(
    store: Store, rev_no: int, report: Report, vector_hits: Callable[[int], list[ChunkHit]] | None
) -> list:  # type: ignore[type-arg]
    """Hybrid search over the report's text (prose and code), one entry per file, best chunk first."""
    query = report.search_text
    if not query_terms(query) and vector_hits is None:
        return []
    mode = "hybrid" if vector_hits is not None else "lexical"
    outcome = run_search(store, rev_no, query, CANDIDATES, mode=mode, vector_hits=vector_hits)
    return [
        (c.hit.path, {"channel": "text", "line": c.hit.start_line,
                      "detail": f"matches the report's text (lines {c.hit.start_line}-{c.hit.end_line})"}, c.hit)
        for c in outcome.hits
    ]  # fmt: skip


FILE_POOL = 300  # chunks the whole-file channel reads: enough for a file's several matching chunks


def _files_channel(store: Store, rev_no: int, report: Report) -> list:  # type: ignore[type-arg]
    """Files whose chunks together match the report's words best (BM25 of each chunk, a file's best
    three summed with falling weights): a file the report describes in several places outranks one
    chunk that shares many of its words."""
    terms = query_terms(report.search_text)
    if not terms:
        return []
    per_file: dict[str, list[ChunkHit]] = {}
    for hit in store.lexical_search(fts_match(terms), rev_no, FILE_POOL):
        per_file.setdefault(hit.path, []).append(hit)
    score = {
        path: sum(
            w * h.score for w, h in zip((1.0, 0.5, 0.25), sorted(hits, key=lambda h: -h.score), strict=False)
        )
        for path, hits in per_file.items()
    }
    ranked = sorted(score, key=lambda p: (-score[p], p))[:CANDIDATES]
    return [
        (p, {"channel": "files", "line": per_file[p][0].start_line,
             "detail": f"{len(per_file[p])} of its chunks match the report's words"}, per_file[p][0])
        for p in ranked
    ]  # fmt: skip


def _name_channel(store: Store, rev_no: int, paths: list[str], report: Report) -> list:  # type: ignore[type-arg]
    """Code files whose own name the report's words spell (`skipping.py` for a report about skip
    marks, `junitxml.py` for "junit xml"), a name of rarer words, mentioned more often, first."""
    counts = _stem_counts(report.text)
    if not counts:
        return []
    names = _names_of(store, rev_no, paths)
    total = len(paths)
    rare = max(3, NAME_MAX_SHARE * total)
    score: dict[str, float] = {}
    # A file qualifies only by a word few paths hold (a package's name, in all its paths, names no
    # file in particular): its candidates are the files named by such a word of the report.
    for word in counts:
        if names.holding.get(word, 0) > rare:
            continue
        for path in names.named_by.get(word, ()):
            words = names.words[path]
            if path in score or not all(w in counts for w in words):
                continue
            if sum(counts[w] for w in words) < NAME_MIN_MENTIONS:
                continue  # a name written once in passing is no evidence
            score[path] = sum(
                math.log(1 + total / names.holding.get(w, 1)) * math.log2(1 + counts[w]) for w in words
            )
    ranked = sorted(score, key=lambda p: (-score[p], p.count("/"), p))[:CANDIDATES]
    return [(p, {"channel": "name", "line": None, "detail": "its name is words of the report"}, None)
            for p in ranked]  # fmt: skip


@dataclass(frozen=True)
class _Names:
    """The code files of a revision by the words of their own names, and how many paths hold each word."""

    words: dict[str, frozenset[str]]  # code file -> the stems of its name
    named_by: dict[str, list[str]]  # stem -> the code files whose names hold it
    holding: dict[str, int]  # stem -> how many paths hold it anywhere (folders too)


# A revision's paths never change: what was read of them is kept for the few revisions a lasting
# process (the MCP or HTTP server) answers from.
_NAMES: weakref.WeakKeyDictionary[Store, dict[int, _Names]] = weakref.WeakKeyDictionary()


def _names_of(store: Store, rev_no: int, paths: list[str]) -> _Names:
    per_store = _NAMES.setdefault(store, {})
    if rev_no not in per_store:
        words: dict[str, frozenset[str]] = {}
        named_by: dict[str, list[str]] = {}
        holding: dict[str, int] = {}
        for path in paths:
            for w in path_stems(path):
                holding[w] = holding.get(w, 0) + 1
            if _is_code(path) and (stems := _name_stems(path)):
                words[path] = stems
                for w in stems:
                    named_by.setdefault(w, []).append(path)
        while len(per_store) >= 4:
            del per_store[next(iter(per_store))]
        per_store[rev_no] = _Names(words, named_by, holding)
    return per_store[rev_no]


def _name_stems(path: str) -> frozenset[str]:
    """The stems of a file's own name; a package's `__init__` is named by its folder."""
    parts = path.rsplit(".", 1)[0].split("/")
    name = parts[-1]
    if name in ("__init__", "index", "mod", "lib") and len(parts) > 1:
        name = parts[-2]
    return segment_stems(name.strip("_")) - _NAME_NOISE


_NAME_NOISE = frozenset({"test", "tests", "", "py"})


def _stem_counts(text: str) -> dict[str, int]:
    """How often each stem is written in a text: its words split as identifiers, two adjacent words
    also run together (`junit xml` names `junitxml`)."""
    counts: dict[str, int] = {}
    previous = ""
    for word in _IDENT_WORD.findall(text[:MAX_TEXT_FOR_NAMES]):
        parts = split_identifier(word) or [word.lower()]
        for part in parts:
            if len(part) < 3 or part in STOPWORDS:
                previous = ""
                continue
            for s in {stem(part), stem(word.lower().replace("_", ""))}:
                counts[s] = counts.get(s, 0) + 1
            if previous:
                joined = stem(previous + part)
                counts[joined] = counts.get(joined, 0) + 1
            previous = part
    return counts


_IDENT_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_TEXT_FOR_NAMES = 100_000
NAME_MAX_SHARE = 0.02
NAME_MIN_MENTIONS = 2


def _title_channel(store: Store, rev_no: int, report: Report) -> list:  # type: ignore[type-arg]
    """The report's first line, searched alone: a title says in a few words what the rest says at
    length, so its words are not drowned by a traceback's or a log's."""
    title = report.title
    if not title or not query_terms(title):
        return []
    outcome = run_search(store, rev_no, title, CANDIDATES, mode="lexical")
    return [
        (c.hit.path, {"channel": "title", "line": c.hit.start_line,
                      "detail": f"matches the report's title (lines {c.hit.start_line}-{c.hit.end_line})"}, c.hit)
        for c in outcome.hits
    ]  # fmt: skip


def _is_code(path: str) -> bool:
    return kind_of(path) == "code" and not is_example_path(path) and not _in_docs(path)


_DOC_DIRS = frozenset({"doc", "docs", "documentation"})


def _in_docs(path: str) -> bool:
    """Under a documentation folder: code there is an example or the docs' own configuration."""
    return any(part.lower() in _DOC_DIRS for part in path.split("/")[:-1])


def _fill_chunks(store: Store, rev_no: int, answers: list[FileAnswer], report: Report) -> None:
    """Every answer gets its best chunks: those holding the lines its evidence names, else the chunks
    holding most of the report's words."""
    need = [a for a in answers if len(a.chunks) < 1]
    if not need:
        return
    terms = [t for t in query_terms(report.text) if len(t) > 2][:40]
    chunks_at = store.chunks_of_paths(rev_no, [a.path for a in need])
    for answer in need:
        chunks = chunks_at.get(answer.path, [])
        lines = [e["line"] for e in answer.evidence if isinstance(e.get("line"), int)]
        at = [c for c in chunks if any(c.start_line <= line <= c.end_line for line in lines)]  # type: ignore[operator]
        if not at and chunks:
            lowered = [c.text.lower() for c in chunks]
            best = max(range(len(chunks)), key=lambda j: (sum(t in lowered[j] for t in terms), -j))
            at = [chunks[best]]
        answer.chunks.extend(at[:CHUNKS_PER_FILE])


def _repository_relative(path: str) -> bool:
    """A path written relative to a repository (`src/app.py`), not one of a user's machine
    (`/home/me/run.py`, `C:\\proj\\run.py`, `~/x.py`) nor of an installed package."""
    return not (
        path.startswith(("/", "~", "\\")) or re.match(r"[A-Za-z]:[\\/]", path) or "site-packages" in path
    )


def _line_of(hit: ChunkHit, word: str) -> int:
    """The line of a chunk holding a word, case-insensitively (its first line when none does)."""
    lowered = word.lower()
    for offset, line in enumerate(hit.text.split("\n")):
        if lowered in line.lower():
            return hit.start_line + offset
    return hit.start_line
