#!/usr/bin/env python3
"""Runs every `$ lucidq ...` example of a Markdown guide (docs/cli.md), in order, in a fresh directory.

    python3 run_doc_examples.py --lucidq PATH/TO/lucidq docs/cli.md

A ```json block right after a line ending in "`work/NAME` is" is written to that
file just before the first command that names it. A command followed by a line
starting "lucidq: error:" must exit 1 with exactly that line on stderr; every
other command must exit 0. The first mismatch prints the command and its output
and exits 1.
"""

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile

FILE_INTRO = re.compile(r"`([\w./-]+)` is\s*$")


def parse_guide(text):
    """Returns (commands, files): [(command, expected error line or None)] in order and {path: content}."""
    commands, files = [], {}
    lines = text.splitlines()
    fence, pending_file, block = None, None, []
    for line in lines:
        if fence is None:
            if line.startswith("```"):
                fence, block = line[3:].strip(), []
            elif FILE_INTRO.search(line):
                pending_file = FILE_INTRO.search(line).group(1)
            elif line.strip():
                pending_file = None
            continue
        if line.startswith("```"):
            if fence == "json" and pending_file:
                files[pending_file] = "\n".join(block) + "\n"
            fence, pending_file = None, None
            continue
        block.append(line)
        if fence == "console" and line.startswith("$ lucidq"):
            commands.append([line[2:], None])
        elif fence == "console" and line.startswith("lucidq: error:") and commands:
            commands[-1][1] = line
    return commands, files


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lucidq", required=True, help="the lucidq executable")
    parser.add_argument("guide", help="the Markdown file")
    args = parser.parse_args()
    with open(args.guide, encoding="utf-8") as f:
        commands, files = parse_guide(f.read())
    if not commands:
        sys.exit(f"{args.guide}: no '$ lucidq' lines in ```console blocks")
    lucidq = os.path.abspath(args.lucidq)
    with tempfile.TemporaryDirectory(prefix="lucidq-doc-") as workdir:
        for command, expected_error in commands:
            for path, content in list(files.items()):
                if path in command:
                    with open(os.path.join(workdir, path), "w", encoding="utf-8") as out:
                        out.write(content)
                    del files[path]
            argv = [lucidq] + shlex.split(command)[1:]
            result = subprocess.run(argv, cwd=workdir, capture_output=True, text=True)
            if expected_error is None:
                passed = result.returncode == 0
            else:
                passed = result.returncode == 1 and result.stderr.strip() == expected_error
            print(f"{'ok' if passed else f'FAILED (exit {result.returncode})'}: {command}")
            if not passed:
                if expected_error is not None:
                    print(f"expected exit 1 and stderr: {expected_error}")
                print(result.stdout[-4000:], result.stderr[-4000:], sep="\n")
                return 1
    if files:
        print(f"files never used by a command: {sorted(files)}")
        return 1
    print(f"{len(commands)} examples ran")
    return 0


if __name__ == "__main__":
    sys.exit(main())
