"""Agent-facing text: warnings first and never cut, results as path:start-end within a byte budget."""

from __future__ import annotations

from collections.abc import Callable

from ragraf.api.envelope import Envelope, SearchResult

_MIN_SNIPPET_LINES = 3
# Given where the next page starts (an offset, or read's next start line), the call that gets it.
More = Callable[[int], str]


# Control characters in a path (a file named "a\nWARNING: …") shown as \xNN: text lines cannot be forged.
_CONTROL = {c: f"\\x{c:02x}" for c in [*range(32), 127]}


def printable(path: str) -> str:
    """A path as agent text shows it: control characters escaped."""
    return path.translate(_CONTROL)


def stale_action(path: str, suggest: str) -> str:
    """What to do about a stale result: read it live, or reindex (a deleted file)."""
    if suggest == "reindex":
        return "run `ragraf index`"
    return f"read it live: `ragraf read {printable(path)}`"


def _header(env: Envelope) -> list[str]:
    lines = []
    cap = env.capability
    if env.error:  # as every other answer words it: ERROR [code]: message, then → what to do
        lines.append(f"ERROR [{env.error['code']}]: {env.error['message']}")
        if env.error.get("suggest"):
            lines.append(f"→ {env.error['suggest']}")
    if cap.degraded:
        lines.append("WARNING: degraded: " + "; ".join(cap.reasons))
    elif cap.reasons:  # partial semantic coverage: answers are semantic only where vectors exist
        lines.append("NOTE: " + "; ".join(cap.reasons))
    for w in env.stale_warnings:
        lines.append(f"WARNING: {printable(w.path)} {w.reason}; {stale_action(w.path, w.suggest)}")
    for note in env.notes:
        lines.append(f"NOTE: {note}")
    lines.append(f"[{env.op} @ {env.index_rev or 'no index'} · state {env.state}]")
    return lines


def _result_block(r: SearchResult, max_lines: int | None) -> str:
    tag = f"  [{r.kind}{', STALE' if r.stale else ''}]"
    sym = f"  {r.symbol}" if r.symbol else ""
    lines = r.snippet.split("\n")
    if max_lines is not None and len(lines) > max_lines:
        lines = lines[:max_lines] + [f"… ({len(r.snippet.split(chr(10))) - max_lines} more lines)"]
    return f"{printable(r.path)}:{r.start_line}-{r.end_line}{sym}{tag}\n" + "\n".join(lines)


def _fitted(r: SearchResult, room: int, bare: bool) -> tuple[str, int]:
    """A result's block within `room` bytes if it can be: its snippet halved down to a few lines,
    then (when `bare`) to none, the path:start-end line alone; and how many snippet lines it keeps."""
    max_lines = len(r.snippet.split("\n"))
    block = _result_block(r, None)
    while len(block.encode()) + 2 > room and max_lines > _MIN_SNIPPET_LINES:
        max_lines = max(_MIN_SNIPPET_LINES, max_lines // 2)
        block = _result_block(r, max_lines)
    if bare and len(block.encode()) + 2 > room:
        max_lines = 0
        block = _result_block(r, 0)
    return block, max_lines


def _elision(count: int, env: Envelope, shown: int, budget: int | None, more: More | None) -> str:
    """`… N more results (of TOTAL) …; <the call that gets them>`, with the true total."""
    page = env.page or {}
    offset = int(page.get("offset") or 0)
    total = int(page.get("total") or offset + shown + count)
    why = (
        f" not shown (byte budget {budget})"
        if budget is not None and count > env.truncated["results"]
        else ""
    )
    text = f"… {count} more results{why}: {offset + shown} of {total} shown"
    if offset:
        text = f"… {count} more results{why}: {offset + 1}-{offset + shown} of {total} shown"
    return text + (f"; {more(offset + shown)}" if more else "")


def render_search(env: Envelope, budget_bytes: int = 16 * 1024, more: More | None = None) -> str:
    """The text an agent reads; fits budget_bytes by trimming snippets, then eliding results (the
    header with its warnings is never cut). `more(next_offset)` says how to get what is not shown."""
    head = "\n".join(_header(env))
    if not env.results:
        return head + "\nno results"
    results = env.results
    used = len(head.encode())  # each block adds itself and the blank line before it
    blocks: list[str] = []
    kept: list[int] = []  # snippet bytes each block shows
    for i, r in enumerate(results):
        remaining = budget_bytes - used
        # A share of what is left each, down to a few lines; the best result alone may go bare
        # rather than leave the answer empty (lower ones are elided first).
        block, max_lines = _fitted(r, remaining // (len(results) - i), bare=False)
        if len(block.encode()) + 2 > remaining and not blocks:
            block, max_lines = _fitted(r, remaining, bare=True)
        if len(block.encode()) + 2 > remaining:
            break
        blocks.append(block)
        kept.append(len("\n".join(r.snippet.split("\n")[:max_lines]).encode()))
        used += len(block.encode()) + 2

    following = env.truncated["results"]  # results past this page, counted by the operation

    def elision(count: int) -> str:
        return _elision(count + following, env, len(blocks), budget_bytes if count else None, more)

    elided = len(results) - len(blocks)
    while elided and blocks and used + len(elision(elided).encode()) + 2 > budget_bytes:
        used -= len(blocks.pop().encode()) + 2  # make room for the line that says what is left out
        kept.pop()
        elided += 1
    if elided or following:
        blocks.append(elision(elided))
        env.truncated["results"] += elided
    env.truncated["bytes"] = sum(len(r.snippet.encode()) for r in results) - sum(kept)
    return head + "\n\n" + "\n\n".join(blocks)


def _fact_lines(env: Envelope, f: dict, group: object) -> tuple[list[str], object]:
    lines = []
    if env.op == "refs" and (f["path"], f["container"]) != group:
        group = (f["path"], f["container"])
        lines.append(f"{printable(f['path'])} · in {f['container'] or '<module>'}")
    stale = "  [STALE]" if f["stale"] else ""
    where = f"{printable(f['path'])}:{f['line']}" + (
        f"-{f['end_line']}" if f["end_line"] != f["line"] else ""
    )
    owner = f"{f['container']}." if f.get("container") and env.op != "refs" else ""
    detail = f"  {f['signature']}" if env.op == "def" and f.get("signature") else ""
    lines.append(f"  {where}  {owner}{f['name']} ({f['kind']}){stale}{detail}")
    if f.get("body"):
        start = f.get("body_start_line") or f["line"]
        width = len(str(start + f["body"].count("\n")))
        lines += [f"    {n:>{width}}  {t}" for n, t in enumerate(f["body"].split("\n"), start=start)]
    return lines, group


def render_facts(env: Envelope, budget_bytes: int | None = None, more: More | None = None) -> str:
    """def / refs: one `path:line  container › name (kind)` line each, grouped by enclosing definition;
    within budget_bytes when given, whole results elided after the last that fits, with the true
    total and (`more`) the call that gets the rest."""
    lines = _header(env)
    if not env.results:
        return "\n".join(lines + ["no results"])
    used = sum(len(line.encode()) + 1 for line in lines)
    group: object = None
    reserve = 160  # room for the line that says what is left out
    shown = 0
    for f in env.results:
        block, next_group = _fact_lines(env, f, group)
        size = sum(len(line.encode()) + 1 for line in block)
        if budget_bytes is not None and used + size + reserve > budget_bytes and shown:
            break
        lines += block
        used += size
        group = next_group
        shown += 1
    elided = len(env.results) - shown
    following = env.truncated["results"]
    if elided or following:
        lines.append(_elision(elided + following, env, shown, budget_bytes if elided else None, more))
        env.truncated["results"] += elided
    elif not (env.page or {}).get("offset"):  # all of them shown: say how many
        lines.append(_fact_count(env.op, env.results))
    return "\n".join(lines)


def _fact_count(op: str, results: list[dict]) -> str:
    """`12 call sites in 4 files` / `3 definitions in 2 files`."""
    n, files = len(results), len({f["path"] for f in results})
    if op == "def":
        noun = "definition"
    else:
        noun = "call site" if all(f.get("kind") == "call" for f in results) else "reference"
    return f"{n} {noun}{'s' * (n != 1)} in {files} file{'s' * (files != 1)}"


def render_outline(env: Envelope) -> str:
    lines = _header(env)
    for f in env.results:
        stale = "  [STALE]" if f["stale"] else ""
        lines.append(
            f"{'  ' * f['depth']}{f['name']} ({f['kind']})  {printable(f['path'])}:{f['line']}-{f['end_line']}{stale}"
        )
    return "\n".join(lines)


def render_read(env: Envelope, budget_bytes: int | None = None, more: More | None = None) -> str:
    """The file's lines, numbered; within budget_bytes when given: the first lines that fit, and
    (`more(next_start_line)`) the call that reads on. The result then holds the lines shown."""
    lines = _header(env)
    used = sum(len(line.encode()) + 1 for line in lines)
    for r in env.results:
        state = (
            "not in the index"
            if r["indexed_sha256"] is None
            else "differs from the index"
            if r["differs_from_index"]
            else "same as the index"
        )
        head = f"{printable(r['path'])}:{r['start_line']}-{r['end_line']} of {r['total_lines']} ({state})"
        lines.append(head)
        used += len(head.encode()) + 1
        width = len(str(r["end_line"]))
        content = r["content"].split("\n")
        reserve = 200 if budget_bytes is not None else 0
        shown = 0
        for n, text in enumerate(content, start=r["start_line"]):
            line = f"{n:>{width}}  {text}"
            if budget_bytes is not None and used + len(line.encode()) + 1 + reserve > budget_bytes:
                break
            lines.append(line)
            used += len(line.encode()) + 1
            shown += 1
        if shown < len(content):
            last = r["start_line"] + shown - 1
            next_line = last + 1
            env.truncated["bytes"] += len("\n".join(content[shown:]).encode())
            lines.append(
                f"… lines {next_line}-{r['end_line']} not shown (byte budget {budget_bytes}): "
                f"{r['start_line']}-{last} of {r['total_lines']} shown"
                + (f"; {more(next_line)}" if more else "")
            )
            lines[lines.index(head)] = head.replace(f"-{r['end_line']} of ", f"-{last} of ", 1)
            r["content"] = "\n".join(content[:shown])
            r["end_line"], r["next_start_line"] = last, next_line
    return "\n".join(lines)


def render_drift(env: Envelope) -> str:
    lines = _header(env)
    if not env.results:
        lines.append("no open drift entries: the disk matches the index")
    if env.results:
        files = len({e["path"] for e in env.results})
        syms = sum(len(e["affected_symbols"]) for e in env.results)
        chunks = sum(len(e["affected_nodes"]) for e in env.results)
        lines.append(
            f"{files} file{'s' * (files != 1)} changed on disk since {env.index_rev}: {syms} indexed "
            f"definition{'s' * (syms != 1)} in them may be out of date, {chunks} indexed "
            f"chunk{'s' * (chunks != 1)} of them answer searches as stale; run `ragraf index` to catch up"
        )
    for e in env.results:
        syms, chunks = len(e["affected_symbols"]), len(e["affected_nodes"])
        names = [str(s["name"]) if isinstance(s, dict) else str(s) for s in e["affected_symbols"][:5]]
        named = ", ".join(names) + (" …" if syms > 5 else "")
        lines.append(
            f"#{e['entry_id']} {e['change']:<6} {printable(e['path'])}  (seen by {e['detected_by']} at {e['detected_at']})"
            + (f"\n    {syms} indexed definitions in it may be out of date: {named}" if syms else "")
            + (f"\n    {chunks} indexed chunks of it answer searches as stale" if chunks else "")
        )
    return "\n".join(lines)


def render_status(env: Envelope) -> str:
    lines = _header(env)
    if not env.results:
        return "\n".join(lines)
    info = env.results[0]
    rev = info["revision"]
    git = f", git {rev.get('git_branch') or ''}@{rev['git_head'][:10]}" if rev.get("git_head") else ""
    lines.append(f"{rev['rev']} ({rev['created_at']}{git}): {rev['files']} files, {rev['chunks']} chunks")
    cap = env.capability
    if cap.semantic or cap.semantic_coverage or cap.reasons:
        why = f" ({'; '.join(cap.reasons)})" if cap.reasons and cap.semantic_coverage < 1.0 else ""
        lines.append(f"semantic coverage: {cap.semantic_coverage:.1%} of chunks embedded{why}")
    else:
        lines.append("semantic coverage: none (lexical search and facts only)")
    drift = info.get("drift") or {}
    changed = {k: len(v) for k, v in drift.items() if v}
    lines.append(
        "drift: " + ", ".join(f"{n} {k}" for k, n in changed.items()) + " since the index"
        if changed
        else "drift: none, the disk matches the index"
    )
    lines.append(f"index: {info['index_file']}")
    return "\n".join(lines)


def render_revisions(env: Envelope, header: bool = True) -> str:
    """One line per retained revision, oldest first: name, time, counts, short hashes."""
    lines = _header(env) if header else []
    for r in env.results:
        git = f"  {r['git_branch'] or ''}@{r['git_head'][:10]}" if r.get("git_head") else ""
        lines.append(
            f"{r['rev']}  {r['created_at']}  {r['files']:>6} files {r['chunks']:>7} chunks  "
            f"{(r['corpus_hash'] or '')[:12]}{git}"
        )
    return "\n".join(lines)


def render_localize(env: Envelope, budget_bytes: int = 16 * 1024) -> str:
    """localize: the ranked files, each with its evidence and best chunks as path:line, in the budget."""
    lines = _header(env)
    if not env.results:
        return "\n".join(lines + ["no results"])
    used = sum(len(line.encode()) + 1 for line in lines)
    for i, r in enumerate(env.results):
        stale = "  [STALE]" if r["stale"] else ""
        block = [f"{i + 1}. {printable(r['path'])}  {r['kind']}{stale}"]
        block += [f"   - {e['detail']}" for e in r["evidence"]]
        block += [
            f"   {printable(c['path'])}:{c['start_line']}-{c['end_line']}"
            + (f"  {c['symbol']}" if c.get("symbol") else "")
            for c in r["chunks"]
        ]
        size = sum(len(line.encode()) + 1 for line in block)
        if used + size > budget_bytes:
            lines.append(
                f"… {len(env.results) - i} more files elided (byte budget {budget_bytes}); ask a smaller k"
            )
            break
        lines += block
        used += size
    return "\n".join(lines)
