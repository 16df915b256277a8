"""Markdown headings as definitions, outside code fences, contained by their parent heading."""

from __future__ import annotations

from ragraf.facts import extract_facts

DOC = """# Guide

Intro text.

## Install ##

```bash
# not a heading
```

### From source
~~~
## still code
~~~
## Usage
    # indented code, not a heading
#not-a-heading
# Appendix
"""


def test_headings_outside_fences_are_definitions_with_parents_and_spans() -> None:
    facts = extract_facts(DOC, "markdown")
    found = [(d.name, d.kind, d.container, d.line, d.end_line) for d in facts.definitions]
    assert found == [
        ("Guide", "heading", None, 1, 17),
        ("Install", "heading", "Guide", 5, 14),
        ("From source", "heading", "Install", 11, 14),
        ("Usage", "heading", "Guide", 15, 17),
        ("Appendix", "heading", None, 18, 18),
    ]
    assert facts.supported and facts.references == () and facts.imports == ()
    lines = DOC.split("\n")
    for d in facts.definitions:
        assert d.name in lines[d.line - 1] and d.signature == lines[d.line - 1].strip()


def test_an_unclosed_fence_hides_the_rest_and_an_empty_file_has_no_headings() -> None:
    assert extract_facts("# A\n```\n# B\n", "markdown").definitions[0].name == "A"
    assert len(extract_facts("# A\n```\n# B\n", "markdown").definitions) == 1
    assert extract_facts("", "markdown").definitions == ()


SETEXT = """---
title: front matter, not a heading
---
Project Title
=============

Intro text
that goes on
---

Install  Guide
--------------

- a list item
---

```
Code
===
```
## Real  heading
"""


def test_underlined_lines_are_headings_at_their_title_line() -> None:
    facts = extract_facts(SETEXT, "markdown")
    found = [(d.name, d.container, d.line, d.end_line) for d in facts.definitions]
    assert found == [
        ("Project Title", None, 4, 21),
        ("Install  Guide", "Project Title", 11, 20),
        ("Real  heading", "Project Title", 21, 21),
    ]
    lines = SETEXT.split("\n")
    for d in facts.definitions:
        assert d.name in lines[d.line - 1] and d.signature == lines[d.line - 1].strip()
