"""ember.testing.FileCheck: torch.testing.FileCheck (LLVM FileCheck's idea) on text, e.g.
``str(ember.jit.script(m).graph)`` or any IR/code string.

    FileCheck().check("aten::mul").check_not("aten::add").check_next("return").run(text)

Checks match in order, each searching from where the previous one matched: `check` anywhere
after it, `check_same` on the same line, `check_next` on the following line, `check_count`
n times (with ``exactly=True`` and no further occurrence before the next check), `check_dag`
(a run of them) in any order, `check_regex` a regular expression. A run of `check_not`s
applies between the previous match and the next positive check (or the end of the text).
`run` raises RuntimeError at the first check that fails, showing the text around it.
"""
import re

__all__ = ["FileCheck"]

_CHECK, _SAME, _NEXT, _COUNT, _DAG, _NOT, _REGEX = (
    "CHECK", "CHECK-SAME", "CHECK-NEXT", "CHECK-COUNT", "CHECK-DAG", "CHECK-NOT", "CHECK-REGEX")


class _Check:
    __slots__ = ("kind", "text", "count")

    def __init__(self, kind, text, count=None):
        self.kind, self.text, self.count = kind, text, count

    def __str__(self):
        count = f"-{self.count}" if self.kind == _COUNT else ""
        kind = "CHECK-COUNT" + count if self.kind == _COUNT else self.kind
        return f"{kind}: {self.text}"


def _shown(needle):
    return needle.replace("\n", "\\n")


def _context(source, start, end):
    """The source lines around [start, end), the spot underlined with ~ as torch does."""
    line_start = source.rfind("\n", 0, start) + 1
    line_end = source.find("\n", max(end, start))
    line_end = len(source) if line_end < 0 else line_end
    line = source[line_start:line_end]
    width = max(1, min(end, line_end) - start)
    return f"{line}\n{' ' * (start - line_start)}{'~' * width}"


class FileCheck:
    """Build a sequence of checks (each method returns the FileCheck), then ``run(text)``."""

    def __init__(self):
        self._checks = []

    def _add(self, kind, text, count=None):
        if not isinstance(text, str):
            raise TypeError(f"FileCheck: expected a str to search for, got {type(text).__name__}")
        self._checks.append(_Check(kind, text, count))
        return self

    def check(self, s):
        """`s` occurs after the previous match."""
        return self._add(_CHECK, s)

    def check_not(self, s):
        """`s` does not occur between the previous match and the next one."""
        return self._add(_NOT, s)

    def check_same(self, s):
        """`s` occurs on the line of the previous match, after it."""
        return self._add(_SAME, s)

    def check_next(self, s):
        """`s` occurs on the line after the previous match's."""
        return self._add(_NEXT, s)

    def check_count(self, s, count, exactly=False):
        """`s` occurs `count` times after the previous match; with `exactly`, no more follow
        (before the next check). ``count=0`` needs ``exactly=True``: then `s` is absent."""
        count = int(count)
        if count < 0:
            raise TypeError("check_count(): count must be a non-negative int")
        if count == 0 and not exactly:
            raise RuntimeError("check_count(): count == 0 with exactly=False checks nothing")
        if count:
            self._add(_COUNT, s, count)
        if exactly:
            self._add(_NOT, s)
        return self

    def check_dag(self, s):
        """A run of check_dag strings all occur after the previous match, in any order."""
        return self._add(_DAG, s)

    def check_regex(self, s):
        """A match of the regular expression `s` occurs after the previous match."""
        re.compile(s)
        return self._add(_REGEX, s)

    def check_source_highlighted(self, s):
        raise NotImplementedError("ember's FileCheck checks text: TorchScript source "
                                  "highlighting (check_source_highlighted) is not supported")

    # ---- running ----

    def run(self, test_string, *extra):
        """Run the checks on `test_string` (a str, or anything whose str() is the text, such
        as a graph); raise RuntimeError at the first failing check."""
        if extra:
            raise NotImplementedError("ember's FileCheck runs its checks on one text: the "
                                      "run(checks_file, test_file) form is not supported")
        source = test_string if isinstance(test_string, str) else str(test_string)
        groups = self._groups()
        prev = (0, 0)
        i = 0
        while i < len(groups):
            group = groups[i]
            if group[0].kind != _NOT:
                prev = self._match_group(group, source, prev)
                i += 1
                continue
            if i + 1 < len(groups):
                after = self._match_group(groups[i + 1], source, prev)
                self._check_not(group, source, prev[1], after[0])
                prev = after
                i += 2
            else:
                self._check_not(group, source, prev[1], len(source))
                i += 1

    def _groups(self):
        """Consecutive check_not's form one group, as do consecutive check_dag's."""
        groups = []
        for c in self._checks:
            if groups and c.kind in (_NOT, _DAG) and groups[-1][0].kind == c.kind:
                groups[-1].append(c)
            else:
                groups.append([c])
        return groups

    @staticmethod
    def _fail(check, text, source, start, end):
        raise RuntimeError(f"{text}\n{_context(source, start, end)}\nFrom {check}")

    def _find(self, source, needle, start, check, regex=False):
        if regex:
            m = re.compile(needle).search(source, start)
            # torch places a regex match at its offset from the search start (not in the
            # text) and len(pattern) long; later checks search from there, so a suite that
            # passes under torch passes here: ember places it the same way
            at = m.start() - start if m else 0
            span = (at, at + len(needle)) if m else None
        else:
            pos = source.find(needle, start)
            span = (pos, pos + len(needle)) if pos >= 0 else None
        if span is None:
            what = "regex " if regex else ""
            self._fail(check, f'Expected to find {what}"{_shown(needle)}" but did not find it\n'
                       "Searched string:", source, start, len(source))
        return span

    def _not_in(self, source, needle, start, end, check):
        pos = source.find(needle, start, end)
        if pos >= 0:
            self._fail(check, f'Expected to not find "{_shown(needle)}" but found it', source, pos,
                       pos + len(needle))

    def _check_not(self, group, source, start, end):
        for c in group:
            self._not_in(source, c.text, start, end, c)

    def _match_group(self, group, source, prev):
        c = group[0]
        if c.kind == _DAG:
            spans = [self._find(source, d.text, prev[1], d) for d in group]
            return min(s[0] for s in spans), max(s[1] for s in spans)
        at = prev[1]
        if c.kind in (_CHECK, _REGEX):
            return self._find(source, c.text, at, c, regex=c.kind == _REGEX)
        if c.kind == _SAME:
            span = self._find(source, c.text, at, c)
            self._not_in(source, "\n", at, span[0], c)
            return span
        if c.kind == _NEXT:
            newline = self._find(source, "\n", at, c)
            span = self._find(source, c.text, newline[1], c)
            self._not_in(source, "\n", newline[1], span[0], c)
            return span
        # _COUNT: `count` successive occurrences, the group spanning all of them
        first = None
        for _ in range(c.count):
            span = self._find(source, c.text, at, c)
            first = span[0] if first is None else first
            at = span[1]
        return first, at
