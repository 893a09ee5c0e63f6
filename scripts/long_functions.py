#!/usr/bin/env python3
# Lists the functions of a source tree longer than a limit (design.md: functions under ~120 lines, data
# tables aside): `scripts/long_functions.py [LIMIT] [FOLDER]` (default 120, src). Braces are matched with
# comments, literals and preprocessor lines blanked; a block is a function when its header (the text since
# the last ';', '{' or '}') has a parameter list, is no control statement, lambda or initializer, and only
# namespaces and classes enclose it. Prints "lines file:line header", longest first.
import os
import re
import sys


def blank(text):
    return re.sub(r'[^\n]', ' ', text)


def strip_code(src):
    src = re.sub(r'(?m)^[ \t]*#(?:.*\\\n)*.*$', lambda m: blank(m.group(0)), src)
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith('//', i):
            j = src.find('\n', i)
            j = n if j < 0 else j
        elif src.startswith('/*', i):
            j = src.find('*/', i + 2)
            j = n if j < 0 else j + 2
        elif src.startswith('R"', i) and (m := re.match(r'R"([^(]*)\(', src[i:])):
            end = ')' + m.group(1) + '"'
            j = src.find(end, i)
            j = n if j < 0 else j + len(end)
        elif c in '"\'' and not (c == "'" and i > 0 and src[i - 1].isdigit()):  # 1'000 is no literal
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == '\\' else 1
            j += 1
        else:
            out.append(c)
            i += 1
            continue
        out.append(blank(src[i:j]))
        i = j
    return ''.join(out)


CONTROL = re.compile(r'\b(if|for|while|switch|catch|do|else|return)\b\s*(\(|$)')
SCOPE = re.compile(r'\b(namespace|class|struct|union|enum)\b')


def long_functions(path, limit):
    text = strip_code(open(path, errors='replace').read())
    stack, last = [], 0  # (kind, line, header)
    for i, c in enumerate(text):
        if c not in ';{}':
            continue
        if c == '{':
            head = ' '.join(text[last:i].split())
            if (SCOPE.search(head) and '(' not in head.split(':')[0]) or head.startswith('extern'):
                kind = 'scope'
            elif (')' in head and not CONTROL.search(head) and not re.search(r'\]\s*\(', head.split('(')[0] + '(')
                  and not re.match(r'.*=\s*\[', head) and all(k == 'scope' for k, _, _ in stack)):
                kind = 'function'
            else:
                kind = 'block'
            stack.append((kind, text.count('\n', 0, i) + 1, head))
        elif c == '}' and stack:
            kind, line, head = stack.pop()
            lines = text.count('\n', 0, i) + 2 - line
            if kind == 'function' and lines > limit:
                yield lines, f'{path}:{line}', head[-100:]
        last = i + 1


def main():
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else 120
    root = sys.argv[2] if len(sys.argv) > 2 else 'src'
    found = []
    for folder, _, files in os.walk(root):
        for f in sorted(files):
            if f.endswith(('.cpp', '.cc', '.h', '.cu', '.cuh')):
                found.extend(long_functions(os.path.join(folder, f), limit))
    for lines, where, head in sorted(found, reverse=True):
        print(f'{lines:5d} {where} {head}')


if __name__ == '__main__':
    main()
