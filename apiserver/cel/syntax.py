"""A CEL syntax tree for what the evaluator does not tell: costs, bound names, result kinds.

Evaluation is the ``cel`` library's (``common-expression-language``, see ``program``); it gives no syntax tree and
no cost accounting, which Kubernetes needs (a static cost estimate when a rule is compiled, a runtime cost limit
when it runs). This module parses CEL's grammar (the cel-spec's, less the optional syntax the evaluator lacks)
into ``Node``s carrying their source spans, so ``cost`` can estimate and instrument an expression. It never
evaluates anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
_TOKEN = re.compile(r"""
    (?P<ws>\s+|//[^\n]*)
  | (?P<string>[rRbB]{0,2}(?:'''(?:[^\\]|\\.)*?'''|\"\"\"(?:[^\\]|\\.)*?\"\"\"|'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"))
  | (?P<number>0[xX][0-9a-fA-F]+[uU]?|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[uU]?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>\|\||&&|==|!=|<=|>=|\.\?|\[\?|[-+*/%!<>?:.,()\[\]{}])
""", re.VERBOSE | re.DOTALL)
_BINARY = {"||": 1, "&&": 2, "==": 3, "!=": 3, "<": 3, "<=": 3, ">": 3, ">=": 3, "in": 3,
           "+": 4, "-": 4, "*": 5, "/": 5, "%": 5}


class SyntaxProblem(ValueError):
    """Not CEL: the message is in cel-go's ``ERROR: <input>:line:col: …`` form."""


@dataclass(slots=True)
class Node:
    """``kind``: literal, ident, select, call, index, list, map, ternary, binary, unary, comprehension.
    ``name``: the identifier, field, function or operator; ``target``: a member call's or select's receiver;
    ``var``: a comprehension's bound variable; ``value``: a literal's kind (string, int, uint, double, bool,
    null, bytes), or ``?`` for an optional selection (``a.?b``) or index (``a[?k]``)."""

    kind: str
    start: int
    end: int
    name: str = ""
    args: list[Node] = field(default_factory=list)
    target: Node | None = None
    var: str = ""
    value: str = ""


@dataclass(slots=True)
class _Token:
    kind: str
    text: str
    start: int
    end: int


def _position(source: str, offset: int) -> str:
    line = source.count("\n", 0, offset) + 1
    column = offset - (source.rfind("\n", 0, offset) + 1)
    return f"<input>:{line}:{column + 1}"


def _tokens(source: str) -> list[_Token]:
    out: list[_Token] = []
    pos = 0
    while pos < len(source):
        match = _TOKEN.match(source, pos)
        if match is None:
            raise SyntaxProblem(f"ERROR: {_position(source, pos)}: Syntax error: token recognition error at: "
                                f"'{source[pos]}'")
        kind = match.lastgroup or ""
        if kind != "ws":
            out.append(_Token(kind, match.group(), pos, match.end()))
        pos = match.end()
    out.append(_Token("eof", "", len(source), len(source)))
    return out


class _Parser:
    def __init__(self, source: str) -> None:
        self.source = source
        self.tokens = _tokens(source)
        self.i = 0

    def peek(self, text: str | None = None) -> bool:
        token = self.tokens[self.i]
        return token.kind != "eof" if text is None else token.text == text and token.kind in ("op", "ident")

    def next(self) -> _Token:
        token = self.tokens[self.i]
        self.i += 1
        return token

    def expect(self, text: str) -> _Token:
        token = self.next()
        if token.text != text:
            found = token.text or "<EOF>"
            raise SyntaxProblem(f"ERROR: {_position(self.source, token.start)}: Syntax error: mismatched input "
                                f"'{found}' expecting '{text}'")
        return token

    def expression(self) -> Node:
        condition = self.binary(1)
        if self.peek("?"):
            self.next()
            then = self.binary(1)
            self.expect(":")
            otherwise = self.expression()
            return Node("ternary", condition.start, otherwise.end, "?:", [condition, then, otherwise])
        return condition

    def binary(self, level: int) -> Node:
        left = self.unary()
        while True:
            token = self.tokens[self.i]
            precedence = _BINARY.get(token.text) if token.kind in ("op", "ident") else None
            if precedence is None or precedence < level:
                return left
            self.next()
            right = self.binary(precedence + 1)
            left = Node("binary", left.start, right.end, token.text, [left, right])

    def unary(self) -> Node:
        token = self.tokens[self.i]
        if token.kind == "op" and token.text in ("!", "-"):
            self.next()
            operand = self.unary()
            return Node("unary", token.start, operand.end, token.text, [operand])
        return self.member(self.primary())

    def arguments(self, close: str) -> list[Node]:
        args: list[Node] = []
        while not self.peek(close):
            args.append(self.expression())
            if not self.peek(","):
                break
            self.next()
        return args

    def member(self, node: Node) -> Node:
        while True:
            if self.peek(".") or self.peek(".?"):
                optional = self.next().text == ".?"
                name = self.next()
                if name.kind != "ident":
                    raise SyntaxProblem(f"ERROR: {_position(self.source, name.start)}: Syntax error: no viable "
                                        f"alternative at input '.{name.text}'")
                if self.peek("(") and not optional:
                    self.next()
                    args = self.arguments(")")
                    end = self.expect(")").end
                    if name.text in MACROS and len(args) == 2 and args[0].kind == "ident":
                        node = Node("comprehension", node.start, end, name.text, [args[1]], node, args[0].name)
                    else:
                        node = Node("call", node.start, end, name.text, args, node)
                else:
                    node = Node("select", node.start, name.end, name.text, [], node, value="?" if optional else "")
            elif self.peek("[") or self.peek("[?"):
                optional = self.next().text == "[?"
                index = self.expression()
                end = self.expect("]").end
                node = Node("index", node.start, end, "[]", [node, index], value="?" if optional else "")
            else:
                return node

    def primary(self) -> Node:
        token = self.next()
        if token.kind == "number":
            text = token.text.lower()
            kind = "uint" if text.endswith("u") else "double" if ("." in text or "e" in text) and \
                not text.startswith("0x") else "int"
            return Node("literal", token.start, token.end, token.text, value=kind)
        if token.kind == "string":
            letters = (re.match(r"[rRbB]*", token.text) or re.match("", "")).group().lower()  # type: ignore[union-attr]
            return Node("literal", token.start, token.end, token.text, value="bytes" if "b" in letters else "string")
        if token.kind == "ident":
            if token.text in ("true", "false"):
                return Node("literal", token.start, token.end, token.text, value="bool")
            if token.text == "null":
                return Node("literal", token.start, token.end, token.text, value="null")
            if self.peek("("):
                self.next()
                args = self.arguments(")")
                end = self.expect(")").end
                return Node("call", token.start, end, token.text, args)
            return Node("ident", token.start, token.end, token.text)
        if token.text == "(":
            inner = self.expression()
            self.expect(")")
            return inner
        if token.text == "[":
            items = self.arguments("]")
            if self.peek(","):
                self.next()
            end = self.expect("]").end
            return Node("list", token.start, end, "[]", items)
        if token.text == "{":
            entries: list[Node] = []
            while not self.peek("}"):
                key = self.expression()
                self.expect(":")
                entries += [key, self.expression()]
                if not self.peek(","):
                    break
                self.next()
            end = self.expect("}").end
            return Node("map", token.start, end, "{}", entries)
        if token.text == ".":
            return self.primary()
        found = token.text or "<EOF>"
        raise SyntaxProblem(f"ERROR: {_position(self.source, token.start)}: Syntax error: mismatched input "
                            f"'{found}' expecting {{'[', '{{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, "
                            f"NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}}")


def parse(source: str) -> Node:
    """The syntax tree of ``source``; ``SyntaxProblem`` when it is not CEL."""
    parser = _Parser(source)
    node = parser.expression()
    if parser.peek():
        token = parser.tokens[parser.i]
        raise SyntaxProblem(f"ERROR: {_position(source, token.start)}: Syntax error: extraneous input "
                            f"'{token.text}' expecting <EOF>")
    return node


def walk(node: Node) -> list[Node]:
    """Every node, parents first."""
    out = [node]
    if node.target is not None:
        out.extend(walk(node.target))
    for arg in node.args:
        out.extend(walk(arg))
    return out


def free_identifiers(node: Node) -> list[Node]:
    """Identifiers that are not bound by an enclosing comprehension."""
    out: list[Node] = []

    def visit(n: Node, bound: frozenset[str]) -> None:
        if n.kind == "ident" and n.name not in bound:
            out.append(n)
        if n.target is not None:
            visit(n.target, bound)
        inner = bound | {n.var} if n.kind == "comprehension" else bound
        for arg in n.args:
            visit(arg, inner)

    visit(node, frozenset())
    return out
