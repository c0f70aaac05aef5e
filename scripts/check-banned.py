#!/usr/bin/python3
"""Fails on calls to banned C library functions in src/, fuzz/, tests/unit/
and tests/helpers/ (comments and string literals are ignored).

usage: check-banned.py [ROOT]   (default: this repository)

Each function is banned for a reason the code cannot work around locally;
the replacement is given in the message:
"""
import os
import re
import sys

BANNED = {
    # No bound on the destination: one long input overflows the buffer.
    "strcpy": "snprintf(dst, sizeof dst, \"%s\", src) or memcpy with a checked length",
    "strcat": "snprintf at an offset, or struct osb_buf",
    "stpcpy": "memcpy with a checked length",
    "sprintf": "snprintf (and check for truncation), or osb_buf_addf",
    "vsprintf": "vsnprintf",
    "gets": "fgets or getline (gets is gone from C11)",
    # Bounded, but leave the result unterminated when the source is long
    # (strncpy) or take the space left rather than the size (strncat): the
    # classic off-by-one; snprintf says what is meant.
    "strncpy": "snprintf, or memcpy plus an explicit terminator",
    "strncat": "snprintf at an offset, or struct osb_buf",
    # Hidden static state: not reentrant, and it silently skips empty fields.
    "strtok": "strtok_r or strsep",
    # No error report: "abc" and "0" both give 0, and overflow is undefined.
    "atoi": "strtol with an end pointer and errno, or the typed parsers in common/",
    "atol": "strtol with an end pointer and errno",
    "atoll": "strtoll with an end pointer and errno",
    "atof": "strtod with an end pointer",
    # The name can be taken by someone else between the call and the open.
    "tmpnam": "mkstemp or mkdtemp",
    "tempnam": "mkstemp or mkdtemp",
    "mktemp": "mkstemp or mkdtemp",
}
DIRS = ["src", "fuzz", "tests/unit", "tests/helpers"]

# Comments and literals become spaces (newlines kept, so line numbers hold).
NOISE_RE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
# A call: the name not preceded by an identifier character, `.` or `->`.
CALL_RE = re.compile(r'(?<![\w.>])(' + "|".join(BANNED) + r')\s*\(')


def blank(m):
    return re.sub(r"[^\n]", " ", m.group(0))


def scan(root):
    out = []
    for top in DIRS:
        for d, _, names in sorted(os.walk(os.path.join(root, top))):
            for n in sorted(names):
                if not n.endswith((".c", ".h")):
                    continue
                p = os.path.join(d, n)
                with open(p, encoding="utf-8", errors="replace") as f:
                    code = NOISE_RE.sub(blank, f.read())
                for m in CALL_RE.finditer(code):
                    line = code.count("\n", 0, m.start()) + 1
                    name = m.group(1)
                    out.append("%s:%d: %s() is banned; use %s"
                               % (os.path.relpath(p, root), line, name, BANNED[name]))
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    found = scan(root)
    for line in found:
        print(line)
    if found:
        print("check-banned: %d call(s) of banned functions (the list: scripts/check-banned.py)"
              % len(found))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
