#!/usr/bin/env python3
"""Fail if the modules of a crate depend on each other in a cycle (STYLE.md: every module graph acyclic).

Usage: python3 scripts/module_cycles.py [workspace root]   (Python 3 stdlib only)
Builds the file-level module graph of each crate root (crates/*/src/{lib,main}.rs) and multi-file
example (crates/*/examples/*/main.rs). Files come from `mod x;` (x.rs, x/mod.rs or `#[path]`).
A -> B when A names an item of B through `use crate::/super::/self::/child::…` or a qualified path
(`crate::x::y`, `super::y`, `child::y`, `imported_module::y`), resolved to the longest module prefix.
Imported and re-exported names are followed to the file that defines them; an import the file never
uses (a bare `pub use inner::Thing`) is no edge, nor is `mod x;`, nor a reference to an ancestor
file (a child module is part of its parent and may use its private helpers). `#[cfg(test)]` items
(so test modules and their files), comments and literals are skipped.
Prints each set of files that all reach each other, with the names that tie them, and exits 1;
otherwise prints "no module cycles in N crates". Break a cycle by moving the shared item down.
"""
import re, sys
from pathlib import Path

TOKEN = re.compile(r'''(?P<skip>\s+|//[^\n]*|'\w+(?!'))|/\*|b?r(?P<raw>\#*)"(?P<r>.*?)"(?P=raw)|b?"(?P<s>(?:\\.|[^"\\])*)"
                   |b?'(?:\\(?:u\{\w+\}|.)|[^'\\])'|(?:r\#)?(?P<id>\w+)|::|.''', re.S | re.X)
ITEMS = {'fn', 'struct', 'enum', 'trait', 'type', 'const', 'static', 'union'}
OPEN, SHUT, WORD = ('(', '[', '{'), (')', ']', '}'), re.compile(r'\w+$')

def tokens(text):
    """Words and punctuation as strings, string literals as ('str', text); comments dropped."""
    out, i = [], 0
    while i < len(text):
        m = TOKEN.match(text, i)
        i = m.end()
        if m.group(0) == '/*':  # block comments nest
            depth = 1
            while depth and i < len(text):
                j = min((k for k in (text.find('/*', i), text.find('*/', i)) if k >= 0), default=len(text))
                depth, i = depth + (1 if text.startswith('/*', j) else -1), j + 2
        elif m.group('raw') is not None or m.group('s') is not None: out.append(('str', m.group('r') or m.group('s')))
        elif not m.group('skip') and m.group(0)[-1] != "'": out.append(m.group('id') or m.group(0))
    return out

def close(ts, i):
    """Index just past the bracket group that opens at ts[i]."""
    depth = 0
    for j in range(i, len(ts)):
        depth += (ts[j] in OPEN) - (ts[j] in SHUT)
        if depth == 0: return j + 1
    return len(ts)

def strip_tests(ts):
    """Drop every item, statement or field under #[cfg(test)], with its other attributes."""
    out, i = [], 0
    while i < len(ts):
        if ts[i:i + 7] != ['#', '[', 'cfg', '(', 'test', ')', ']']:
            out.append(ts[i]); i += 1; continue
        i += 7
        while i < len(ts) and ts[i] == '#': i = close(ts, i + 1)
        head = ts[i:i + 6]
        item = any(t in ITEMS | {'mod', 'use', 'impl'} for t in head[:next((n for n, t in enumerate(head) if t in (':', '=', ',')), 6)])
        while i < len(ts) and ts[i] not in SHUT:
            if ts[i] in OPEN:
                i, brace = close(ts, i), ts[i] == '{'
                if brace: i += ts[i:i + 1] == [';']; break
            else:
                i += 1
                if ts[i - 1] == ';' or (ts[i - 1] == ',' and not item): break
    return out

def use_tree(ts, i, path, out):
    """Parse the use tree at ts[i] into (name, path) leaves ('*' names a glob); return its end."""
    path = list(path)
    while i < len(ts):
        t = ts[i]
        if t == '{':
            i += 1
            while i < len(ts) and ts[i] != '}':
                j = use_tree(ts, i, path, out)
                i = j + 1 if j == i or ts[j] == ',' else j
            return i + 1
        if t == '*' or (t == 'self' and path): out.append(('*' if t == '*' else path[-1], path)); return i + 1
        if t == 'as': out.append((ts[i + 1], path)); return i + 2
        if t != '::' and not (isinstance(t, str) and WORD.match(t)): break
        if t != '::': path.append(t)
        i += 1
    if path: out.append((path[-1], path))
    return i

class Tree:
    """The modules of one crate root: file, defined names, imports, used words and path references."""

    def __init__(self, root):
        self.file, self.defs, self.imports, self.used, self.refs = {}, {}, {}, {}, {}
        self.load(root, ())

    def load(self, f, mp):
        ts = strip_tests(tokens(f.read_text(encoding='utf-8')))
        self.file[mp], self.used[mp], refs, leaves, children, given = f, set(), [], [], {}, None
        self.defs[mp] = {ts[k + 1] for k in range(1, len(ts) - 1) if ts[k] in ITEMS or ts[k - 1:k + 1] == ['macro_rules', '!']}
        base = f.parent if f.name in ('lib.rs', 'main.rs', 'mod.rs') else f.parent / f.stem
        k = 0
        while k < len(ts):
            t, fresh = ts[k], k == 0 or ts[k - 1] != '::'
            if ts[k:k + 4] == ['#', '[', 'path', '='] and isinstance(ts[k + 4], tuple): given = ts[k + 4][1]
            elif t == 'mod' and ts[k + 2:k + 3] == [';']:
                p = f.parent / given if given else base / f'{ts[k + 1]}.rs'
                children[ts[k + 1]] = p if p.exists() else base / ts[k + 1] / 'mod.rs'
            elif t == 'use' and fresh:
                k = use_tree(ts, k + 1, [], leaves); continue
            elif t == 'pub' and ts[k + 1:k + 3] == ['(', 'in']:
                k = close(ts, k + 1); continue
            elif fresh and isinstance(t, str) and WORD.match(t) and ts[k + 1:k + 2] == ['::']:
                path = [t]
                while ts[k + 1:k + 2] == ['::'] and isinstance(ts[k + 2], str) and WORD.match(ts[k + 2]):
                    path.append(ts[k + 2]); k += 2
                refs.append(path)
            if t in (';', '{', '}'): given = None
            self.used[mp].add(t); k += 1
        imports = self.imports[mp] = {}
        for name, path in leaves:  # None: an item of another crate
            imports.setdefault(name, []).append(self.absolute(mp, path, children, {}))
        self.refs[mp] = [p for p in (self.absolute(mp, r, children, imports) for r in refs) if p]
        for name, p in children.items():
            if p.exists(): self.load(p, mp + (name,))

    def absolute(self, mp, path, children, imports):
        """The path from the crate root, or None if it starts outside this crate."""
        head, n = path[0], 0
        while n < len(path) and path[n] == 'super': n += 1
        if n: return list(mp[:len(mp) - n]) + path[n:]
        if head == 'crate': return path[1:]
        if head == 'self': return list(mp) + path[1:]
        if head in children: return list(mp) + path
        if imports.get(head, [None])[0] is not None: return imports[head][0] + path[1:]
        return None

    def resolve(self, path, seen=()):
        """(module that defines the item, its name) for a path from the root; None for a module."""
        n = max(k for k in range(len(path) + 1) if tuple(path[:k]) in self.file)
        mp, rest = tuple(path[:n]), path[n:]
        if not rest or (mp, rest[0]) in seen or rest[0] in self.defs[mp]: return rest and (mp, rest[0]) or None
        for target in self.imports[mp].get(rest[0], []):
            return target and self.resolve(target + rest[1:], seen + ((mp, rest[0]),))
        for glob in filter(None, self.imports[mp].get('*', [])):
            if rest[0] in self.defs.get(tuple(glob), ()) or rest[0] in self.imports.get(tuple(glob), {}):
                return self.resolve(glob + rest, seen + ((mp, rest[0]),))
        return mp, rest[0]

    def edges(self):
        out = {}
        for mp in self.file:
            used = [p for name, ps in self.imports[mp].items() if name in self.used[mp] for p in ps if p]
            for hit in filter(None, map(self.resolve, self.refs[mp] + used)):
                if hit[0] != mp[:len(hit[0])]:  # neither itself nor an ancestor
                    out.setdefault((self.file[mp], self.file[hit[0]]), set()).add(hit[1])
        return out

def cycles(edges):
    """Sets of more than one file that all reach each other."""
    graph = {}
    for a, b in edges: graph.setdefault(a, set()).add(b)
    reach = {}
    for v in graph:
        seen, todo = set(), [v]
        while todo:
            for w in graph.get(todo.pop(), ()):
                if w not in seen: seen.add(w); todo.append(w)
        reach[v] = seen
    groups = {tuple(sorted(w for w in reach if w in reach[v] and v in reach[w])) for v in reach}
    return sorted(g for g in groups if len(g) > 1)

def main():
    ws = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent)
    crates, report = sorted(p for p in (ws / 'crates').iterdir() if (p / 'Cargo.toml').exists()), []
    for crate in crates:
        for root in [crate / 'src/lib.rs', crate / 'src/main.rs', *sorted(crate.glob('examples/*/main.rs'))]:
            edges = Tree(root).edges() if root.exists() else {}
            for group in cycles(edges):
                report.append('module cycle: ' + ', '.join(str(f.relative_to(ws)) for f in group))
                report += [f'  {a.relative_to(ws)} -> {b.relative_to(ws)}: {", ".join(sorted(names))}'
                           for (a, b), names in sorted(edges.items()) if a in group and b in group]
    if report:
        sys.exit('\n'.join(report + ['break each cycle by moving the shared item down (STYLE.md)']))
    print(f'no module cycles in {len(crates)} crates')

if __name__ == '__main__':
    main()
