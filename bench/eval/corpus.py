"""The evaluation corpus: English man pages of Debian's manpages / manpages-dev, troff stripped to text, split by file."""

import gzip
import os
import re

PACKAGES = ("manpages", "manpages-dev")
DPKG_INFO = "/var/lib/dpkg/info"
HELD_OUT_EVERY = 10  # file i (in sorted order) is held out when i % 10 == 0

_FONT = re.compile(r"\\f(?:\[[^\]]*\]|\(..|.)")  # \fB \fI \fR \fP \f(CW \f[B]
_NAMED = {"em": "--", "en": "-", "aq": "'", "dq": '"', "lq": '"', "rq": '"', "oq": "'",
          "cq": "'", "bu": "*", "co": "(C)", "rg": "(R)", "mu": "x", "+-": "+-", "ti": "~",
          "ha": "^", "ga": "`", "rs": "\\", "<=": "<=", ">=": ">=", "!=": "!=", "->": "->",
          "<-": "<-", "aa": "'", "hy": "-", "pc": ".", "de": "deg"}
_ESCAPE = re.compile(r"\\(\((..)|\[([^\]]*)\]|\*(?:\((..)|\[([^\]]*)\]|(.))|[-e&:%|^ 0~c]|"
                     r"[sv]'?[-+]?\d*'?|.)")
_ALTERNATING = {"BR", "RB", "BI", "IB", "IR", "RI"}
_FONT_MACROS = {"B", "I", "R", "SM", "SB"}
_HEADINGS = {"SH", "SS"}
_BREAKS = {"PP", "P", "LP", "TP", "IP", "HP", "sp", "br", "RS", "RE", "EX", "EE", "nf", "fi",
           "in", "ti", "TQ", "ad", "na", "ne", "ft", "ps", "vs", "ce", "ll", "UE", "ME"}


def manpage_paths():
    """The .gz man pages owned by PACKAGES (from dpkg's file lists), regular files only (no
    symlinks), sorted: the corpus's deterministic file order. [] when the packages are absent."""
    paths = set()
    for pkg in PACKAGES:
        listing = os.path.join(DPKG_INFO, f"{pkg}.list")
        if not os.path.exists(listing):
            continue
        with open(listing, encoding="utf-8") as f:
            for line in f:
                p = line.strip()
                if (p.startswith("/usr/share/man/man") and p.endswith(".gz")
                        and os.path.isfile(p) and not os.path.islink(p)):
                    paths.add(p)
    return sorted(paths)


def _escape(match):
    two, bracket = match.group(2), match.group(3)
    if two is not None or bracket is not None:
        name = two if two is not None else bracket
        return _NAMED.get(name, "")
    whole = match.group(0)
    if whole.startswith("\\*"):
        name = match.group(4) or match.group(5) or match.group(6) or ""
        return {"R": "(R)", "Tm": "(TM)", "lq": '"', "rq": '"'}.get(name, "")
    c = whole[1]
    return {"-": "-", "e": "\\", " ": " ", "0": " ", "~": " ", "\\": "\\", ".": ".",
            "'": "'", "`": "`"}.get(c, "")


def _inline(text):
    return _ESCAPE.sub(_escape, _FONT.sub("", text))


def _macro_args(rest):
    """Splits a macro's arguments, honouring double quotes."""
    args, cur, quoted, seen = [], [], False, False
    for ch in rest:
        if ch == '"':
            quoted, seen = not quoted, True
        elif ch in " \t" and not quoted:
            if cur or seen:
                args.append("".join(cur))
            cur, seen = [], False
        else:
            cur.append(ch)
    if cur or seen:
        args.append("".join(cur))
    return args


def troff_to_text(source):
    """Plain text of a man page's troff source: comments and layout requests dropped, font
    macros (.B, .BR, ...) and escapes (\\fB, \\-, \\(em, ...) reduced to their text, headings kept
    as lines, paragraph breaks as blank lines. Returns "" for a `.so` redirect page."""
    out = []
    for raw in source.splitlines():
        line = raw.rstrip()
        if line.startswith(".so ") and not out:
            return ""
        if line.startswith(('.\\"', "'\\\"", '\\"')) or line in (".", "'"):
            continue
        if line.startswith((".", "'")):
            parts = line[1:].strip().split(None, 1)
            if not parts:
                continue
            name, rest = parts[0], (parts[1] if len(parts) > 1 else "")
            args = _macro_args(rest)
            if name in _HEADINGS:
                out.extend(["", _inline(" ".join(args)), ""])
            elif name in _ALTERNATING:
                out.append(_inline("".join(args)))
            elif name in _FONT_MACROS:
                if args:
                    out.append(_inline(" ".join(args)))
            elif name in ("TH",):
                if args:
                    out.append(_inline(" ".join(args[:2])))
            elif name in ("IP", "TP", "PP", "P", "LP", "HP", "sp"):
                if name == "IP" and args:
                    out.append(_inline(args[0]))
                elif out and out[-1] != "":
                    out.append("")
            elif name in ("UR", "MT"):
                if args:
                    out.append(_inline(args[0]))
            elif name in _BREAKS:
                continue
            # any other request or macro (.de, .ds, .if, .ie, .nr, .tr, table macros): dropped
            continue
        text = _inline(line)
        out.append(text)
    text = "\n".join(out)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return text + "\n" if text else ""


def page_text(path):
    """troff_to_text of one gzipped page, decoded as UTF-8 (undecodable bytes replaced)."""
    with gzip.open(path, "rb") as f:
        return troff_to_text(f.read().decode("utf-8", errors="replace"))


def load_corpus(paths=None):
    """{"train": bytes, "held_out": bytes, "train_files": n, "held_out_files": n}: the pages'
    text as UTF-8 bytes, joined in file order; file i is held out when i % HELD_OUT_EVERY == 0
    (the split is by file, so no page is in both). Pages that are `.so` redirects are skipped
    before numbering."""
    texts = []
    for p in manpage_paths() if paths is None else paths:
        t = page_text(p)
        if t:
            texts.append(t.encode("utf-8"))
    train = [t for i, t in enumerate(texts) if i % HELD_OUT_EVERY != 0]
    held = [t for i, t in enumerate(texts) if i % HELD_OUT_EVERY == 0]
    return {"train": b"\n".join(train), "held_out": b"\n".join(held),
            "train_files": len(train), "held_out_files": len(held)}
