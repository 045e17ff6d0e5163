"""Every relative link in the user documentation (README.md, docs/*.md, bench/README.md,
python/README.md) points at a file or folder that exists in the repository, and so does every
markdown file the text names (`docs/numerics.md`, `DESIGN.md`)."""
import pathlib
import re

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
DOCS = sorted([REPO / "README.md", REPO / "bench" / "README.md", REPO / "python" / "README.md"]
              + list((REPO / "docs").glob("*.md")))

# [text](target) and ![alt](target), the target up to whitespace or ')'; an optional "title".
INLINE = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
# [label]: target reference definitions.
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s|$)", re.MULTILINE)
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`[^`\n]*`")


def relative_targets(text):
    """Link targets outside code blocks and code spans that name a path (no scheme, no anchor
    alone), without their #fragment."""
    text = CODE_SPAN.sub("", FENCE.sub("", text))
    for match in list(INLINE.finditer(text)) + list(REFERENCE.finditer(text)):
        target = match.group(1)
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("#"):
            continue  # https:, mailto:, ... or a heading on the same page
        yield target.split("#", 1)[0]


# A markdown file named in prose or a code span: docs/numerics.md, ../x/y.md, DESIGN.md.
MD_MENTION = re.compile(r"(?<![\w./-])((?:\.\.?/)*[\w-]+(?:/[\w.-]+)*\.md)\b")


def md_mentions(text):
    """Markdown file names mentioned outside fenced code blocks and outside link targets."""
    text = INLINE.sub(lambda m: m.group(0).split("](", 1)[0], FENCE.sub("", text))
    return [m.group(1) for m in MD_MENTION.finditer(text)]


def test_the_scanner_finds_links():
    text = ("See [a](docs/a.md), ![b](img/b.png \"t\"), [c](https://x.org), [d](#e),\n"
            "`[f](g.md)` and\n```\n[h](i.md)\n```\n[j]: ../k.md\n")
    assert list(relative_targets(text)) == ["docs/a.md", "img/b.png", "../k.md"]
    assert md_mentions("see DESIGN.md, `../shared/x.md` and [t](skip.md); v1.md") == [
        "DESIGN.md", "../shared/x.md", "v1.md"]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(doc):
    missing = []
    for target in relative_targets(doc.read_text(encoding="utf-8")):
        path = (doc.parent / target).resolve()
        if not path.exists() or REPO not in path.parents and path != REPO:
            missing.append(target)
    assert not missing, f"{doc.relative_to(REPO)}: links to missing files: {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_named_markdown_files_exist(doc):
    """A name resolves from the document's folder or from the repository root."""
    missing = [name for name in md_mentions(doc.read_text(encoding="utf-8"))
               if not (doc.parent / name).exists() and not (REPO / name).exists()]
    assert not missing, f"{doc.relative_to(REPO)}: names files that do not exist: {missing}"
