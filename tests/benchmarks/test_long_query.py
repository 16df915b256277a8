"""The bug reports the long-query benchmark pastes: about 4 KB, a traceback through the file, then the file."""

from __future__ import annotations

from benchmarks import long_query


def test_a_bug_report_names_its_file_and_holds_4_kb_of_it() -> None:
    text = "".join(
        f"export function check{i}(value: unknown) {{ return value !== undefined; }}\n" for i in range(400)
    )
    (report,) = long_query.bug_reports([("src/checks.ts", text)])
    assert "at parse (src/checks.ts:120:15)" in report
    assert 4000 <= len(report.encode()) <= 4600
    assert text[len(text) // 3 : len(text) // 3 + 200] in report


def test_a_multibyte_file_still_gives_4_kb() -> None:
    (report,) = long_query.bug_reports([("a.ts", "é" * 20_000)])
    assert len(report.encode()) <= 4600
